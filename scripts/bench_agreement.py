#!/usr/bin/env python3
"""Benchmark (not a test): does the search's benchmark (the mpi4py kernel, where IMB is not
installed; `--search imb`: IMB, where it is) read each configuration's gain as IMB-MPI1 reads it? Many configurations of the default space, both
benchmarks, interleaved rounds, on this machine.

The configurations: every one-knob change from the untuned stack, every one-knob change from
plain `pml=ucx` (the UCX knobs), and the combinations searches here liked (FAVOURITES), plus
`--config` ones. Each round visits them in a random order, in groups of `--group`; for each group
and each benchmark (in a random order) one launch of the untuned stack, then each configuration
of the group (random order), all through the project's own launcher, benchmarks and parsers
(real mpirun, argv lists, no shell). A configuration's score in a round is the weighted mean over
the sizes (uniform, as a study weighs them) of log(t_config / t_default) against the default
launch of its group and benchmark; its speedup is exp(-mean over rounds), with a Student-t 95%
interval. It agrees when the two speedups differ by at most `--tolerance` percentage points.
Also printed: the agreement of the trimmed means of the rounds (a study's own scoring), and of
the medians of the rounds: on this machine one or two rounds in twelve read wild (a round score
0.4-0.9 off the others), which moves a mean by several pp and a median not at all.

`--search imb` puts a second, independent IMB-MPI1 in the search's place (its own launches and
its own default launches, interleaved the same way): the noise floor of the comparison, what
agreement the criterion allows on this machine even with no difference of method.

    .venv/bin/python scripts/bench_agreement.py --rounds 12 --imb-dir DIR
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
    parser.add_argument("--tolerance", type=float, default=3.0, help="percentage points")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None, help="also write everything here")
    parser.add_argument("--search", choices=("kernel", "imb"), default="kernel",
                        help="the search's benchmark: the mpi4py kernel, or IMB-MPI1 again")
    args = parser.parse_args()
    space, ctx, default, rows = configurations(args)
    sizes = parse_size_range(args.sizes)
    plan = MeasurementPlan(collective=args.collective, nodes=1, ppn=RANKS, sizes=sizes,
                           repetitions=1, stages=1, time_per_size=args.time_per_size)
    imb = ImbBenchmark(args.imb_dir)
    imb.check()
    searched = Mpi4pyBenchmark() if args.search == "kernel" else imb
    measurers = {"search": Measurer(plan, LocalLauncher(), searched),
                 "imb": Measurer(plan, LocalLauncher(), imb)}
    name = "kernel" if args.search == "kernel" else "IMB (2nd)"
    weights = objective.uniform_weights(sizes)
    rng = random.Random(args.seed)
    failures: list[str] = []
    print(f"{len(rows)} configurations, {args.rounds} rounds, {args.collective}, {RANKS} ranks, "
          f"sizes {args.sizes}", file=sys.stderr)
    run_rounds(rows, space.settings(default, ctx), measurers, args.rounds, group=args.group,
               rng=rng, weights=weights, failures=failures)
    print(f"configuration\t{name} speedup (95% CI)\tIMB speedup (95% CI)\t{name} - IMB pp\t"
          f"agree (<= {args.tolerance:g} pp)")
    agree = total = 0
    table = []
    for row in sorted(rows, key=lambda r: -(r.speedup("imb") or (0,))[0]):
        k, i = row.speedup("search"), row.speedup("imb")
        if k is None or i is None:
            print(f"{row.label}\t-\t-\t-\tnot measured")
            continue
        diff = (k[0] - i[0]) * 100
        ok = abs(diff) <= args.tolerance
        agree += ok
        total += 1
        table.append({"configuration": row.label, "params": {n: str(v) for n, v in row.params.items()},
                      "kernel": k, "imb": i, "diff_pp": diff, "agree": ok,
                      "search": args.search, "search_rounds": row.scores.get("search", []),
                      "imb_rounds": row.scores.get("imb", [])})
        print(f"{row.label}\t{k[0]:.3f} ({k[1]:.3f}-{k[2]:.3f})\t{i[0]:.3f} ({i[1]:.3f}-{i[2]:.3f})"
              f"\t{diff:+.1f}\t{'yes' if ok else 'NO'}")
    diffs = [abs(t["diff_pp"]) for t in table]
    print(f"agree within {args.tolerance:g} pp: {agree} of {total} "
          f"({100 * agree / max(1, total):.0f}%); median |{name} - IMB| "
          f"{statistics.median(diffs) if diffs else float('nan'):.1f} pp; failures {len(failures)}")
    robust = [100 * (math.exp(-objective.trimmed_mean(t["search_rounds"]))
                     - math.exp(-objective.trimmed_mean(t["imb_rounds"]))) for t in table]
    print(f"trimmed means of the rounds (as a study scores): agree within {args.tolerance:g} pp: "
          f"{sum(abs(d) <= args.tolerance for d in robust)} of {len(robust)}; median "
          f"|{name} - IMB| {statistics.median(map(abs, robust)) if robust else float('nan'):.1f} pp")
    medians = [100 * (row.median_speedup("search") - row.median_speedup("imb")) for row in rows
               if row.median_speedup("search") and row.median_speedup("imb")]
    print(f"medians of the rounds (robust to a wild round): agree within {args.tolerance:g} pp: "
          f"{sum(abs(d) <= args.tolerance for d in medians)} of {len(medians)}; median "
          f"|{name} - IMB| {statistics.median(map(abs, medians)) if medians else float('nan'):.1f} pp")
    for line in failures[:10]:
        print(f"  failed: {line}")
    if args.json:
        args.json.write_text(json.dumps({"rows": table, "failures": failures,
                                         "rounds": args.rounds, "sizes": args.sizes}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
