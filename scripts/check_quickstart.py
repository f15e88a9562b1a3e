#!/usr/bin/env python3
"""Benchmark (not a test): does a finished study's export beat what an expert tries first, as
IMB-MPI1 measures it? Run after the README quick start (same AUTOTUNE_HOME).

The arms: the exported configuration, and every configuration one knob away from the untuned
stack (plain `pml=ucx`, each algorithm, each mapping, ...; the export is one arm with them when
it is itself one of them: two arms of one configuration would differ by noise alone), all
measured with IMB-MPI1 against the untuned stack in `--rounds` interleaved rounds
(scripts/_interleaved.py), with the study's sizes and weights. An arm's speedup is the median
over the rounds of exp(-round score), as the quick-start check asks, and the mean with its Student-t 95%
interval beside it. The verdicts:
- the export is at most `--gap` percentage points below the best single-knob change;
- its claim reproduces: IMB's median speedup lies inside the confirmation's interval (an export of
  the untuned stack claims nothing).

    .venv/bin/python scripts/check_quickstart.py --imb-dir DIR --rounds 20
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from _interleaved import Arm, run_rounds  # noqa: E402

from autotune.benchmarks._imb import ImbBenchmark  # noqa: E402
from autotune.export import best_config  # noqa: E402
from autotune.launch import LocalLauncher  # noqa: E402
from autotune.measure import MeasurementPlan, Measurer  # noqa: E402
from autotune.probe import probe_capabilities  # noqa: E402
from autotune.space import (LaunchSettings, TrialContext, completed, load_space,  # noqa: E402
                            one_knob_changes, resolve)
from autotune.storage import (default_storage_url, open_storage, params_key,  # noqa: E402
                              stored_config)

QUICK_START_STUDY = "allreduce-1n2p-openmpi-ucx+openmpi-tuned"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", default=QUICK_START_STUDY)
    parser.add_argument("--storage", default=None, help="default: $AUTOTUNE_HOME's database")
    parser.add_argument("--imb-dir", required=True,
                        help="directory holding an IMB-MPI1 built for this MPI")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--time-per-size", type=float, default=0.02)
    parser.add_argument("--gap", type=float, default=2.0, help="percentage points")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    import optuna

    storage = open_storage(args.storage or default_storage_url())
    study = optuna.load_study(study_name=args.study, storage=storage)
    config = stored_config(study)
    assert config is not None, "not an autotune study"
    best = best_config(study)
    ctx = TrialContext(config.collective, config.nodes)
    resolved = resolve(load_space(config.space), probe_capabilities(), ctx)
    space = resolved.space
    default = space.defaults(ctx, resolved.context_values)
    arms = []
    exported = None
    export_key = None if best.is_default else params_key(
        completed(space.for_context(ctx), dict(best.params)))
    for point in one_knob_changes(space.for_context(ctx), default):
        label = " ".join(f"{k}={v}" for k, v in point.items() if str(default.get(k)) != str(v))
        arm = Arm(label, space.settings(point, ctx), point)
        if params_key(point) == export_key:  # the export is itself a single-knob change: one arm
            arm = exported = Arm(f"the export: {label}", arm.settings, point)
        arms.append(arm)
    single_arms = list(arms)
    if not best.is_default and exported is None:
        exported = Arm("the export: " + " ".join(
            f"{k}={v}" for k, v in best.params.items() if str(default.get(k)) != str(v)),
            LaunchSettings(env=tuple(best.env.items()), mca=tuple(best.mca.items()),
                           mpirun_args=tuple(best.mpirun_args)), dict(best.params))
        arms.insert(0, exported)
    plan = MeasurementPlan(collective=config.collective, nodes=config.nodes, ppn=config.ppn,
                           sizes=config.sizes, repetitions=1, stages=1,
                           time_per_size=args.time_per_size)
    imb = ImbBenchmark(args.imb_dir)
    imb.check()
    failures: list[str] = []
    print(f"{args.study}: export trial {best.trial} ({'the untuned stack' if best.is_default else 'claimed'}"
          f"{'' if best.confirmed_speedup is None else ' %.3fx (%.3f-%.3f)' % best.confirmed_speedup}); "
          f"{len(arms)} arms x {args.rounds} IMB-MPI1 rounds", file=sys.stderr)
    run_rounds(arms, space.settings(default, ctx), {"imb": Measurer(plan, LocalLauncher(), imb)},
               args.rounds, group=args.group, rng=random.Random(args.seed),
               weights=config.weights, failures=failures)
    print("arm\tIMB median speedup\tIMB mean speedup (95% CI)\trounds")
    rows = []
    for arm in sorted(arms, key=lambda a: -(a.median_speedup("imb") or 0)):
        median, mean = arm.median_speedup("imb"), arm.speedup("imb")
        shown = "-" if mean is None else f"{mean[0]:.3f} ({mean[1]:.3f}-{mean[2]:.3f})"
        print(f"{arm.label}\t{median or 0:.3f}\t{shown}\t{len(arm.scores.get('imb', []))}")
        rows.append({"arm": arm.label, "median": median, "mean": mean,
                     "rounds": arm.scores.get("imb", [])})
    singles = [a for a in single_arms if a.median_speedup("imb")]  # the export too, if it is one
    top = max(singles, key=lambda a: a.median_speedup("imb") or 0)
    export_speedup = exported.median_speedup("imb") if exported else 1.0
    gap = ((top.median_speedup("imb") or 0) - (export_speedup or 0)) * 100
    claim = best.confirmed_speedup
    reproduces = (claim is not None and export_speedup is not None
                  and claim[1] <= export_speedup <= claim[2])
    print(f"export under IMB: {export_speedup:.3f}x; best single-knob change: {top.label} "
          f"{top.median_speedup('imb'):.3f}x; export below it by {gap:.1f} pp (goal <= "
          f"{args.gap:g}): {'met' if gap <= args.gap else 'MISSED'}")
    if claim is None:
        print("claim: none (the export is the untuned stack)")
    else:
        print(f"claim {claim[0]:.3f}x (95% CI {claim[1]:.3f}-{claim[2]:.3f}); IMB median "
              f"{export_speedup:.3f}x {'inside: reproduces' if reproduces else 'OUTSIDE: not reproduced'}")
    print(f"failed launches: {len(failures)}")
    for line in failures[:10]:
        print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps({
            "study": args.study, "export_trial": best.trial, "export_is_default": best.is_default,
            "claim": claim, "export_imb_median": export_speedup, "best_single": top.label,
            "best_single_imb_median": top.median_speedup("imb"), "gap_pp": gap,
            "gap_met": gap <= args.gap, "reproduces": reproduces, "rows": rows,
            "failures": failures}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
