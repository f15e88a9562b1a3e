"""The project's mpi4py kernel as a benchmark: its argv, and a reader of what it prints that
trusts nothing (garbage becomes a BenchmarkOutputError).

Kept free of mpi4py imports: importing mpi4py.MPI would initialize MPI in the controller.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass

from ..errors import BenchmarkOutputError
from ._base import Benchmark, BenchmarkOutput, BenchmarkRequest, SizeTiming, WrongResult

PREFIX = "AUTOTUNE "


def kernel_program(collective: str, sizes: tuple[int, ...], time_per_size: float,
                   seed: int, python: str | None = None) -> tuple[str, ...]:
    """argv of the kernel for one launch (the launcher puts mpirun in front)."""
    return (python or sys.executable, "-m", "autotune.benchmarks.mpi4py_kernel",
            "--collective", collective, "--sizes", ",".join(str(s) for s in sizes),
            "--time-per-size", repr(float(time_per_size)), "--seed", str(int(seed)))


def _number(record: dict, key: str, kind: type, allow_zero: bool = False) -> float:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BenchmarkOutputError(f"field {key!r} is not a number in {str(record)[:120]}")
    if kind is int and not float(value).is_integer():
        raise BenchmarkOutputError(f"field {key!r} is not an integer")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise BenchmarkOutputError(f"field {key!r} must be positive and finite, got {value!r}")
    return kind(value)


def _records(stdout: str) -> list[dict]:
    """Every `AUTOTUNE ` line as a JSON object; other lines are MPI warnings and other noise."""
    records = []
    for line in stdout.splitlines():
        if not line.startswith(PREFIX):
            continue
        try:
            record = json.loads(line[len(PREFIX):])
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


@dataclass(frozen=True)
class KernelOverhead:
    """Per-call cost besides MPI's work, measured by the kernel once per launch (us): the
    empty loop (a no-op of the same arity) and the same call on MPI.COMM_SELF."""

    loop_us: float
    self_call_us: float
    loop_spread_us: float
    self_call_spread_us: float


def parse_overhead(record: dict) -> KernelOverhead:
    return KernelOverhead(*(_number(record, key, float, allow_zero=True) for key in (
        "loop_us", "self_call_us", "loop_spread_us", "self_call_spread_us")))


def kernel_overhead(stdout: str) -> KernelOverhead | None:
    """The launch's overhead record, if the kernel printed one (older kernels did not)."""
    found = [r for r in _records(stdout) if r.get("kind") == "overhead"]
    return parse_overhead(found[-1]) if found else None


def parse_kernel_output(stdout: str, sizes: tuple[int, ...], ranks: int) -> BenchmarkOutput:
    """Every requested size exactly once, a start and a done record, sane numbers; a
    wrong-result record fails the launch whatever else it printed."""
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
            start = record
        elif kind == "overhead":
            parse_overhead(record)
        elif kind == "size":
            size = _number(record, "size", int)
            if size not in sizes:
                raise BenchmarkOutputError(f"result for unrequested size {size}")
            if size in timings:
                raise BenchmarkOutputError(f"duplicate result for size {size}")
            timings[size] = SizeTiming(size=size, iters=_number(record, "iters", int),
                                       t_max_us=_number(record, "t_max_us", float),
                                       t_min_us=_number(record, "t_min_us", float),
                                       t_avg_us=_number(record, "t_avg_us", float))
        elif kind == "done":
            done = True
        else:
            raise BenchmarkOutputError(f"unknown record kind {kind!r}")
    if start is None:
        raise BenchmarkOutputError("no start record: the benchmark did not run")
    if start.get("ranks") != ranks:
        raise BenchmarkOutputError(f"benchmark ran {start.get('ranks')!r} ranks, expected {ranks}")
    missing = [s for s in sizes if s not in timings]
    if missing or not done:
        raise BenchmarkOutputError(
            f"output truncated: {len(timings)}/{len(sizes)} sizes" + ("" if done else ", no done record"))
    hosts = start.get("hosts")
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        raise BenchmarkOutputError("start record has no host list")
    started = start.get("time")
    if isinstance(started, bool) or not isinstance(started, (int, float)) or not math.isfinite(started):
        started = None
    return BenchmarkOutput(ranks=ranks, hosts=tuple(hosts), timings=timings, started=started,
                           mpi_library=str(start.get("mpi_library", "")))


class Mpi4pyBenchmark(Benchmark):
    """autotune.benchmarks.mpi4py_kernel: sizes in a seeded random order, IMB's buffer sizes,
    t_max/t_min/t_avg over ranks, the host of every rank (so a launch's landing is checked), and
    a check of each size's result (a wrong one fails the launch: `wrong-result`). It reads about
    0.2-0.7 us per call above IMB up to 4 KiB (mostly mpi4py's own work per call, see
    docs/kernel-fidelity.md): fine for ranking configurations of one study, not for absolute
    latencies."""

    name = "mpi4py"

    def __init__(self, python: str | None = None) -> None:
        self.python = python

    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        return kernel_program(request.collective, request.sizes, request.time_per_size,
                              request.seed, python=self.python)

    def parse(self, stdout: str, request: BenchmarkRequest) -> BenchmarkOutput:
        return parse_kernel_output(stdout, request.sizes, request.ranks)

    def describe(self) -> str:
        return "mpi4py kernel"
