"""Protocol cliffs (seeds/003): throughput that falls from one size to the next larger one.

Throughput normally rises with size towards the bandwidth; when a protocol switches (eager to
rendezvous, copy to zero-copy, a new algorithm) it can fall instead. A fall counts as a cliff when
it is larger than the noise allows: the given noise, else the two sizes' bands (the sum of their
relative half-widths, at least MIN_NOISE: the intervals would no longer overlap), else
DEFAULT_NOISE.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._curves import DEFAULT_NOISE, MIN_NOISE, Curve, check_noise, throughput_mb_s


@dataclass(frozen=True)
class Cliff:
    """Throughput falls from size before_bytes to the next measured size after_bytes."""

    before_bytes: int
    after_bytes: int
    throughput_before_mb_s: float
    throughput_after_mb_s: float
    drop: float  # fraction of the throughput lost, e.g. 0.35
    noise: float  # the relative noise it was judged against
    t_before_us: float = 0.0
    t_after_us: float = 0.0


def find_cliffs(curve: Curve, collective: str, nprocs: int,
                noise: float | None = None) -> list[Cliff]:
    """Every pair of neighbouring sizes whose throughput falls by more than the noise."""
    if noise is not None:
        noise = check_noise(noise)
    throughput = throughput_mb_s(curve, collective, nprocs)
    measured = [i for i, value in enumerate(throughput) if value is not None]
    cliffs = []
    for a, b in zip(measured, measured[1:]):
        before, after = throughput[a], throughput[b]
        assert before is not None and after is not None
        drop = 1.0 - after / before
        allowed = noise if noise is not None else _pair_noise(curve, a, b)
        if drop > allowed:
            cliffs.append(Cliff(curve.sizes[a], curve.sizes[b], before, after, drop, allowed,
                                curve.t_us[a], curve.t_us[b]))
    return cliffs


def _pair_noise(curve: Curve, a: int, b: int) -> float:
    widths = (curve.half_width(a), curve.half_width(b))
    if widths[0] is None or widths[1] is None:
        return DEFAULT_NOISE
    return max(widths[0] + widths[1], MIN_NOISE)
