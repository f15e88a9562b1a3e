"""The project's mpi4py kernel as a benchmark: its argv, and a reader of what it prints that
trusts nothing (garbage becomes a BenchmarkOutputError).

Kept free of mpi4py imports: importing mpi4py.MPI would initialize MPI in the controller.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass

from ..errors import BenchmarkOutputError, LaunchFailure
from ..collectives import NbcTiming, SizeTiming, is_nonblocking, overlap_pct
from ._base import (MAX_CALL_US, MAX_ITERS, Benchmark, BenchmarkOutput, BenchmarkRequest,
                    WrongResult, check_timing)
from ._fidelity import Disagreement, disagreement

PREFIX = "AUTOTUNE "


def kernel_program(collective: str, sizes: tuple[int, ...], time_per_size: float,
                   seed: int, python: str | None = None) -> tuple[str, ...]:
    """argv of the kernel for one launch (the launcher puts mpirun in front)."""
    return (python or sys.executable, "-m", "autotune.benchmarks.mpi4py_kernel",
            "--collective", collective, "--sizes", ",".join(str(s) for s in sizes),
            "--time-per-size", repr(float(time_per_size)), "--seed", str(int(seed)))


MAX_RECORD_CHARS = 64 * 1024  # the kernel's longest record (start, 1000s of hosts) is far shorter
MAX_INT_DIGITS = 19  # sizes, counts and repetitions of a real run fit in 64 bits
MAX_OVERHEAD_US = MAX_CALL_US
NBC_FIELDS = ("t_pure_us", "t_ovrl_us", "t_cpu_us", "overlap_pct")
# the kernel's standard uncertainty against IMB-MPI1, log units (Mpi4pyBenchmark.systematic)
KERNEL_SYSTEMATIC = 0.03
OVERLAP_SLACK_PCT = 1e-6  # the record's overlap must be IMB's formula of its own three times


def _bad_constant(name: str) -> float:
    raise BenchmarkOutputError(f"non-finite number {name} in a record")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise BenchmarkOutputError(f"integer with {len(text)} digits in a record")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BenchmarkOutputError(f"non-finite number {text[:30]} in a record")
    return value


def _number(record: dict, key: str, kind: type, allow_zero: bool = False,
            top: float = MAX_CALL_US) -> float:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BenchmarkOutputError(f"field {key!r} is not a number in {_show(record)}")
    if kind is int and not isinstance(value, int):
        raise BenchmarkOutputError(f"field {key!r} is not an integer")
    try:
        as_float = float(value)
    except OverflowError:
        raise BenchmarkOutputError(f"field {key!r} is too large") from None
    if not math.isfinite(as_float) or as_float < 0 or (as_float == 0 and not allow_zero):
        raise BenchmarkOutputError(f"field {key!r} must be positive and finite, got {value!r}")
    if as_float > top:
        raise BenchmarkOutputError(f"field {key!r} is implausibly large ({as_float:g})")
    return kind(value)


def _show(record: object) -> str:
    try:
        return repr(record)[:120]
    except ValueError:  # an int too long for str() cannot get here (bounded), but be safe
        return "a record"


def _records(stdout: str) -> list[dict]:
    """Every `AUTOTUNE ` line as a JSON object; other lines are MPI warnings and other noise.
    JSON that is too long, too deep, non-finite or has huge integers is an error of the output."""
    records = []
    for line in stdout.splitlines():
        if not line.startswith(PREFIX):
            continue
        if len(line) > MAX_RECORD_CHARS:
            raise BenchmarkOutputError(f"record longer than {MAX_RECORD_CHARS} characters")
        try:
            record = json.loads(line[len(PREFIX):], parse_constant=_bad_constant,
                                parse_int=_bounded_int, parse_float=_finite_float)
        except BenchmarkOutputError as exc:
            raise BenchmarkOutputError(f"{exc.detail.removeprefix('benchmark output: ')}: "
                                       f"{line[:80]!r}") from None
        except RecursionError:
            raise BenchmarkOutputError(f"record nested too deeply: {line[:40]!r}") from None
        except ValueError:
            raise BenchmarkOutputError(f"unparseable record: {line[:120]!r}") from None
        if not isinstance(record, dict):
            raise BenchmarkOutputError(f"record is not an object: {line[:120]!r}")
        records.append(record)
    return records


def wrong_result(record: dict) -> WrongResult:
    """The kernel's report of a result that differs from what the inputs make it."""
    def text(key: str) -> str:
        value = record.get(key)
        return str(value)[:40] if isinstance(value, (str, int, float)) else "?"

    return WrongResult(f"{text('collective')} {text('size')} B: rank {text('rank')} element "
                       f"{text('element')} is {text('got')}, expected {text('expected')}")


