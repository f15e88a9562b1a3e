#!/usr/bin/env python3
"""Benchmark (not a test): what pruning saves and what the controller itself costs, for one study.

Runs a real study on this machine (real mpirun, SQLite storage in a temp dir unless --storage is
given) through the same Controller that `autotune start` uses, then prints:
  * benchmark seconds and launches of full vs pruned trials (and the saving per pruned trial),
  * the controller's own time per trial (sampler ask, suggest, report/prune checks, storage writes,
    tell) as a fraction of the trial's wall time,
  * the baselines taken and their drift.

    .venv/bin/python scripts/bench_pruning.py --trials 20 --sizes 8:1m
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from autotune.options import DEFAULT_SPACE, StartOptions  # noqa: E402
from autotune.session import prepare_session  # noqa: E402
from autotune.units import parse_size_range


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--collective", default="allreduce")
    parser.add_argument("--ppn", type=int, default=2)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--sizes", default="8:1m")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--stages", type=int, default=2)
    parser.add_argument("--space", default=DEFAULT_SPACE)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline-every", type=int, default=1)
    parser.add_argument("--storage", default=None)
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="autotune-bench-")
    options = StartOptions(collective=args.collective, ppn=args.ppn, space=args.space,
                           sizes=parse_size_range(args.sizes), repetitions=args.repetitions,
                           stages=args.stages, seed=args.seed, baseline_every=args.baseline_every,
                           study_name="bench",
                           storage=args.storage or f"sqlite:///{Path(tmp) / 'bench.db'}")
    session = prepare_session(options)  # the same probing, resolution and checks as `start`
    plan = session.plan
    study = session.study
    print(f"running {args.trials} trials of {args.collective}, {len(plan.sizes)} sizes, "
          f"{args.repetitions} launches per size in {len(plan.blocks())} stages, space "
          f"{session.space_name}; storage {options.storage}")
    summary = session.controller(options, None).run(args.trials)

    def describe(state: str) -> None:
        outs = [o for o in summary.outcomes if o.state == state]
        if not outs:
            print(f"  {state.lower():9s} 0 trials")
            return
        print(f"  {state.lower():9s} {len(outs):3d} trials  bench {statistics.mean(o.bench_seconds for o in outs):6.2f} s/trial"
              f"  launches {statistics.mean(o.launches for o in outs):5.1f}/trial"
              f"  sizes {statistics.mean(o.sizes_measured for o in outs):5.1f}/trial"
              f"  total {sum(o.bench_seconds for o in outs):7.1f} s")

    print("\nbenchmark time by outcome")
    for state in ("COMPLETE", "PRUNED", "FAIL"):
        describe(state)
    full = [o for o in summary.outcomes if o.state == "COMPLETE" and o.launches == len(plan.launches())]
    pruned = [o for o in summary.outcomes if o.state == "PRUNED"]
    if full and pruned:
        f, p = statistics.mean(o.bench_seconds for o in full), statistics.mean(o.bench_seconds for o in pruned)
        saved = len(pruned) * (f - p)
        total = sum(o.bench_seconds for o in summary.outcomes)
        print(f"  a pruned trial cost {p / f:.0%} of a full one; pruning saved {saved:.1f} s "
              f"(the study spent {total:.1f} s on trials, {total + saved:.1f} s without pruning)")
    baseline_seconds = sum(b.seconds for b in summary.baselines)
    drifts = [b.drift for b in summary.baselines if b.drift is not None]
    print(f"\ndefault config interleaved: {len(summary.baselines)} launches, {baseline_seconds:.1f} s"
          + (f"; drift vs the first default launch: median {statistics.median(drifts):+.3f}, "
             f"range {min(drifts):+.3f}..{max(drifts):+.3f}" if drifts else ""))
    default = [o for o in summary.outcomes if o.is_default and o.state == "COMPLETE"]
    if default:
        print(f"default trial scored against it: speedup {default[0].speedup:.3f}x (1.000 = no bias)")

    print("\ntrials")
    for o in summary.outcomes:
        trial = study.trials[o.number]
        speed = trial.user_attrs.get("speedup") or trial.user_attrs.get("partial_speedup")
        label = f"{speed:.3f}x" + ("" if o.state == "COMPLETE" else " (partial)") if speed else "-"
        print(f"  {o.number:3d} {o.state:8s} {label:16s} {o.launches:2d}+{o.baseline_launches:<2d} launches "
              f"{o.bench_seconds:5.1f} s  " + " ".join(f"{k}={v}" for k, v in o.params.items()))

    overhead = [o.controller_seconds for o in summary.outcomes]
    fraction = [o.controller_seconds / o.wall_seconds for o in summary.outcomes if o.wall_seconds]
    print("\ncontroller overhead per trial (sampler + storage, excluding benchmark launches)")
    print(f"  mean {statistics.mean(overhead) * 1e3:7.1f} ms  max {max(overhead) * 1e3:7.1f} ms  "
          f"last 5 mean {statistics.mean(overhead[-5:]) * 1e3:7.1f} ms")
    print(f"  fraction of trial wall time: mean {statistics.mean(fraction):.2%}  max {max(fraction):.2%}")


if __name__ == "__main__":
    main()
