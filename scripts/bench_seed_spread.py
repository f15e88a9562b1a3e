#!/usr/bin/env python3
"""Benchmark (not a test): can 20 seeds tell a strategy from the complete staged sweep on a grid?

bench_search.py compares medians over seeds. On a grid whose configurations have few recorded
passes, one wild pass moves a configuration's truth (the median of its passes) and a
confirmation that lands on it, so a median regret is itself noisy. This replays the complete
sweep (`staged` with a budget it cannot exhaust) and `--strategy` at `--budget`, prints each
seed's regret, and a bootstrap interval (scipy, percentile) of the difference of the two
medians, the seeds resampled within each set (the runs are independent).

    .venv/bin/python scripts/bench_seed_spread.py /tmp/v-tls.parquet --budget 120
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

# first: bench_search sets one BLAS thread per replay before numpy is loaded
from bench_search import _run  # noqa: E402  (one replay per job, grids read once per process)

import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from autotune.storage._grid import read_grid  # noqa: E402


def _median_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(x, axis=axis) - np.median(y, axis=axis)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("grid")
    parser.add_argument("--strategy", default="screen")
    parser.add_argument("--budget", type=int, default=120)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()
    sweep_budget = len(read_grid(args.grid).t_us) + 1
    plan = [("staged", sweep_budget), (args.strategy, args.budget)]
    results = {}
    with ProcessPoolExecutor(args.jobs) as pool:
        for strategy, budget in plan:
            jobs = [(args.grid, strategy, budget, seed) for seed in range(args.seeds)]
            results[strategy] = [(r.regret_pp, r.size_launches) for r in pool.map(_run, jobs)]
    print("strategy\tbudget\tmedian size-launches\tmedian regret pp\tper-seed regrets pp (sorted)")
    for strategy, budget in plan:
        regrets = sorted(r for r, _ in results[strategy])
        launches = float(np.median([s for _, s in results[strategy]]))
        print(f"{strategy}\t{budget}\t{launches:.0f}\t{np.median(regrets):.1f}\t"
              + " ".join(f"{r:.1f}" for r in regrets))
    mine = np.array([r for r, _ in results[args.strategy]])
    sweep = np.array([r for r, _ in results["staged"]])
    boot = stats.bootstrap((mine, sweep), _median_difference, n_resamples=args.resamples,
                           method="percentile", vectorized=True, random_state=0)
    low, high = boot.confidence_interval
    print(f"{args.strategy} - sweep, median regret: {_median_difference(mine, sweep):+.1f} pp, "
          f"95% bootstrap interval {low:+.1f} to {high:+.1f} pp ({args.seeds} seeds each, "
          f"{args.resamples} resamples)")


if __name__ == "__main__":
    main()
