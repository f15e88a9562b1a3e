"""What a benchmark is: argv that times one collective over some sizes under a launcher, and a
parser that turns its output into per-size timings (t_max over ranks: a collective is as slow as
its slowest rank). The measurer knows no benchmark; a benchmark knows no launcher and no Optuna.

Non-blocking collectives (iallreduce, ...) are timed the IMB-NBC way (seeds/004): t_pure (the
collective alone: start + wait), t_CPU (a calibrated CPU load, about t_pure long) and t_ovrl
(start, the CPU load, wait), and the overlap they give (`overlap_pct`, IMB's formula).

Kept free of mpi4py imports: importing mpi4py.MPI would initialize MPI in the controller.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import math

from ..collectives import NbcTiming, SizeTiming
from ..errors import BenchmarkOutputError, LaunchFailure
from ._fidelity import Disagreement

WRONG_RESULT = "wrong-result"


class WrongResult(LaunchFailure):
    """The benchmark checked the collective's result and it was wrong: the configuration is
    broken however fast it is (never proposed again, never exported)."""

    def __init__(self, detail: str, stderr_tail: str = "") -> None:
        super().__init__(WRONG_RESULT, detail, stderr_tail)


@dataclass(frozen=True)
class BenchmarkRequest:
    """What one launch measures."""

    collective: str
    sizes: tuple[int, ...]
    ranks: int
    time_per_size: float  # seconds of timed loop per size
    seed: int  # size order, where the benchmark can shuffle


# What a per-call time of a real collective can be (us): at least 0.1 ns, at most 1000 s; a
# repetition count of at most 1e12; t_min <= t_avg <= t_max up to a rounding slack. Outside
# these a number is damaged output, not a measurement (issue 13).
MIN_CALL_US = 1e-4
MAX_CALL_US = 1e9
MAX_ITERS = 10**12
ORDER_SLACK = 1e-9


def times_ordered(t_min: float | None, t_avg: float | None, t_max: float | None,
                  slack: float = ORDER_SLACK) -> bool:
    """t_min <= t_avg <= t_max where given (None: not reported), with a small relative and
    absolute slack for rounding (a mean of equal values may exceed them by an ulp)."""
    order = [v for v in (t_min, t_avg, t_max) if v is not None]
    return all(a <= b * (1 + slack) + slack for a, b in zip(order, order[1:]))


def check_timing(timing: SizeTiming) -> SizeTiming:
    """The timing if it can be a real measurement, else BenchmarkOutputError naming why."""
    where = f"size {timing.size}"
    if isinstance(timing.iters, bool) or not isinstance(timing.iters, int) \
            or not 1 <= timing.iters <= MAX_ITERS:
        raise BenchmarkOutputError(f"{where}: iters {str(timing.iters)[:30]} is not in "
                                   f"1..{MAX_ITERS:.0e}")
    for name in ("t_min_us", "t_avg_us", "t_max_us"):
        value = getattr(timing, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or not MIN_CALL_US <= value <= MAX_CALL_US:
            raise BenchmarkOutputError(f"{where}: {name} {str(value)[:30]} is not a plausible "
                                       f"time per call ({MIN_CALL_US:g}..{MAX_CALL_US:g} us)")
    if not times_ordered(timing.t_min_us, timing.t_avg_us, timing.t_max_us):
        raise BenchmarkOutputError(f"{where}: t_min <= t_avg <= t_max does not hold "
                                   f"({timing.t_min_us:g}, {timing.t_avg_us:g}, "
                                   f"{timing.t_max_us:g} us)")
    if timing.nbc is not None:
        check_nbc(timing.nbc, where)
    return timing


def check_nbc(nbc: NbcTiming, where: str) -> NbcTiming:
    """IMB-NBC columns that can be a measurement: t_pure and t_ovrl plausible times per call,
    t_CPU a time (0 allowed: no load), overlap within 0..100 %."""
    for name, low in (("t_pure_us", MIN_CALL_US), ("t_ovrl_us", MIN_CALL_US), ("t_cpu_us", 0.0),
                      ("overlap_pct", 0.0)):
        value = getattr(nbc, name)
        high = 100.0 if name == "overlap_pct" else MAX_CALL_US
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or not low <= value <= high:
            raise BenchmarkOutputError(f"{where}: {name} {str(value)[:30]} is not in "
                                       f"{low:g}..{high:g}")
    return nbc


@dataclass(frozen=True)
class BenchmarkOutput:
    ranks: int
    timings: dict[int, SizeTiming]
    hosts: tuple[str, ...] = ()  # where the ranks ran, when the benchmark says (else unchecked)
    mpi_library: str = ""
    started: float | None = None  # unix time the timed part began, when the benchmark says


class Benchmark(ABC):
    """One way of timing a collective; `name` is what users pick with --benchmark."""

    name: str = ""
    sized: bool = True  # times message sizes (an application gives one value per launch)
    # How it times, where that changed between releases of autotune; in a study's fingerprint,
    # so that a study is not resumed with another method (its scores would mix two readings).
    method: str = ""
    # whether a launch checks the collective's result (a wrong one fails it: `wrong-result`);
    # a search with one that does not has the kernel check each configuration (measure.py)
    checks_results: bool = False
    # the standard uncertainty (log units) of a configuration's speedup over the untuned stack as
    # this benchmark reads it, against IMB-MPI1's reading of the same: a claim is widened by it
    # (endgame/confirm.py). 0 for IMB itself and for an application, whose own time is the claim
    systematic: float = 0.0

    @abstractmethod
    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        """The benchmark's own argv for one launch (the launcher puts mpirun in front)."""

    @abstractmethod
    def parse(self, stdout: str, request: BenchmarkRequest) -> BenchmarkOutput:
        """Every requested size exactly once with sane numbers, else BenchmarkOutputError."""

    def parse_run(self, stdout: str, seconds: float, request: BenchmarkRequest
                  ) -> BenchmarkOutput:
        """A finished launch's result: its output, and how long it took where the benchmark
        scores that (an application's wall time)."""
        return self.parse(stdout, request)

    def disagreement(self, collective: str) -> Disagreement:
        """This benchmark's uncertainty against IMB-MPI1 for `collective`, measured where it
        was (benchmarks/_fidelity.py); `systematic` for a benchmark that has no table."""
        return Disagreement(self.systematic)

    def check(self) -> None:
        """Raise EnvironmentProblem when this benchmark cannot run here (before anything starts)."""

    def times(self, collective: str) -> bool:
        """Whether it has a benchmark of `collective`."""
        return True

    def describe(self) -> str:
        return self.name
