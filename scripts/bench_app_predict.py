#!/usr/bin/env python3
"""Benchmark (not a test): does a microbenchmark rank configurations the way the application
does? For one application (the program after --, e.g. LAMMPS's melt example), on this machine:

1. what the application sends: one launch under a PMPI profiler (scripts/mpi_sizes.c, built
   with mpicc, LD_PRELOADed), its calls by message size;
2. the configurations: the untuned stack, plain `pml=ucx`, the winners of an application study
   and of a kernel study (`--app-study`, `--kernel-study`, read from the storage), and `--config`
   ones;
3. interleaved rounds (scripts/_interleaved.py): per group one launch of the untuned stack, then
   each configuration, with the application (its metric) and with the mpi4py kernel timing
   `--collective` at the sizes the application sends, weighted by how often it sends them;
4. per configuration both speedups with their 95% intervals, and how well the kernel's ranking
   of the configurations matches the application's (Spearman's rho, scipy), and whether they
   pick the same winner.

    .venv/bin/python scripts/bench_app_predict.py --rounds 8 --app-study NAME \\
        --kernel-study NAME --metric 'Loop time of ([0-9.]+)' -- lmp -in in.melt -log none
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from _interleaved import Arm, run_rounds  # noqa: E402

from autotune.benchmarks import APP_RUN, AppBenchmark, Mpi4pyBenchmark  # noqa: E402
from autotune.launch import LocalLauncher  # noqa: E402
from autotune.launch._local import mpirun_base_args  # noqa: E402
from autotune.measure import MeasurementPlan, Measurer  # noqa: E402
from autotune.probe import probe_capabilities  # noqa: E402
from autotune.space import TrialContext, completed, load_space, resolve  # noqa: E402

RANKS = 2  # a shared 2-core machine: never more
SEND_CALLS = ("send", "allreduce", "reduce", "bcast", "allgather", "alltoall", "scan")


def profile(command: list[str], where: Path) -> dict[tuple[str, int], int]:
    """{(call, bytes): count} of rank 0 in one untuned launch under the PMPI profiler."""
    library = where / "mpi_sizes.so"
    subprocess.run(["mpicc", "-O2", "-shared", "-fPIC", "-o", str(library),
                    str(ROOT / "scripts" / "mpi_sizes.c")], check=True)
    out = where / "sizes"
    out.mkdir()
    subprocess.run(["mpirun", *mpirun_base_args(), "-np", str(RANKS), "-x",
                    f"LD_PRELOAD={library}", "-x", f"MPI_SIZES_DIR={out}", *command],
                   check=True, stdout=subprocess.DEVNULL)
    counts: dict[tuple[str, int], int] = {}
    for line in (out / "rank-0.txt").read_text().splitlines():
        call, size, count = line.split()
        counts[(call, int(size))] = int(count)
    return counts


def kernel_weights(counts: dict[tuple[str, int], int]) -> dict[int, float]:
    """Every message the application sends, rounded up to a power of two (at least 8 B: the
    kernel reduces float32), weighted by how many it sends of that size."""
    weights: collections.Counter[int] = collections.Counter()
    for (call, size), count in counts.items():
        if call in SEND_CALLS and size > 0:
            weights[max(8, 1 << math.ceil(math.log2(size)))] += count
    total = sum(weights.values())
    return {size: n / total for size, n in sorted(weights.items())}


def winner(storage: str, study: str) -> dict[str, Any] | None:
    import optuna

    from autotune.export import best_config

    best = best_config(optuna.load_study(study_name=study, storage=storage))
    return None if best.is_default else dict(best.params)


def arms(args: argparse.Namespace) -> tuple[Any, TrialContext, dict, list[Arm]]:
    ctx = TrialContext(args.collective, 1)
    resolved = resolve(load_space(args.space), probe_capabilities(), ctx)
    space = resolved.space
    params = space.for_context(ctx)
    default = space.defaults(ctx, resolved.context_values)
    wanted: list[tuple[str, dict[str, Any]]] = [("plain pml=ucx", {"pml": "ucx"})]
    for label, name in (("app study's winner", args.app_study),
                        ("kernel study's winner", args.kernel_study)):
        if name:
            found = winner(args.storage, name)
            if found is None:
                print(f"{label} ({name}): the untuned stack; not a separate arm", file=sys.stderr)
            else:
                wanted.append((label, found))
    wanted += [(c, dict(kv.split("=", 1) for kv in c.split(","))) for c in args.config]
    rows, seen = [], {}
    for label, given in [("the untuned stack", {})] + wanted:
        point = dict(default)
        for name, value in given.items():
            p = next((q for q in params if q.name == name), None)
            if p is not None:
                point[name] = next((c for c in p.choices if str(c) == str(value)), value)
        point = completed(params, point)
        key = tuple(sorted((k, str(v)) for k, v in point.items()))
        if key in seen:
            print(f"{label}: the same configuration as {seen[key]}", file=sys.stderr)
            continue
        seen[key] = label
        changed = " ".join(f"{k}={v}" for k, v in point.items() if str(default.get(k)) != str(v))
        rows.append(Arm(f"{label}: {changed or '-'}", space.settings(point, ctx), point))
    return space, ctx, default, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collective", default="allreduce")
    parser.add_argument("--space", default="openmpi-ucx+openmpi-tuned")
    parser.add_argument("--metric", default="wall")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--group", type=int, default=5)
    parser.add_argument("--time-per-size", type=float, default=0.02)
    parser.add_argument("--storage", default=f"sqlite:///{Path(os.environ.get('AUTOTUNE_HOME', Path.home() / '.autotune')) / 'autotune.db'}")
    parser.add_argument("--app-study", default=None)
    parser.add_argument("--kernel-study", default=None)
    parser.add_argument("--config", action="append", default=[],
                        help="another configuration, NAME=VALUE,NAME=VALUE (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("command", nargs="+", help="the application (after --)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        counts = profile(args.command, Path(tmp))
    sends = sum(n for (call, _), n in counts.items() if call in SEND_CALLS)
    print(f"what rank 0 of `{' '.join(args.command)}` sends ({sends} messages):")
    for (call, size), n in sorted(counts.items(), key=lambda kv: -kv[1])[:15]:
        print(f"  {call:10s} {size:>9d} B  x{n}")
    weights = kernel_weights(counts)
    print("kernel sizes (powers of two) weighted by messages: "
          + ", ".join(f"{s} B {w:.0%}" for s, w in weights.items()))

    space, ctx, default, rows = arms(args)
    app = AppBenchmark(tuple(args.command), args.metric)
    app.check()
    app_plan = MeasurementPlan(collective=args.collective, nodes=1, ppn=RANKS, sizes=(APP_RUN,),
                               repetitions=1, stages=1, time_per_size=0.0, timeout_floor=600)
    kernel_plan = MeasurementPlan(collective=args.collective, nodes=1, ppn=RANKS,
                                  sizes=tuple(weights), repetitions=1, stages=1,
                                  time_per_size=args.time_per_size)
    measurers = {"app": Measurer(app_plan, LocalLauncher(), app),
                 "kernel": Measurer(kernel_plan, LocalLauncher(), Mpi4pyBenchmark())}
    failures: list[str] = []
    print(f"{len(rows)} configurations, {args.rounds} rounds, app metric {app.what}",
          file=sys.stderr)
    run_rounds(rows, space.settings(default, ctx), measurers, args.rounds, group=args.group,
               rng=random.Random(args.seed), weights={"app": {APP_RUN: 1.0}, "kernel": weights},
               failures=failures)

    print("configuration\tapp speedup (95% CI)\tkernel speedup (95% CI)")
    table = []
    for row in rows:
        a, k = row.speedup("app"), row.speedup("kernel")
        if a is None or k is None:
            print(f"{row.label}\t-\t-")
            continue
        table.append({"configuration": row.label, "app": a, "kernel": k,
                      "params": {n: str(v) for n, v in row.params.items()}})
        print(f"{row.label}\t{a[0]:.3f} ({a[1]:.3f}-{a[2]:.3f})\t{k[0]:.3f} ({k[1]:.3f}-{k[2]:.3f})")
    if len(table) >= 3:
        from scipy.stats import spearmanr

        rho = spearmanr([t["app"][0] for t in table], [t["kernel"][0] for t in table])
        print(f"Spearman's rho (kernel's ranking vs the application's, {len(table)} "
              f"configurations): {rho.statistic:.2f} (p={rho.pvalue:.2f})")
    if table:
        best_app = max(table, key=lambda t: t["app"][0])["configuration"]
        best_kernel = max(table, key=lambda t: t["kernel"][0])["configuration"]
        print(f"the application's best: {best_app}\nthe kernel's best:      {best_kernel}"
              f"\nsame winner: {'yes' if best_app == best_kernel else 'no'}")
    for line in failures[:10]:
        print(f"  failed: {line}")
    if args.json:
        args.json.write_text(json.dumps({"rows": table, "failures": failures,
                                         "weights": {str(k): v for k, v in weights.items()},
                                         "profile": [[c, s, n] for (c, s), n in counts.items()],
                                         "rounds": args.rounds}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
