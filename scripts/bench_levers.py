#!/usr/bin/env python3
"""Benchmark (not a test): which part of a benchmark's method moves its reading away from
IMB-MPI1's? The same few configurations timed by IMB-MPI1 and by autotune's C benchmark
(cbench.c) with one lever of its method changed at a time, in interleaved rounds, on this
machine; the mpi4py kernel too with `--kernel`.

cbench follows IMB's method step by step. Its levers (cbench.c's header) turn one step into what
the mpi4py kernel does instead: `world` times on MPI_COMM_WORLD (IMB and cbench split a
communicator from it), `malloc` allocates the buffers with malloc (IMB: MPI_Alloc_mem), `fresh`
allocates new buffers for every size and frees them after it, `shuffled` runs the sizes in a
random order, `budget` fits the repetitions to the time per size as the kernel does, `kernel-like`
all of these at once. Each round runs every (configuration, program) pair once in a random
order, the untuned stack of each program in the same round as its other configurations.

Printed: the CPU; per program and configuration the median t_max per size over the rounds;
per program each configuration's speedup over the untuned stack (the median over the rounds of
exp(-mean log ratio) over the sizes, sizes weighted uniformly, paired in the round) and its
distance from IMB's in pp.

    .venv/bin/python scripts/bench_levers.py --imb-dir DIR --rounds 10 [--levers world,malloc]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_agreement import cpu_model  # noqa: E402

from autotune import objective  # noqa: E402
from autotune.benchmarks import BenchmarkRequest, Mpi4pyBenchmark  # noqa: E402
from autotune.benchmarks._cbench import CBenchmark  # noqa: E402
from autotune.benchmarks._imb import ImbBenchmark  # noqa: E402
from autotune.launch import LocalLauncher  # noqa: E402
from autotune.measure import LaunchFailed, MeasurementPlan, Measurer  # noqa: E402
from autotune.space import LaunchSettings  # noqa: E402
from autotune.units import parse_size_range  # noqa: E402

RANKS = 2
LEVERS = {
    "cbench": (),
    "world": ("--comm", "world"),
    "malloc": ("--alloc", "malloc"),
    "fresh": ("--buffers", "fresh"),
    "shuffled": ("--order", "shuffled"),
    "budget": ("--iter-policy", "budget"),
    "kernel-like": ("--comm", "world", "--alloc", "malloc", "--buffers", "fresh", "--order",
                    "shuffled", "--iter-policy", "budget"),
}
UCX = (("pml", "ucx"), ("pml_ucx_devices", "any"), ("pml_ucx_tls", "any"))
CONFIGS = {
    "untuned": LaunchSettings(),
    "pml ucx": LaunchSettings(mca=UCX),
    "alg 3": LaunchSettings(mca=(("coll_tuned_use_dynamic_rules", "1"),
                                 ("coll_tuned_allreduce_algorithm", "3"))),
    "ucx + alg 3": LaunchSettings(mca=UCX + (("coll_tuned_use_dynamic_rules", "1"),
                                             ("coll_tuned_allreduce_algorithm", "3"))),
}


class Lever(CBenchmark):
    """cbench with one step of its method changed (extra argv)."""

    def __init__(self, extra: tuple[str, ...], time_per_size: float) -> None:
        super().__init__()
        self.extra = extra
        self.time_per_size = time_per_size

    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        budget = ("--time-per-size", repr(self.time_per_size)) if "budget" in self.extra else ()
        return super().program(request) + self.extra + budget


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--imb-dir", required=True)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--sizes", default="8:1m")
    parser.add_argument("--time-per-size", type=float, default=0.02)
    parser.add_argument("--levers", default=",".join(LEVERS),
                        help=f"comma-separated, of {', '.join(LEVERS)}")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help=f"comma-separated, of {', '.join(CONFIGS)} (untuned always runs)")
    parser.add_argument("--kernel", action="store_true", help="also the mpi4py kernel")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = parse_size_range(args.sizes)
    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=RANKS, sizes=sizes,
                           repetitions=1, stages=1, time_per_size=args.time_per_size)
    programs = {"IMB": ImbBenchmark(args.imb_dir)}
    for name in args.levers.split(","):
        programs[name] = Lever(LEVERS[name], args.time_per_size)
    if args.kernel:
        programs["kernel"] = Mpi4pyBenchmark()
    for bench in programs.values():
        bench.check()
    configs = ["untuned"] + [c for c in args.configs.split(",") if c != "untuned"]
    measurers = {name: Measurer(plan, LocalLauncher(), bench) for name, bench in programs.items()}
    launch = plan.launches()[0]
    rng = random.Random(args.seed)
    times: dict[tuple[str, str], list[dict[int, float]]] = {}
    faults: dict[tuple[str, str], list[dict[int, float]]] = {}
    print(f"CPU: {cpu_model()}; allreduce, {RANKS} ranks, sizes {args.sizes}, "
          f"{args.time_per_size:g} s per size, {args.rounds} rounds; programs: "
          f"{', '.join(programs)}", flush=True)
    for r in range(args.rounds):
        pairs = [(c, p) for c in configs for p in programs]
        rng.shuffle(pairs)
        for config, program in pairs:
            try:
                record = measurers[program].run_launch(CONFIGS[config], launch,
                                                       seed=rng.randrange(2**31),
                                                       is_default=config == "untuned")
            except LaunchFailed as exc:
                print(f"  failed: {program} {config}: {exc}", file=sys.stderr)
                continue
            times.setdefault((program, config), []).append(dict(record.t_max_us))
            times[(program, config)][-1]["round"] = r
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print("median t_max per size, us")
    print("size\t" + "\t".join(f"{p}:{c}" for c in configs for p in programs))
    for size in sizes:
        cells = []
        for c in configs:
            for p in programs:
                values = [t[size] for t in times.get((p, c), []) if size in t]
                cells.append(f"{statistics.median(values):.3f}" if values else "-")
        print(f"{size}\t" + "\t".join(cells))
    weights = objective.uniform_weights(sizes)
    print("speedup over the untuned stack (median of rounds, paired in the round), and - IMB pp")
    result = {}
    for c in configs[1:]:
        line = []
        ref = None
        for p in programs:
            base = {t["round"]: t for t in times.get((p, "untuned"), [])}
            scores = [objective.weighted_score({s: math.log(t[s] / base[t["round"]][s])
                                                for s in sizes}, weights)
                      for t in times.get((p, c), []) if t["round"] in base]
            if not scores:
                line.append(f"{p} -")
                continue
            speed = math.exp(-statistics.median(scores))
            result[f"{p}:{c}"] = speed
            if p == "IMB":
                ref = speed
                line.append(f"IMB {speed:.3f}")
            else:
                line.append(f"{p} {speed:.3f} ({100 * (speed - (ref or speed)):+.1f} pp)")
        print(f"{c:>12}  " + "  ".join(line))
    if args.json:
        args.json.write_text(json.dumps({"cpu": cpu_model(), "speedups": result,
                                         "times": {f"{p}:{c}": v for (p, c), v in times.items()}},
                                        indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
