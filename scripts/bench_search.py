#!/usr/bin/env python3
"""Benchmark (not a test): does a strategy beat the manual staged sweep on recorded grids?

For each grid, replayed with the product's own controller, strategy, pruning and confirmation
(autotune.replay), over `--seeds` seeds:
- the complete staged sweep (the `staged` strategy with a budget it cannot exhaust: it stops by
  itself): its median size-launches S and median regret;
- the exhaustive `grid` strategy (every configuration once; skipped above `--grid-limit`
  configurations): its median regret, the yardstick of a grid too noisy for 1 pp;
- the strategy under test at every budget of `--budgets`: median regret and cost.
The goal (issue 21): within S, at most 1 pp regret (on a grid where neither the sweep nor the
exhaustive grid gets within 1 pp, no more than the better of them); within S/2, no more regret
than the sweep's. "Within" is the largest budget whose median size-launches fit. Prints one
table per grid and one verdict line per grid; --json writes everything.

    .venv/bin/python scripts/bench_search.py docs/grids/*-imb.csv docs/grids/*.parquet
"""

from __future__ import annotations

import argparse
import json
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core per replay: --jobs processes share the machine
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autotune.replay import (StrategyFigures, figures_of, plot_regret, replay_once,  # noqa: E402
                             true_speedups)
from autotune.storage._grid import read_grid  # noqa: E402

_GRIDS: dict[str, object] = {}


def _run(job: tuple[str, str, int, int]) -> object:
    path, strategy, budget, seed = job
    grid = _GRIDS.get(path)
    if grid is None:
        grid = _GRIDS[path] = read_grid(path)
        _GRIDS[path + "#truth"] = true_speedups(grid)  # type: ignore[arg-type]
    return replay_once(grid, strategy, budget, seed,  # type: ignore[arg-type]
                       truth=_GRIDS[path + "#truth"])  # type: ignore[arg-type]


@dataclass(frozen=True)
class Verdict:
    grid: str
    configs: int
    sweep_size_launches: float
    sweep_regret: float
    exhaustive_regret: float | None
    target_full: float  # regret allowed within the sweep's size-launches
    within_full: StrategyFigures | None
    within_half: StrategyFigures | None
    met_full: bool
    met_half: bool


def judge(path: str, configs: int, sweep: StrategyFigures, exhaustive: StrategyFigures | None,
          curve: list[StrategyFigures]) -> Verdict:
    better = min(sweep.regret_pp_median,
                 exhaustive.regret_pp_median if exhaustive else sweep.regret_pp_median)
    target = max(1.0, better)
    budget_full = [f for f in curve if f.size_launches_median <= sweep.size_launches_median]
    budget_half = [f for f in curve if f.size_launches_median <= sweep.size_launches_median / 2]
    full = max(budget_full, key=lambda f: f.budget, default=None)
    half = max(budget_half, key=lambda f: f.budget, default=None)
    return Verdict(grid=Path(path).name, configs=configs,
                   sweep_size_launches=sweep.size_launches_median,
                   sweep_regret=sweep.regret_pp_median,
                   exhaustive_regret=exhaustive.regret_pp_median if exhaustive else None,
                   target_full=target, within_full=full, within_half=half,
                   met_full=full is not None and full.regret_pp_median <= target + 1e-9,
                   met_half=half is not None
                   and half.regret_pp_median <= sweep.regret_pp_median + 1e-9)


def library_versions() -> dict[str, str]:
    """The numeric libraries a replay ran on: the same seeds give other trajectories under other
    versions (docs/strategies.md), so a figure is tied to them."""
    from importlib.metadata import version

    return {name: version(name) for name in ("numpy", "scipy", "scikit-learn", "optuna")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grids", nargs="+")
    parser.add_argument("--strategy", default="screen")
    parser.add_argument("--budgets", default="5,10,15,20,30,40,60,80,120")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--grid-limit", type=int, default=600,
                        help="skip the exhaustive grid strategy above this many configurations")
    parser.add_argument("--jobs", type=int, default=1, help="replays at once (processes)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--plots", type=Path, default=None,
                        help="a directory: one PNG per grid (regret against size-launches)")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    libraries = library_versions()
    print("replayed with " + ", ".join(f"{k} {v}" for k, v in libraries.items()))
    verdicts, everything = [], {"libraries": libraries}
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for path in args.grids:
            grid = read_grid(path)
            configs = len(grid.t_us)
            plan = [("staged", configs + 1)] + [(args.strategy, b) for b in budgets]
            if configs <= args.grid_limit:
                plan.append(("grid", configs + 1))
            jobs = [(path, s, b, seed) for s, b in plan for seed in range(args.seeds)]
            runs = list(pool.map(_run, jobs, chunksize=4))
            figures = []
            for i, (strategy, budget) in enumerate(plan):
                batch = runs[i * args.seeds:(i + 1) * args.seeds]
                figures.append(figures_of(batch, strategy, budget))  # type: ignore[arg-type]
            sweep = figures[0]
            exhaustive = next((f for f in figures if f.strategy == "grid"), None)
            curve = [f for f in figures if f.strategy == args.strategy]
            verdict = judge(path, configs, sweep, exhaustive, curve)
            if args.plots:
                args.plots.mkdir(parents=True, exist_ok=True)
                plot_regret(figures, args.plots / f"strategies-{Path(path).stem}.png",
                            Path(path).name)
            verdicts.append(verdict)
            everything[verdict.grid] = {"figures": [f.to_dict() for f in figures],
                                        "verdict": asdict(verdict)}
            print(f"\n{path}: {configs} configurations, {args.seeds} seeds")
            print("strategy\tbudget\tregret pp median\tregret pp p90\tlaunches\t"
                  "size-launches\tdefault reported")
            for f in figures:
                print(f"{f.strategy}\t{f.budget}\t{f.regret_pp_median:.1f}\t{f.regret_pp_p90:.1f}\t"
                      f"{f.launches_median:.0f}\t{f.size_launches_median:.0f}\t"
                      f"{f.default_reported_share:.0%}")
            sys.stdout.flush()
    print("\ngrid\tconfigs\tsweep size-launches\tsweep pp\texhaustive pp\t"
          f"{args.strategy} within sweep (budget: pp, size-launches)\tgoal <= pp\tmet\t"
          f"{args.strategy} within half\tmet")
    for v in verdicts:
        def show(f: StrategyFigures | None) -> str:
            return "-" if f is None else (f"{f.budget}: {f.regret_pp_median:.1f} pp, "
                                          f"{f.size_launches_median:.0f}")
        ex = "-" if v.exhaustive_regret is None else f"{v.exhaustive_regret:.1f}"
        print(f"{v.grid}\t{v.configs}\t{v.sweep_size_launches:.0f}\t{v.sweep_regret:.1f}\t{ex}\t"
              f"{show(v.within_full)}\t{v.target_full:.1f}\t{'yes' if v.met_full else 'NO'}\t"
              f"{show(v.within_half)}\t{'yes' if v.met_half else 'NO'}")
    if args.json:
        args.json.write_text(json.dumps(everything, indent=2, default=str))


if __name__ == "__main__":
    main()
