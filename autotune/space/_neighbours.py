"""Configurations one knob away from another: what a person tuning by hand tries first, and what
screening measures (strategy._screen) and the agreement benchmark compares."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


def spread_values(p: Parameter, most: int = 8) -> list[Any]:
    """At most `most` values of a parameter spread over its range: an integer range's ends and
    points between them (geometric when it spans more than a decade), every choice otherwise.
    What screening tries of a knob, where trying each of 100,000 thresholds would be absurd."""
    values = values_of(p)
    if p.type != "int" or p.low is None or p.high is None or len(values) <= most:
        return values
    low, high = values[0], values[-1]
    if low > 0 and high / low > 10:
        raw = [low * (high / low) ** (i / (most - 1)) for i in range(most)]
    else:
        raw = [low + (high - low) * i / (most - 1) for i in range(most)]
    step = p.step or 1
    picked = sorted({min(high, max(low, low + round((r - low) / step) * step)) for r in raw})
    return [p.default] + [v for v in picked if v != p.default] if p.default in values else picked


def one_knob_changes(params: Sequence[Parameter], base: Mapping[str, Any],
                     only: set[str] | None = None,
                     values: Callable[[Parameter], list[Any]] = values_of) -> list[dict[str, Any]]:
    """`base` with one knob (active in `base`; one of `only` if given) set to each of its other
    `values` (all by default), in the order of `params`; context parameters (NPS) are never
    changed."""
    points: list[dict[str, Any]] = []
    seen = {_key(base)}
    for p in params:
        if p.apply == "context" or p.name not in base or (only is not None and p.name not in only):
            continue
        for value in values(p):
            if str(value) == str(base[p.name]):
                continue
            point = completed(params, {**base, p.name: value})
            if _key(point) not in seen:
                seen.add(_key(point))
                points.append(point)
    return points


def knob_defaults(params: Sequence[Parameter]) -> dict[str, Any]:
    """Each knob's value when it is not set (the MPI's own default); context parameters (NPS),
    which the allocation sets, are left out."""
    return {p.name: p.default for p in params if p.apply != "context"}


def knobs_changed(point: Mapping[str, Any], defaults: Mapping[str, Any]) -> int:
    """How many knobs `point` sets away from their defaults: plain `pml=ucx` changes one (its
    UCX knobs stay at UCX's own defaults); context parameters are never counted."""
    return len(changed_knobs(point, defaults))


def changed_knobs(point: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, str]:
    """The knobs `point` sets away from their defaults, with the values it sets (as text)."""
    return {k: str(v) for k, v in point.items() if k in defaults and str(v) != str(defaults[k])}


def _key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))
