"""Latency-vs-size curves and the bytes a collective moves (seeds/001's throughput model).

Throughput is effective bytes / time: the bytes the collective really moves per message size M,
so that an allreduce (a reduce plus a broadcast: 2M) and an allgather (every rank's block: M*np)
are compared with the link bandwidth on the same footing (seeds/001, sections 4.2.4 and 4.2.5).
"""

from __future__ import annotations

import math
import operator
import statistics
from dataclasses import dataclass

from ..errors import InputError

DEFAULT_NOISE = 0.05  # relative noise assumed when a curve carries no confidence band
MIN_NOISE = 0.01  # a band narrower than this (one repetition, rounded output) is not trusted

# collective -> (factor, times np): effective bytes = factor * M * (np if times np else 1).
# allreduce 2M and allgather M*np are seeds/001's; the others follow the same reasoning:
#   alltoall, gather, scatter (and the v-variants): one M block per rank, M*np in all;
#   bcast, reduce, reduce_scatter, scan, exscan: the message once, M;
#   pingpong, pingping: M; sendrecv 2M and exchange 4M, as IMB's own Mbytes/sec count them;
#   barrier: no payload (throughput undefined).
# Non-blocking variants (iallreduce, ...) and IMB-NBC's "_pure" tables move what the blocking
# collective moves.
_VOLUME: dict[str, tuple[int, bool]] = {
    "allreduce": (2, False),
    "allgather": (1, True), "allgatherv": (1, True),
    "alltoall": (1, True), "alltoallv": (1, True),
    "gather": (1, True), "gatherv": (1, True), "scatter": (1, True), "scatterv": (1, True),
    "bcast": (1, False), "reduce": (1, False), "reduce_scatter": (1, False),
    "reduce_scatter_block": (1, False), "scan": (1, False), "exscan": (1, False),
    "pingpong": (1, False), "pingping": (1, False), "sendrecv": (2, False),
    "exchange": (4, False), "barrier": (0, False),
}
COLLECTIVE_NAMES = tuple(sorted(_VOLUME))


@dataclass(frozen=True)
class Curve:
    """One latency-vs-size curve: sizes in bytes (ascending, 0 allowed), central time in
    microseconds, and optionally a confidence band (low/high per size) that sets the noise."""

    label: str
    sizes: tuple[int, ...]
    t_us: tuple[float, ...]
    low_us: tuple[float, ...] | None = None
    high_us: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        self._normalise()
        n = len(self.sizes)
        if len(self.t_us) != n:
            raise InputError(f"curve {self.label}: {n} sizes but {len(self.t_us)} times")
        if any(s < 0 for s in self.sizes):
            raise InputError(f"curve {self.label}: sizes must be integers >= 0")
        if any(b <= a for a, b in zip(self.sizes, self.sizes[1:])):
            raise InputError(f"curve {self.label}: sizes must be strictly ascending")
        for name in ("t_us", "low_us", "high_us"):
            values = getattr(self, name)
            if values is None:
                continue
            if len(values) != n:
                raise InputError(f"curve {self.label}: {name} has {len(values)} values for "
                                 f"{n} sizes")
            if any(not math.isfinite(v) or v < 0 for v in values):
                raise InputError(f"curve {self.label}: {name} must be finite and >= 0")
        if (self.low_us is None) != (self.high_us is None):
            raise InputError(f"curve {self.label}: a band needs both low_us and high_us")

    def _normalise(self) -> None:
        """Lists and numpy/pandas values become tuples of int and float (hashable, exact)."""
        try:
            sizes = tuple(operator.index(s) for s in self.sizes)
        except TypeError:
            raise InputError(f"curve {self.label}: sizes must be integers >= 0") from None
        object.__setattr__(self, "sizes", sizes)
        for name in ("t_us", "low_us", "high_us"):
            values = getattr(self, name)
            if values is not None:
                try:
                    object.__setattr__(self, name, tuple(float(v) for v in values))
                except (TypeError, ValueError):
                    raise InputError(f"curve {self.label}: {name} must be numbers") from None

    @property
    def has_band(self) -> bool:
        return self.low_us is not None and self.high_us is not None

    def half_width(self, i: int) -> float | None:
        """Relative half-width of the band at size index i (None without a band or at t = 0)."""
        if self.low_us is None or self.high_us is None or self.t_us[i] <= 0:
            return None
        return abs(self.high_us[i] - self.low_us[i]) / (2.0 * self.t_us[i])


def collective_name(name: str) -> str | None:
    """The volume-model name for a collective or IMB benchmark name (Iallreduce, Allreduce_pure,
    allreduce all give allreduce); None when no model is known."""
    key = name.strip().lower().replace("-", "_")
    key = key.removesuffix("_pure")
    if key in _VOLUME:
        return key
    if key.startswith("i") and key[1:] in _VOLUME:
        return key[1:]
    return None


def volume_formula(collective: str) -> str:
    """"2M", "M*np", ... as used in table headings."""
    factor, per_rank = _volume(collective)
    if factor == 0:
        return "0"
    text = "M" if factor == 1 else f"{factor}M"
    return f"{text}*np" if per_rank else text


def _volume(collective: str) -> tuple[int, bool]:
    key = collective_name(collective)
    if key is None:
        raise InputError(f"no effective-bytes model for collective {collective!r} (known: "
                         f"{', '.join(COLLECTIVE_NAMES)})")
    return _VOLUME[key]


def effective_bytes(collective: str, nbytes: int, nprocs: int) -> float:
    """Bytes the collective moves for message size nbytes on nprocs ranks (see _VOLUME)."""
    if nprocs < 1:
        raise InputError(f"{nprocs} processes: at least 1 needed")
    factor, per_rank = _volume(collective)
    return float(factor * nbytes * (nprocs if per_rank else 1))


def throughput_mb_s(curve: Curve, collective: str, nprocs: int) -> tuple[float | None, ...]:
    """Effective bytes / time in MB/s (1e6 B/s: bytes per microsecond); None where the size or
    the time is 0 (no throughput to speak of)."""
    out: list[float | None] = []
    for size, t in zip(curve.sizes, curve.t_us):
        volume = effective_bytes(collective, size, nprocs)
        out.append(volume / t if size > 0 and t > 0 and volume > 0 else None)
    return tuple(out)


def curve_noise(curve: Curve, noise: float | None = None) -> float:
    """The relative noise a curve is judged against: the given value, else the median relative
    half-width of its band (at least MIN_NOISE), else DEFAULT_NOISE."""
    if noise is not None:
        return check_noise(noise)
    widths = [w for i in range(len(curve.sizes)) if (w := curve.half_width(i)) is not None]
    return max(statistics.median(widths), MIN_NOISE) if widths else DEFAULT_NOISE


def check_noise(noise: float) -> float:
    if not (isinstance(noise, (int, float)) and math.isfinite(noise) and 0 < noise < 1):
        raise InputError(f"noise {noise!r}: expected a fraction between 0 and 1, such as 0.05")
    return float(noise)