TIMERS = ("c", "python")  # what timed the calls: IMB's loop in C, or the Python loop


@dataclass(frozen=True)
class KernelOverhead:
    """Per-call cost besides MPI's work, measured by the kernel once per launch (us): the
    empty loop (a no-op of the same arity) and the same call on MPI.COMM_SELF; and what timed
    the calls (`timer`; the Python loop subtracts `self_call_us`, the C loop nothing), with the
    reason when the C loop could not (`timer_note`). Older kernels timed in Python only."""

    loop_us: float
    self_call_us: float
    loop_spread_us: float
    self_call_spread_us: float
    timer: str = "python"
    timer_note: str = ""


def parse_overhead(record: dict) -> KernelOverhead:
    timer = record.get("timer", "python")
    if timer not in TIMERS:
        raise BenchmarkOutputError(f"overhead record: timer {_show(timer)[:20]}, expected c or python")
    note = record.get("timer_note", "")
    return KernelOverhead(*(_number(record, key, float, allow_zero=True, top=MAX_OVERHEAD_US)
                            for key in (
        "loop_us", "self_call_us", "loop_spread_us", "self_call_spread_us")),
        timer=timer, timer_note=note[:300] if isinstance(note, str) else "")


def kernel_overhead(stdout: str) -> KernelOverhead | None:
    """The launch's overhead record, if the kernel printed one (older kernels did not)."""
    found = [r for r in _records(stdout) if r.get("kind") == "overhead"]
    return parse_overhead(found[-1]) if found else None


def parse_nbc(record: dict) -> NbcTiming:
    """A non-blocking collective's IMB-NBC columns of a size record: t_pure and t_ovrl positive,
    t_CPU >= 0, and the overlap exactly IMB's formula of those three (not merely in 0..100)."""
    t_pure, t_ovrl = (_number(record, key, float) for key in ("t_pure_us", "t_ovrl_us"))
    t_cpu = _number(record, "t_cpu_us", float, allow_zero=True)
    stated = _number(record, "overlap_pct", float, allow_zero=True, top=100.0)
    computed = overlap_pct(t_pure, t_cpu, t_ovrl)
    if abs(stated - computed) > OVERLAP_SLACK_PCT:
        raise BenchmarkOutputError(f"size {record.get('size')}: overlap_pct {stated:g} is not "
                                   f"IMB's overlap {computed:g} of t_pure, t_CPU and t_ovrl")
    return NbcTiming(t_pure_us=t_pure, t_ovrl_us=t_ovrl, t_cpu_us=t_cpu, overlap_pct=computed)


def parse_kernel_output(stdout: str, sizes: tuple[int, ...], ranks: int,
                        nonblocking: bool = False) -> BenchmarkOutput:
    """Every requested size exactly once, a start and a done record, sane numbers; a
    wrong-result record fails the launch whatever else it printed. `nonblocking`: every size
    record must carry the IMB-NBC columns (NBC_FIELDS), else none may. A LaunchFailure
    (BenchmarkOutputError, WrongResult) is the only exception it raises."""
    try:
        return _parse_kernel_output(stdout, sizes, ranks, nonblocking)
    except LaunchFailure:
        raise
    except Exception as exc:  # safety net: a parser bug must fail the trial, not the study
        raise BenchmarkOutputError(f"kernel output not parsable (internal "
                                   f"{type(exc).__name__})") from exc


