"""The user's own MPI program as the benchmark (`--benchmark app -- PROGRAM ARGS...`): each launch
runs it once under the trial's settings, and its score is one number per launch, either a value
its output prints (`--metric REGEX`, the regex's one group; the last match counts) or its wall
time (`--metric wall`: the whole launch as the user waits for it, mpirun's start included).

A launch has no message sizes: its one value stands under the single pseudo-size APP_RUN, so
pairing with the untuned stack, pruning, the noise floor, confirmation and verify work on it as
on one size. Lower is better unless `--higher-is-better` (a rate: steps/s, ns/day): then the
reciprocal is scored, so a speedup always means "better by this factor".

The command is argv: it is never joined into a shell line. It runs in the directory `start` was
run from (the daemon keeps it), so its input files are the user's.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
from pathlib import Path

from ..collectives import SizeTiming
from ..errors import BenchmarkOutputError, EnvironmentProblem, InputError
from ._base import Benchmark, BenchmarkOutput, BenchmarkRequest

APP_RUN = 0  # the pseudo-size an application's launch is scored under
WALL = "wall"
MAX_METRIC_CHARS = 200


def compile_metric(metric: str) -> re.Pattern[str] | None:
    """The metric's regex (None for `wall`), or an InputError: it must have exactly one group."""
    if metric == WALL:
        return None
    if not metric or len(metric) > MAX_METRIC_CHARS:
        raise InputError(f"--metric: give a regex with one group (at most {MAX_METRIC_CHARS} "
                         "characters), or `wall`")
    try:
        pattern = re.compile(metric)
    except re.error as exc:
        raise InputError(f"--metric {metric!r}: not a regex ({exc})") from None
    if pattern.groups != 1:
        raise InputError(f"--metric {metric!r}: needs exactly one group, the number (it has "
                         f"{pattern.groups}), e.g. 'Loop time of ([0-9.]+)'")
    return pattern


def read_metric(pattern: re.Pattern[str], text: str) -> float:
    """The number the last match's group holds, or BenchmarkOutputError saying why not."""
    matches = list(pattern.finditer(text))
    if not matches:
        raise BenchmarkOutputError(f"the metric {pattern.pattern!r} is not in the output")
    raw = matches[-1].group(1) or ""
    try:
        value = float(raw)
    except ValueError:
        raise BenchmarkOutputError(f"the metric {pattern.pattern!r} matched {raw[:40]!r}, "
                                   "not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise BenchmarkOutputError(f"the metric {pattern.pattern!r} is {raw[:40]}: not a "
                                   "positive number")
    return value


class AppBenchmark(Benchmark):
    name = "app"
    sized = False

    def __init__(self, command: tuple[str, ...], metric: str = WALL, *,
                 higher_is_better: bool = False) -> None:
        if not command:
            raise InputError("--benchmark app needs the program after --, e.g. "
                             "`autotune start ... --benchmark app -- lmp -in in.melt`")
        if higher_is_better and metric == WALL:
            raise InputError("--higher-is-better is for a printed rate; a wall time is better "
                             "lower")
        self.command = tuple(command)
        self.metric = metric
        self.pattern = compile_metric(metric)
        self.higher_is_better = higher_is_better

    def check(self) -> None:
        """The program must exist here (on PATH, or a path from this directory)."""
        program = self.command[0]
        if os.sep in program:
            path = Path(program)
            if not path.is_file() or not os.access(path, os.X_OK):
                raise EnvironmentProblem(f"{program}: not found or not executable "
                                         f"(from {os.getcwd()})")
        elif not shutil.which(program):
            raise EnvironmentProblem(f"{program}: command not found on PATH")

    @property
    def what(self) -> str:
        """What a launch's value is, for messages and the report."""
        if self.pattern is None:
            return "wall time of the launch (s)"
        goal = "higher" if self.higher_is_better else "lower"
        return f"the number matched by {self.metric!r} ({goal} is better)"

    def describe(self) -> str:
        return f"app: {shlex.join(self.command)}; metric: {self.what}"

    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        return self.command

    def parse(self, stdout: str, request: BenchmarkRequest) -> BenchmarkOutput:
        if self.pattern is None:
            raise BenchmarkOutputError("--metric wall is read from the launch, not its output")
        return self.output(read_metric(self.pattern, stdout), request)

    def parse_run(self, stdout: str, seconds: float, request: BenchmarkRequest
                  ) -> BenchmarkOutput:
        if self.pattern is None:
            if not math.isfinite(seconds) or seconds <= 0:
                raise BenchmarkOutputError(f"wall time {seconds!r} is not a duration")
            return self.output(seconds, request)
        return self.parse(stdout, request)

    def output(self, value: float, request: BenchmarkRequest) -> BenchmarkOutput:
        """One launch's value under APP_RUN: the value itself, or its reciprocal for a rate."""
        scored = 1.0 / value if self.higher_is_better else value
        timing = SizeTiming(size=APP_RUN, iters=1, t_max_us=scored, t_min_us=scored,
                            t_avg_us=scored)
        return BenchmarkOutput(ranks=request.ranks, timings={APP_RUN: timing})
