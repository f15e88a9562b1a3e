"""Checked conversions of stored JSON values: right type or one StorageError naming the place.

A study may come from an older version, another machine or a hand edit of a shared database:
readers never let a KeyError/TypeError/ValueError escape from what they find there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import StorageError

T = TypeVar("T")


def garbled(where: str, expected: str, value: Any) -> StorageError:
    shown = repr(value)
    shown = "".join(c if c.isprintable() else "?" for c in shown)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return StorageError(f"{where} is not {expected} (found {type(value).__name__} {shown}); "
                        "the study was written by another version or edited by hand")


class Attrs:
    """A stored attribute mapping read key by key: missing or null -> the default."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        self.data = data
        self.where = where

    def get(self, key: str, convert: Callable[[Any, str], T], default: T) -> T:
        value = self.data.get(key)
        if value is None:
            return default
        return convert(value, f"{self.where}: stored attribute {key!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if _is_number(value) and value in (0, 1):
        return bool(value)
    raise garbled(where, "true or false", value)


def as_int(value: Any, where: str) -> int:
    if _is_number(value) and (isinstance(value, int) or float(value).is_integer()):
        return int(value)
    raise garbled(where, "an integer", value)


def as_opt_int(value: Any, where: str) -> int | None:
    return None if value is None else as_int(value, where)


def as_float(value: Any, where: str) -> float:
    if _is_number(value):
        return float(value)
    raise garbled(where, "a number", value)


def as_opt_float(value: Any, where: str) -> float | None:
    return None if value is None else as_float(value, where)


def as_str(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    raise garbled(where, "a string", value)


def as_mapping(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    raise garbled(where, "a mapping", value)


def as_list(value: Any, where: str) -> list[Any]:
    """A JSON list; a tuple too, as an in-memory storage keeps what was set without JSON."""
    if isinstance(value, (list, tuple)):
        return list(value)
    raise garbled(where, "a list", value)


def as_str_tuple(value: Any, where: str) -> tuple[str, ...]:
    items = as_list(value, where)
    if all(isinstance(item, str) for item in items):
        return tuple(items)
    raise garbled(where, "a list of strings", value)


def as_int_tuple(value: Any, where: str) -> tuple[int, ...]:
    return tuple(as_int(item, where) for item in as_list(value, where))


def str_dict(value: Any, where: str) -> dict[str, str]:
    """{name: value} of settings; numbers are taken as their text, anything else is refused."""
    if value is None:
        return {}
    out = {}
    for name, item in as_mapping(value, where).items():
        if isinstance(item, str):
            out[str(name)] = item
        elif _is_number(item):
            out[str(name)] = str(item)
        else:
            raise garbled(f"{where}[{name!r}]", "a string", item)
    return out


def size_key(key: Any, where: str) -> int:
    """A message size stored as a JSON object key ("1024")."""
    try:
        size = int(key)
    except (TypeError, ValueError):
        raise garbled(where, "keyed by message size in bytes", key) from None
    if size < 0:
        raise garbled(where, "keyed by message size in bytes", key)
    return size


def dict_of_lists(value: Any, where: str) -> dict[int, list[float]]:
    """{"size": [t_us, ...]} -> {size: [t_us, ...]}, sorted by size."""
    out: dict[int, list[float]] = {}
    for key, items in as_mapping(value, where).items():
        inner = f"{where}[{key!r}]"
        out[size_key(key, where)] = [as_float(v, inner) for v in as_list(items, inner)]
    return dict(sorted(out.items()))


def dict_of_floats(value: Any, where: str) -> dict[int, float]:
    """{"size": number} -> {size: number}, sorted by size."""
    out = {size_key(key, where): as_float(item, f"{where}[{key!r}]")
           for key, item in as_mapping(value, where).items()}
    return dict(sorted(out.items()))
