"""Latency and throughput curves of the configurations a report compares, with the confidence
band of each mean over the repeated launches (launches, not calls, are the unit of noise here:
a launch's latency level holds for the whole launch)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..analysis import Cliff, Curve, find_cliffs, throughput_mb_s
from ..stats import mean_interval
from ..storage import BaselineLaunch, TrialRecord

CONFIDENCE = 0.95
# knobs whose value says which protocol a message size runs under (shown beside a cliff)
PROTOCOL_KNOBS = ("pml", "UCX_TLS", "UCX_RNDV_THRESH", "UCX_ZCOPY_THRESH")


@dataclass(frozen=True)
class ConfigCurve:
    """One configuration's time per size (geometric mean over its launches), band = 95% CI."""

    role: str  # "default" | "best" | "candidate"
    trial: int | None  # None for the default's interleaved launches
    label: str
    curve: Curve
    launches: tuple[int, ...]  # launches behind each size's mean
    throughput: tuple[float | None, ...]  # MB/s of effective bytes
    throughput_low: tuple[float | None, ...]
    throughput_high: tuple[float | None, ...]
    knobs: tuple[tuple[str, str], ...]  # protocol knobs in force (PROTOCOL_KNOBS + algorithms)


@dataclass(frozen=True)
class CliffRow:
    """A protocol cliff of one configuration, with the knob values in force there."""

    label: str
    role: str
    cliff: Cliff
    knobs: tuple[tuple[str, str], ...]


def launches_by_size(raw: Mapping[int, Sequence[float]]) -> dict[int, list[float]]:
    return {int(s): [float(v) for v in values if v > 0] for s, values in raw.items()}


def baseline_launches(baselines: Sequence[BaselineLaunch]) -> dict[int, list[float]]:
    """Every default launch's time per size (interleaved with the trials: many launches)."""
    out: dict[int, list[float]] = {}
    for launch in baselines:
        for size, t in launch.t_max_us.items():
            if t > 0:
                out.setdefault(int(size), []).append(float(t))
    return out


def make_curve(label: str, by_size: Mapping[int, Sequence[float]]) -> tuple[Curve, tuple[int, ...]]:
    """Geometric mean per size with the Student-t band of the mean log time: launch-to-launch
    noise is multiplicative here (latency levels), so the band is never below zero and one slow
    launch does not drag the curve; one launch gives no band (low = high = the time)."""
    sizes = tuple(sorted(s for s, v in by_size.items() if v))
    means, lows, highs, counts = [], [], [], []
    for size in sizes:
        interval = mean_interval([math.log(t) for t in by_size[size]], CONFIDENCE)
        means.append(math.exp(interval.mean))
        if interval.n < 2:
            lows.append(means[-1])
            highs.append(means[-1])
        else:
            lows.append(math.exp(interval.low))
            highs.append(math.exp(interval.high))
        counts.append(interval.n)
    return (Curve(label, sizes, tuple(means), tuple(lows), tuple(highs)), tuple(counts))


def protocol_knobs(record: TrialRecord | None,
                   pml_in_force: str = "") -> tuple[tuple[str, str], ...]:
    """The protocol knob values a configuration ran with (`unset`: the MPI's own). A UCX
    threshold under pml ob1 means nothing, and says so; `pml_in_force` is what unset selects."""
    env = dict(record.settings.env) if record else {}
    mca = dict(record.settings.mca) if record else {}
    pml = mca.get("pml") or str((record.params if record else {}).get("pml", "unset"))
    effective = pml_in_force if pml == "unset" and pml_in_force else pml
    out = [("pml", f"unset ({pml_in_force})" if pml == "unset" and pml_in_force else pml)]
    for name in PROTOCOL_KNOBS[1:]:
        value = env.get(name, "unset")
        out.append((name, f"{value} (unused: pml ob1)" if effective == "ob1" else value))
    out += sorted((k, v) for k, v in mca.items()
                  if k.endswith("_algorithm") or k.endswith("_segmentsize"))
    return tuple(out)


def config_curve(role: str, trial: int | None, label: str, by_size: Mapping[int, Sequence[float]],
                 collective: str, nprocs: int, knobs: tuple[tuple[str, str], ...]) -> ConfigCurve:
    curve, counts = make_curve(label, by_size)
    slow = Curve(label, curve.sizes, curve.high_us or curve.t_us)
    fast = Curve(label, curve.sizes, curve.low_us or curve.t_us)
    return ConfigCurve(role=role, trial=trial, label=label, curve=curve, launches=counts,
                       throughput=throughput_mb_s(curve, collective, nprocs),
                       throughput_low=throughput_mb_s(slow, collective, nprocs),
                       throughput_high=throughput_mb_s(fast, collective, nprocs),
                       knobs=knobs)


def cliffs_of(curves: Sequence[ConfigCurve], collective: str, nprocs: int) -> tuple[CliffRow, ...]:
    """Throughput drops between neighbouring sizes larger than each curve's own noise."""
    rows = []
    for cc in curves:
        for cliff in find_cliffs(cc.curve, collective, nprocs):
            rows.append(CliffRow(label=cc.label, role=cc.role, cliff=cliff, knobs=cc.knobs))
    return tuple(rows)
