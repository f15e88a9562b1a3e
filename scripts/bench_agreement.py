#!/usr/bin/env python3
"""Benchmark (not a test): does the search's benchmark read each configuration's gain as IMB-MPI1
reads it? Many configurations of the default space, IMB-MPI1 (the reference) and one or more
benchmarks in its place, interleaved in the same rounds, on this machine.

`--search` names them, comma-separated: `cbench` (autotune's C benchmark, IMB's method: what a
machine without IMB times with), `kernel` (the mpi4py kernel), `imb` (a second, independent
IMB-MPI1: its own launches and its own default launches; the noise floor of the comparison,
what agreement the criterion allows on this machine with no difference of method at all).

The configurations: every one-knob change from the untuned stack, every one-knob change from
plain `pml=ucx` (the UCX knobs, and with `--ucx-algorithms` every allreduce algorithm on top of
it), and the combinations searches here liked (FAVOURITES), plus `--config` ones. Each round
visits them in a random order, in groups of `--group`; for each group and each benchmark (in a
random order) one launch of the untuned stack, then each configuration of the group (random
order), all through the project's own launcher, benchmarks and parsers (real mpirun, argv lists,
no shell). A configuration's score in a round is the weighted mean over the sizes (uniform, as a
study weighs them) of log(t_config / t_default) against the default launch of its group and
benchmark. It agrees when the two speedups differ by at most `--tolerance` percentage points,
scored three ways: the mean of the rounds (with a Student-t 95% interval), their trimmed mean
(a study's own scoring) and their median (robust to a wild round). The CPU is named in the
first line.

    .venv/bin/python scripts/bench_agreement.py --rounds 12 --imb-dir DIR --search cbench,imb
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from _interleaved import Arm, run_rounds  # noqa: E402

from autotune import objective  # noqa: E402
from autotune.benchmarks import Mpi4pyBenchmark  # noqa: E402
from autotune.benchmarks._cbench import CBenchmark  # noqa: E402
from autotune.benchmarks._imb import ImbBenchmark  # noqa: E402
from autotune.launch import LocalLauncher  # noqa: E402
from autotune.measure import MeasurementPlan, Measurer  # noqa: E402
from autotune.probe import probe_capabilities  # noqa: E402
from autotune.space import (TrialContext, completed, load_space, one_knob_changes,  # noqa: E402
                            resolve)
from autotune.units import parse_size_range  # noqa: E402

RANKS = 2  # a shared 2-core machine: never more
# what searches here favoured (quick starts and the runs the kernel flattered)
FAVOURITES = (
    {"pml": "ucx", "UCX_ZCOPY_THRESH": "4kb", "coll_tuned_allreduce_algorithm": 3},
    {"pml": "ucx", "UCX_TLS": "self,sm", "UCX_RNDV_THRESH": "32kb", "UCX_ZCOPY_THRESH": "4kb",
     "coll_tuned_allreduce_algorithm": 3},
    {"pml": "ucx", "coll_tuned_allreduce_algorithm": 3},
    {"pml": "ucx", "coll_tuned_allreduce_algorithm": 4},
    {"pml": "ucx", "UCX_TLS": "self,sm", "UCX_RNDV_THRESH": "64kb"},
    {"pml": "ucx", "UCX_TLS": "self,sm", "coll_tuned_allreduce_algorithm": 6},
)


def label_of(params: dict[str, Any], default: dict[str, Any]) -> str:
    changed = [f"{k}={v}" for k, v in params.items() if str(default.get(k)) != str(v)]
    return " ".join(changed) or "the untuned stack"


def configurations(args: argparse.Namespace) -> tuple[Any, TrialContext, dict, list[Arm]]:
    caps = probe_capabilities()
    ctx = TrialContext(args.collective, 1)
    resolved = resolve(load_space(args.space), caps, ctx)
    space = resolved.space
    params = space.for_context(ctx)
    default = space.defaults(ctx, resolved.context_values)
    points = one_knob_changes(params, default)
    ucx = next((p for p in points if p.get("pml") == "ucx"), None)
    if ucx is not None:
        points += one_knob_changes(params, ucx, only={p.name for p in params
                                                      if p.name.startswith("UCX_")})
    if ucx is not None and args.ucx_algorithms:
        algorithm = f"coll_tuned_{args.collective}_algorithm"
        points += one_knob_changes(params, ucx, only={algorithm})
    extra = [dict(f) for f in FAVOURITES] + [dict(kv.split("=", 1) for kv in c.split(","))
                                             for c in args.config]
    for favourite in extra:
        point = dict(default)
        for name, value in favourite.items():
            p = next((q for q in params if q.name == name), None)
            if p is None:
                break
            point[name] = next((c for c in p.choices if str(c) == str(value)), value)
        else:
            points.append(completed(params, point))
    rows, seen = [], set()
    for point in points:
        key = tuple(sorted((k, str(v)) for k, v in point.items()))
        if key not in seen:
            seen.add(key)
            rows.append(Arm(label_of(point, default), space.settings(point, ctx), point))
    return space, ctx, default, rows


def cpu_model() -> str:
    """lscpu's model name (the CPU every figure of a run belongs to)."""
    import subprocess

    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown CPU"
    return next((line.split(":", 1)[1].strip() for line in out.splitlines()
                 if line.startswith("Model name:")), "unknown CPU")


SEARCHES = {"kernel": "kernel", "cbench": "cbench", "imb": "IMB (2nd)"}