def _parse_kernel_output(stdout: str, sizes: tuple[int, ...], ranks: int,
                         nonblocking: bool) -> BenchmarkOutput:
    if not isinstance(stdout, str):
        raise BenchmarkOutputError("kernel output is not text")
    records = _records(stdout)
    for record in records:
        if record.get("kind") == "wrong-result":
            raise wrong_result(record)
    start: dict | None = None
    done = False
    timings: dict[int, SizeTiming] = {}
    for record in records:
        kind = record.get("kind")
        if kind == "start":
            if start is not None:
                raise BenchmarkOutputError("second start record")
            start = record
        elif kind == "overhead":
            parse_overhead(record)
        elif kind == "size":
            size = _number(record, "size", int)
            if size not in sizes:
                raise BenchmarkOutputError(f"result for unrequested size {size}")
            if size in timings:
                raise BenchmarkOutputError(f"duplicate result for size {size}")
            if done:
                raise BenchmarkOutputError(f"result for size {size} after the done record")
            has_nbc = [key for key in NBC_FIELDS if key in record]
            lacks = [key for key in NBC_FIELDS if key not in record]
            if nonblocking and lacks:
                raise BenchmarkOutputError(f"size {size}: a non-blocking collective's record "
                                           f"lacks {', '.join(lacks)}")
            if not nonblocking and has_nbc:
                raise BenchmarkOutputError(f"size {size}: {has_nbc[0]} in a blocking "
                                           "collective's record")
            timings[size] = check_timing(SizeTiming(
                size=size, iters=_number(record, "iters", int, top=MAX_ITERS),
                t_max_us=_number(record, "t_max_us", float),
                t_min_us=_number(record, "t_min_us", float),
                t_avg_us=_number(record, "t_avg_us", float),
                nbc=parse_nbc(record) if nonblocking else None))
        elif kind == "done":
            if done:
                raise BenchmarkOutputError("second done record")
            count = record.get("sizes")
            if count is not None and (isinstance(count, bool) or count != len(sizes)):
                raise BenchmarkOutputError(f"done record counts {_show(count)[:20]} sizes, "
                                           f"expected {len(sizes)}")
            done = True
        else:
            raise BenchmarkOutputError(f"unknown record kind {kind!r}")
    if start is None:
        raise BenchmarkOutputError("no start record: the benchmark did not run")
    if type(start.get("ranks")) is not int or start.get("ranks") != ranks:
        raise BenchmarkOutputError(f"benchmark ran {start.get('ranks')!r} ranks, expected {ranks}")
    missing = [s for s in sizes if s not in timings]
    if missing or not done:
        raise BenchmarkOutputError(
            f"output truncated: {len(timings)}/{len(sizes)} sizes" + ("" if done else ", no done record"))
    hosts = start.get("hosts")
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) for h in hosts):
        raise BenchmarkOutputError("start record has no host list")
    library = start.get("mpi_library", "")
    started = start.get("time")
    if isinstance(started, bool) or not isinstance(started, (int, float)) or not math.isfinite(started):
        started = None
    return BenchmarkOutput(ranks=ranks, hosts=tuple(hosts), timings=timings, started=started,
                           mpi_library=library if isinstance(library, str) else "")


class Mpi4pyBenchmark(Benchmark):
    """autotune.benchmarks.mpi4py_kernel: sizes in a seeded random order, IMB's buffer sizes,
    t_max/t_min/t_avg over ranks, the host of every rank (so a launch's landing is checked), and
    a check of each size's result (a wrong one fails the launch: `wrong-result`); for a
    non-blocking collective IMB-NBC's t_pure, t_CPU, t_ovrl and overlap too. Blocking
    collectives are timed by IMB's loop in C where the MPI's compiler wrapper builds it
    (`_c_loops`), else by a Python loop, with MPI started single-threaded as IMB starts it; with
    the C loop it reads within 0.04 us per call of IMB up to 2 KiB on the project's VM, with the
    Python loop 0.1-0.8 us above (docs/evidence/kernel-fidelity.md)."""

    name = "mpi4py"
    # 1: Python loop at MPI_THREAD_MULTIPLE; 2: IMB's loop in C (7f54c68), still MULTIPLE;
    # 3: MPI single-threaded (08a9e7f): each changed what a call reads by 0.1-0.5 us
    # (the release's method: a launch where mpicc cannot build the C loop times in Python and
    # says so in its `timer`, under the same method)
    method = "mpi4py kernel 3 (IMB's loop in C where mpicc builds it, MPI single-threaded)"
    # Its speedups sit a few pp off IMB-MPI1's, with a sign that changes with the machine and the
    # hour: on average over 32 configurations -3.1, -2.8 and +0.9 pp in three quiet sessions, and
    # for plain pml=ucx -4.6 to +3.6 pp (docs/evidence/kernel-fidelity.md, "The kernel's systematic")
    systematic = KERNEL_SYSTEMATIC
    checks_results = True

    def __init__(self, python: str | None = None) -> None:
        self.python = python

    def disagreement(self, collective: str) -> Disagreement:
        return disagreement("mpi4py", collective, KERNEL_SYSTEMATIC)

    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        return kernel_program(request.collective, request.sizes, request.time_per_size,
                              request.seed, python=self.python)

    def parse(self, stdout: str, request: BenchmarkRequest) -> BenchmarkOutput:
        return parse_kernel_output(stdout, request.sizes, request.ranks,
                                   nonblocking=is_nonblocking(request.collective))

    def describe(self) -> str:
        return "mpi4py kernel"
