#!/usr/bin/env python3
"""Benchmark (not a test): does the mpi4py kernel read what IMB-MPI1 reads? Same configuration,
2 ranks on this machine, the same sizes, interleaved rounds.

Each round runs the kernel and IMB-MPI1 once each, in a random order, through the project's own
launcher, executor, benchmarks and parsers (real mpirun, argv lists, no shell). Per size it
prints the median t_max of each over the rounds, the kernel/IMB ratio (geometric mean of the
per-round paired ratios, with a Student-t 95% interval on their logs), the median difference in
us, and each benchmark's launch-to-launch spread (std of log t_max over the rounds); then a
summary line. The kernel also reports its per-call overheads (empty loop, same call on
MPI.COMM_SELF), shown below the table.

    .venv/bin/python scripts/bench_fidelity.py --rounds 10
    git show HEAD:autotune/benchmarks/mpi4py_kernel.py > /tmp/old_kernel.py
    .venv/bin/python scripts/bench_fidelity.py --rounds 10 --kernel /tmp/old_kernel.py
    .venv/bin/python scripts/bench_fidelity.py --mca pml=ucx --mca pml_ucx_devices=any \\
        --mca pml_ucx_tls=any --env UCX_TLS=sm,self --json
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from scipy import stats

from autotune.benchmarks import (COLLECTIVES, Benchmark, BenchmarkRequest, Mpi4pyBenchmark,
                                 kernel_overhead, kernel_program)
from autotune.benchmarks._imb import ImbBenchmark
from autotune.errors import AutotuneError
from autotune.launch import LocalLauncher, RunResult, run_command
from autotune.measure import LaunchFailed, MeasurementPlan, Measurer
from autotune.space import LaunchSettings
from autotune.units import format_size, parse_size_range

ROOT = Path(__file__).resolve().parent.parent
RANKS = 2  # a shared 2-core machine: never more
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
VALUE_RE = re.compile(r"[A-Za-z0-9_.,:+*-]{1,256}")
BANDS = (("<=2 KiB", 0, 2048), ("4-64 KiB", 4096, 65536), (">=128 KiB", 131072, math.inf))


class KernelFile(Mpi4pyBenchmark):
    """Another copy of the kernel (e.g. the previous version), run as a script file."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        argv = kernel_program(request.collective, request.sizes, request.time_per_size,
                              request.seed)
        return (argv[0], str(self.path), *argv[3:])  # instead of -m autotune.benchmarks...

    def describe(self) -> str:
        return f"mpi4py kernel ({self.path})"