def agreement(rows: list[Arm], bench: str, tolerance: float) -> dict[str, Any]:
    """How often `bench` agrees with IMB, scored by the means, trimmed means and medians of the
    rounds, and the signed differences (pp) by the medians."""
    def pp(row: Arm, how: str) -> float | None:
        a, b = row.scores.get(bench, []), row.scores.get("imb", [])
        if len(a) < 2 or len(b) < 2:
            return None
        if how == "mean":
            centre = statistics.fmean
        elif how == "trimmed":
            centre = objective.trimmed_mean
        else:
            centre = statistics.median
        return 100 * (math.exp(-centre(a)) - math.exp(-centre(b)))

    result: dict[str, Any] = {}
    for how in ("mean", "trimmed", "median"):
        diffs = [d for row in rows if (d := pp(row, how)) is not None]
        result[how] = {"agree": sum(abs(d) <= tolerance for d in diffs), "of": len(diffs),
                       "median_abs_pp": statistics.median(map(abs, diffs)) if diffs else None,
                       "signed_pp": diffs}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--collective", default="allreduce")
    parser.add_argument("--space", default="openmpi-ucx+openmpi-tuned")
    parser.add_argument("--sizes", default="8:1m")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--group", type=int, default=3)
    parser.add_argument("--time-per-size", type=float, default=0.02)
    parser.add_argument("--imb-dir", required=True,
                        help="directory holding an IMB-MPI1 built for this MPI")
    parser.add_argument("--config", action="append", default=[],
                        help="another configuration, NAME=VALUE,NAME=VALUE (repeatable)")
    parser.add_argument("--ucx-algorithms", action="store_true",
                        help="also every algorithm of the collective on top of plain pml=ucx")
    parser.add_argument("--tolerance", type=float, default=3.0, help="percentage points")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write everything here")
    parser.add_argument("--search", default="kernel",
                        help="benchmarks read against IMB, comma-separated: cbench, kernel, imb "
                             "(a second IMB-MPI1)")
    parser.add_argument("--list", action="store_true", help="only list the configurations")
    args = parser.parse_args()
    searches = [name.strip() for name in args.search.split(",") if name.strip()]
    unknown = [name for name in searches if name not in SEARCHES]
    if unknown or not searches:
        parser.error(f"--search: {', '.join(unknown) or 'none'}: choose from {', '.join(SEARCHES)}")
    space, ctx, default, rows = configurations(args)
    if args.list:
        for row in rows:
            print(row.label)
        print(f"{len(rows)} configurations")
        return 0
    sizes = parse_size_range(args.sizes)
    plan = MeasurementPlan(collective=args.collective, nodes=1, ppn=RANKS, sizes=sizes,
                           repetitions=1, stages=1, time_per_size=args.time_per_size)
    imb = ImbBenchmark(args.imb_dir)
    imb.check()
    made = {"kernel": Mpi4pyBenchmark, "cbench": CBenchmark,
            "imb": lambda: ImbBenchmark(args.imb_dir)}
    measurers = {"imb": Measurer(plan, LocalLauncher(), imb)}
    for name in searches:
        bench = made[name]()
        bench.check()
        measurers[f"search:{name}"] = Measurer(plan, LocalLauncher(), bench)
    weights = objective.uniform_weights(sizes)
    rng = random.Random(args.seed)
    failures: list[str] = []
    cpu = cpu_model()
    print(f"CPU: {cpu}; {len(rows)} configurations, {args.rounds} rounds, {args.collective}, "
          f"{RANKS} ranks, sizes {args.sizes}, {args.time_per_size:g} s per size, t_max; "
          f"against IMB-MPI1: {', '.join(SEARCHES[n] for n in searches)}")
    sys.stdout.flush()
    run_rounds(rows, space.settings(default, ctx), measurers, args.rounds, group=args.group,
               rng=rng, weights=weights, failures=failures)
    names = [SEARCHES[n] for n in searches]
    print("configuration\tIMB median speedup\t" + "\t".join(
        f"{n} median\t{n} - IMB pp" for n in names))
    for row in sorted(rows, key=lambda r: -(r.median_speedup("imb") or 0)):
        ref = row.median_speedup("imb")
        cells = [f"{ref:.3f}" if ref else "-"]
        for name in searches:
            mine = row.median_speedup(f"search:{name}")
            cells += [f"{mine:.3f}" if mine else "-",
                      f"{100 * (mine - ref):+.1f}" if mine and ref else "-"]
        print(f"{row.label}\t" + "\t".join(cells))
    summary = {}
    for name in searches:
        found = agreement(rows, f"search:{name}", args.tolerance)
        summary[name] = found
        parts = [f"{how} {found[how]['agree']} of {found[how]['of']} "
                 f"(median |diff| {found[how]['median_abs_pp'] or float('nan'):.1f} pp)"
                 for how in ("median", "trimmed", "mean")]
        signed = found["median"]["signed_pp"]
        below = sum(d < 0 for d in signed)
        print(f"{SEARCHES[name]} against IMB, within {args.tolerance:g} pp, by the rounds' "
              + "; ".join(parts) + f"; reads less gain than IMB for {below} of {len(signed)}"
              f" (median signed {statistics.median(signed) if signed else float('nan'):+.1f} pp)")
    print(f"failures {len(failures)}")
    for line in failures[:10]:
        print(f"  failed: {line}")
    if args.json:
        args.json.write_text(json.dumps({
            "cpu": cpu, "rounds": args.rounds, "sizes": args.sizes, "collective": args.collective,
            "time_per_size": args.time_per_size, "searches": searches, "summary": summary,
            "failures": failures,
            "rows": [{"configuration": row.label,
                      "params": {n: str(v) for n, v in row.params.items()},
                      "scores": row.scores, "rounds": row.rounds,
                      "per_size": {b: [{str(k): v for k, v in r.items()} for r in rs]
                                   for b, rs in row.per_size.items()}} for row in rows]},
            indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
