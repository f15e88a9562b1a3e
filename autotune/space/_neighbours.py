"""Configurations one knob away from another: what a person tuning by hand tries first, and what
screening measures (strategy._screen) and the agreement benchmark compares."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._model import Parameter


def values_of(p: Parameter) -> list[Any]:
    """Every value a parameter can take (an integer range written out)."""
    if p.type == "int" and p.low is not None and p.high is not None:
        return list(range(p.low, p.high + 1, p.step))
    return list(p.choices)


def completed(params: Sequence[Parameter], point: Mapping[str, Any]) -> dict[str, Any]:
    """`point` as the conditional walk asks it: inactive knobs left out, knobs it switches on at
    their defaults."""
    out: dict[str, Any] = {}
    for p in params:
        if p.active(out):
            out[p.name] = point.get(p.name, p.default)
    return out


def one_knob_changes(params: Sequence[Parameter], base: Mapping[str, Any],
                     only: set[str] | None = None) -> list[dict[str, Any]]:
    """`base` with one knob (active in `base`; one of `only` if given) set to each of its other
    values, in the order of `params`; context parameters (NPS) are never changed."""
    points: list[dict[str, Any]] = []
    seen = {_key(base)}
    for p in params:
        if p.apply == "context" or p.name not in base or (only is not None and p.name not in only):
            continue
        for value in values_of(p):
            if str(value) == str(base[p.name]):
                continue
            point = completed(params, {**base, p.name: value})
            if _key(point) not in seen:
                seen.add(_key(point))
                points.append(point)
    return points


def _key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))