@dataclass
class Series:
    """One benchmark's per-size t_max (us) over the rounds; None where a launch failed."""

    name: str
    t_max_us: dict[int, list[float | None]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    overhead: list[dict[str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class SizeRow:
    size: int
    kernel_us: float
    imb_us: float
    ratio: float
    ratio_low: float | None
    ratio_high: float | None
    diff_us: float
    kernel_spread: float  # std of log t_max over rounds (about the relative spread)
    imb_spread: float
    pairs: int


def name_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not NAME_RE.fullmatch(name) or not VALUE_RE.fullmatch(value):
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=VALUE ([A-Za-z0-9_.,:+*-] values)")
    return name, value


def run_one(measurer: Measurer, settings: LaunchSettings, series: Series, seed: int) -> None:
    """One launch of every size; its t_max per size (or a failure) appended to `series`."""
    seen: list[RunResult] = []

    def keep(command, timeout: float) -> RunResult:
        seen.append(run_command(command, timeout))
        return seen[-1]

    measurer.executor = keep
    launch = measurer.plan.launches()[0]
    try:
        record = measurer.run_launch(settings, launch, seed=seed)
    except LaunchFailed as exc:
        series.failures.append(str(exc))
        for size in launch.sizes:
            series.t_max_us.setdefault(size, []).append(None)
        return
    for size in launch.sizes:
        series.t_max_us.setdefault(size, []).append(record.t_max_us[size])
    overhead = kernel_overhead(seen[-1].stdout) if seen and series.name == "kernel" else None
    if overhead is not None:
        series.overhead.append(asdict(overhead))


def spread(values: list[float]) -> float:
    logs = [math.log(v) for v in values]
    return statistics.stdev(logs) if len(logs) > 1 else float("nan")


def size_row(size: int, kernel: list[float | None], imb: list[float | None]) -> SizeRow | None:
    pairs = [(k, i) for k, i in zip(kernel, imb) if k is not None and i is not None]
    if not pairs:
        return None
    logs = [math.log(k / i) for k, i in pairs]
    mean = statistics.fmean(logs)
    low = high = None
    if len(logs) > 1:
        sem = statistics.stdev(logs) / math.sqrt(len(logs))
        if sem > 0:
            lo, hi = stats.t.interval(0.95, len(logs) - 1, loc=mean, scale=sem)
            low, high = math.exp(lo), math.exp(hi)
        else:
            low = high = math.exp(mean)
    ks, ims = [k for k, _ in pairs], [i for _, i in pairs]
    return SizeRow(size=size, kernel_us=statistics.median(ks), imb_us=statistics.median(ims),
                   ratio=math.exp(mean), ratio_low=low, ratio_high=high,
                   diff_us=statistics.median(k - i for k, i in pairs),
                   kernel_spread=spread(ks), imb_spread=spread(ims), pairs=len(pairs))


def table(rows: list[SizeRow]) -> str:
    lines = [f"{'size':>8} {'kernel us':>10} {'IMB us':>10} {'kernel/IMB':>10} "
             f"{'95% interval':>15} {'diff us':>8} {'spread k':>8} {'spread I':>8} {'n':>3}"]
    for r in rows:
        interval = (f"{r.ratio_low:.2f}..{r.ratio_high:.2f}" if r.ratio_low is not None else "-")
        lines.append(f"{format_size(r.size):>8} {r.kernel_us:10.2f} {r.imb_us:10.2f} "
                     f"{r.ratio:10.2f} {interval:>15} {r.diff_us:+8.2f} "
                     f"{100 * r.kernel_spread:7.1f}% {100 * r.imb_spread:7.1f}% {r.pairs:3d}")
    return "\n".join(lines)


def summary(rows: list[SizeRow]) -> str:
    parts = []
    for label, low, high in BANDS:
        band = [r for r in rows if low <= r.size <= high]
        if band:
            ratio = math.exp(statistics.fmean(math.log(r.ratio) for r in band))
            diff = statistics.median(r.diff_us for r in band)
            parts.append(f"{label}: {ratio:.2f}x ({diff:+.2f} us)")
    outside = sum(1 for r in rows if r.ratio_low is not None
                  and (r.ratio_low > 1 or r.ratio_high < 1))
    bands = "; ".join(parts)
    return (f"kernel/IMB (geometric mean of ratios; median difference) {bands}; "
            f"{outside} of {len(rows)} sizes with an interval excluding 1")


def overhead_line(series: Series) -> str:
    if not series.overhead:
        return "kernel overheads: not reported (older kernel)"
    loop = [o["loop_us"] for o in series.overhead]
    call = [o["self_call_us"] for o in series.overhead]
    return (f"kernel overheads per call over {len(loop)} launches: empty loop median "
            f"{statistics.median(loop):.3f} us (range {min(loop):.3f}..{max(loop):.3f}); same "
            f"call on COMM_SELF median {statistics.median(call):.3f} us "
            f"(range {min(call):.3f}..{max(call):.3f})")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collective", choices=COLLECTIVES, default="allreduce")
    parser.add_argument("--mca", type=name_value, action="append", default=[],
                        metavar="NAME=VALUE", help="MCA parameter of the configuration")
    parser.add_argument("--env", type=name_value, action="append", default=[],
                        metavar="NAME=VALUE", help="environment variable of the configuration")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--sizes", default="8:1m", help="MIN:MAX (powers of two) or a list")
    parser.add_argument("--every-other", action="store_true",
                        help="every other size of --sizes (IMB then reads a -msglen file)")
    parser.add_argument("--kernel", type=Path, default=None,
                        help="run this kernel file instead of the installed one")
    parser.add_argument("--imb-dir", required=True,
                        help="directory holding an IMB-MPI1 built for this MPI")
    parser.add_argument("--imb-off-cache", default=None, metavar="SPEC",
                        help="IMB -off_cache (e.g. -1); default: buffers reused, as the kernel")
    parser.add_argument("--time-per-size", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    return parser.parse_args(argv)


def benchmarks(args: argparse.Namespace) -> dict[str, Benchmark]:
    kernel: Benchmark = KernelFile(args.kernel.resolve()) if args.kernel else Mpi4pyBenchmark()
    imb = ImbBenchmark(args.imb_dir, off_cache=args.imb_off_cache)
    imb.check()
    return {"kernel": kernel, "imb": imb}


def measure(args: argparse.Namespace) -> dict[str, Series]:
    sizes = parse_size_range(args.sizes)
    if args.every_other:
        sizes = sizes[::2]
    plan = MeasurementPlan(collective=args.collective, nodes=1, ppn=RANKS, sizes=sizes,
                           repetitions=1, stages=1, time_per_size=args.time_per_size)
    settings = LaunchSettings(env=tuple(args.env), mca=tuple(args.mca))
    measurers = {name: Measurer(plan, LocalLauncher(), bench)
                 for name, bench in benchmarks(args).items()}
    series = {name: Series(name) for name in measurers}
    rng = random.Random(args.seed)
    for round_ in range(args.rounds):
        order = list(measurers)
        rng.shuffle(order)
        for name in order:
            run_one(measurers[name], settings, series[name], seed=args.seed + round_)
        print(f"round {round_ + 1}/{args.rounds} ({' then '.join(order)})", file=sys.stderr)
    return series


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.rounds < 1 or args.time_per_size <= 0:
        raise SystemExit("--rounds must be >= 1 and --time-per-size > 0")
    try:
        series = measure(args)
    except AutotuneError as exc:
        print(f"bench_fidelity: {exc}", file=sys.stderr)
        return 1
    kernel, imb = series["kernel"], series["imb"]
    rows = [row for size in sorted(kernel.t_max_us)
            if (row := size_row(size, kernel.t_max_us[size], imb.t_max_us[size])) is not None]
    failures = [f"{s.name}: {f}" for s in series.values() for f in s.failures]
    if args.json:
        print(json.dumps({"collective": args.collective, "ranks": RANKS, "rounds": args.rounds,
                          "mca": dict(args.mca), "env": dict(args.env),
                          "kernel": str(args.kernel or "installed"),
                          "time_per_size": args.time_per_size, "rows": [asdict(r) for r in rows],
                          "kernel_t_max_us": kernel.t_max_us, "imb_t_max_us": imb.t_max_us,
                          "kernel_overhead": kernel.overhead, "failures": failures,
                          "summary": summary(rows)}, indent=1))
        return 0
    config = " ".join([*(f"--mca {n}={v}" for n, v in args.mca),
                       *(f"--env {n}={v}" for n, v in args.env)]) or "the untuned stack"
    print(f"{args.collective}, {RANKS} ranks, {config}, {args.rounds} rounds, "
          f"kernel {args.kernel or 'installed'}, time per size {args.time_per_size:g} s")
    print(table(rows))
    print(overhead_line(kernel))
    for failure in failures:
        print(f"failed launch: {failure}")
    print(summary(rows) if rows else "no size measured by both")
    return 0


if __name__ == "__main__":
    sys.exit(main())
