#!/usr/bin/env python3
"""Benchmark (not a test): does a finished study's export beat what an expert tries first, as
IMB-MPI1 measures it, and does its claim hold? Run after the README quick start (same
AUTOTUNE_HOME).

The arms: the exported configuration and every configuration one knob away from the untuned
stack (plain `pml=ucx`, each algorithm, each mapping, ...; the export is one arm with them when
it is itself one of them), all measured with IMB-MPI1 in `--rounds` interleaved rounds
(scripts/_interleaved.py), with the study's sizes and weights, at every time per size of
`--time-per-size` (comma-separated: both settings in the same rounds, each its own IMB launches
and its own untuned launches). Per setting:
- each arm's speedup over the untuned stack: the median over the rounds of exp(-round score),
  and the mean with its Student-t 95% interval;
- the export against the best single-knob change, paired: per round, both arms' own launches,
  the weighted mean of log(t_single / t_export) (no default in between); its median and its
  mean with a Student-t 95% interval. The best single-knob change is the one with the best median
  speedup; when the export is itself a single-knob change, it is compared with the best other.
The verdicts, per setting:
- gap: the export is at most `--gap` pp below the best single-knob change (paired median);
- claim: IMB's median speedup of the export lies inside the confirmation's interval (an export of
  the untuned stack claims nothing).
The CPU is named in the first line.

    .venv/bin/python scripts/check_quickstart.py --imb-dir DIR --rounds 20 --time-per-size 0.02,0.2
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

from _interleaved import Arm, run_rounds  # noqa: E402
from bench_agreement import cpu_model  # noqa: E402

from autotune.benchmarks._imb import ImbBenchmark  # noqa: E402
from autotune.export import best_config  # noqa: E402
from autotune.launch import LocalLauncher  # noqa: E402
from autotune.measure import MeasurementPlan, Measurer  # noqa: E402
from autotune.probe import probe_capabilities  # noqa: E402
from autotune.space import (LaunchSettings, TrialContext, completed, load_space,  # noqa: E402
                            one_knob_changes, resolve)
from autotune.stats import mean_interval  # noqa: E402
from autotune.storage import (default_storage_url, open_storage, params_key,  # noqa: E402
                              stored_config)

QUICK_START_STUDY = "allreduce-1n2p-openmpi-ucx+openmpi-tuned"


def label(point: dict, default: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in point.items() if str(default.get(k)) != str(v))


def verdicts(bench: str, arms: list[Arm], singles: list[Arm], exported: Arm | None,
             claim: tuple[float, float, float] | None, weights: dict[int, float],
             gap_goal: float) -> dict:
    """The figures and verdicts of one setting (`bench`: its measurer's name)."""
    export_median = exported.median_speedup(bench) if exported else 1.0
    rivals = [a for a in singles if a is not exported and a.median_speedup(bench)]
    top = max(rivals, key=lambda a: a.median_speedup(bench) or 0)
    if exported is None:  # the export is the untuned stack: its rival is the untuned stack
        paired = list(top.scores.get(bench, []))  # log(t_single / t_untuned)
    else:
        paired = exported.against(top, bench, weights)
    ratio_median = math.exp(statistics.median(paired)) if paired else float("nan")
    interval = mean_interval(paired) if len(paired) >= 2 else None
    ratio = (math.exp(interval.mean), math.exp(interval.low), math.exp(interval.high)) \
        if interval else None
    gap_pp = (1 - ratio_median) * 100 * (top.median_speedup(bench) or 1.0)
    reproduces = (claim is not None and export_median is not None
                  and claim[1] <= export_median <= claim[2])
    return {"export_median": export_median, "best_single": top.label,
            "best_single_median": top.median_speedup(bench), "export_over_single_median":
            ratio_median, "export_over_single_mean_ci": ratio, "paired_rounds": len(paired),
            "gap_pp": gap_pp, "gap_met": gap_pp <= gap_goal, "claim": claim,
            "reproduces": reproduces}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--study", default=QUICK_START_STUDY)
    parser.add_argument("--storage", default=None, help="default: $AUTOTUNE_HOME's database")
    parser.add_argument("--imb-dir", required=True,
                        help="directory holding an IMB-MPI1 built for this MPI")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--time-per-size", default="0.02",
                        help="seconds per size; comma-separated for several settings in the "
                             "same rounds (e.g. 0.02,0.2)")
    parser.add_argument("--gap", type=float, default=2.0, help="percentage points")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    settings = [float(t) for t in args.time_per_size.split(",")]

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
    arms, exported = [], None
    export_key = None if best.is_default else params_key(
        completed(space.for_context(ctx), dict(best.params)))
    for point in one_knob_changes(space.for_context(ctx), default):
        arm = Arm(label(point, default), space.settings(point, ctx), point)
        if params_key(point) == export_key:  # the export is itself a single-knob change: one arm
            arm = exported = Arm(f"the export: {arm.label}", arm.settings, point)
        arms.append(arm)
    singles = list(arms)
    if not best.is_default and exported is None:
        exported = Arm("the export: " + label(dict(best.params), default),
                       LaunchSettings(env=tuple(best.env.items()), mca=tuple(best.mca.items()),
                                      mpirun_args=tuple(best.mpirun_args)), dict(best.params))
        arms.insert(0, exported)
    imb = ImbBenchmark(args.imb_dir)
    imb.check()
    measurers = {}
    for seconds in settings:
        plan = MeasurementPlan(collective=config.collective, nodes=config.nodes, ppn=config.ppn,
                               sizes=config.sizes, repetitions=1, stages=1,
                               time_per_size=seconds)
        measurers[f"imb {seconds:g} s"] = Measurer(plan, LocalLauncher(), imb)
    failures: list[str] = []
    claim = best.confirmed_speedup
    cpu = cpu_model()
    print(f"CPU: {cpu}; {args.study}: export trial {best.trial} "
          f"({'the untuned stack' if best.is_default else label(dict(best.params), default)})"
          + ("" if claim is None else "; claimed %.3fx (%.3f-%.3f)" % claim)
          + f"; {len(arms)} arms x {args.rounds} IMB-MPI1 rounds at "
          + ", ".join(f"{s:g}" for s in settings) + " s per size", flush=True)
    run_rounds(arms, space.settings(default, ctx), measurers, args.rounds, group=args.group,
               rng=random.Random(args.seed), weights=config.weights, failures=failures)
    results = {}
    for bench in measurers:
        print(f"\n{bench} per size: arm\tmedian speedup\tmean speedup (95% CI)\trounds")
        for arm in sorted(arms, key=lambda a: -(a.median_speedup(bench) or 0)):
            median, mean = arm.median_speedup(bench), arm.speedup(bench)
            shown = "-" if mean is None else f"{mean[0]:.3f} ({mean[1]:.3f}-{mean[2]:.3f})"
            print(f"{arm.label}\t{median or 0:.3f}\t{shown}\t{len(arm.scores.get(bench, []))}")
        found = verdicts(bench, arms, singles, exported, claim, config.weights, args.gap)
        results[bench] = found
        ci = found["export_over_single_mean_ci"]
        print(f"{bench}: export {found['export_median']:.3f}x; best single-knob change: "
              f"{found['best_single']} {found['best_single_median']:.3f}x; export / it "
              f"{found['export_over_single_median']:.3f} (paired median; mean "
              + (f"{ci[0]:.3f}, 95% CI {ci[1]:.3f}-{ci[2]:.3f}" if ci else "-")
              + f", {found['paired_rounds']} rounds): "
              + (f"{found['gap_pp']:.1f} pp below" if found['gap_pp'] > 0
                 else f"{-found['gap_pp']:.1f} pp above")
              + f" (goal: at most {args.gap:g} pp below): "
              f"{'met' if found['gap_met'] else 'MISSED'}")
        if claim is None:
            print(f"{bench}: claim: none (the export is the untuned stack)")
        else:
            print(f"{bench}: claim {claim[0]:.3f}x (95% CI {claim[1]:.3f}-{claim[2]:.3f}); IMB "
                  f"median {found['export_median']:.3f}x "
                  f"{'inside: reproduces' if found['reproduces'] else 'OUTSIDE: not reproduced'}")
    print(f"failed launches: {len(failures)}")
    for line in failures[:10]:
        print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps({
            "cpu": cpu, "study": args.study, "export_trial": best.trial,
            "export_is_default": best.is_default, "export": label(dict(best.params), default),
            "claim": claim, "settings": results, "failures": failures,
            "rows": [{"arm": a.label, "scores": a.scores} for a in arms]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
