"""Strategies compared on a recorded grid: the product's own controller, strategy, pruner and
confirmation run on launches served from the grid (launch._replay), many seeds, for free.

Figures, per strategy and budget (trials), over the seeds:
- regret (pp) of the configuration the run finally reports (the confirmed best, or the default):
  (oracle's true speedup - reported configuration's true speedup) x 100, where a configuration's
  truth is the median over passes of its weighted mean log-ratio to the default of the same pass;
- launches (candidate + default + confirmation) and size-launches (sizes measured, summed);
- the share of runs that reported "the default is best".
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

import numpy as np
import optuna

from .benchmarks import Mpi4pyBenchmark
from .controller import Controller
from .errors import InputError
from .export import best_config
from .launch import LocalLauncher, StaticPool
from .launch._replay import ReplayExecutor, space_from_grid
from .measure import MeasurementPlan, Measurer
from .objective import uniform_weights
from .probe import HostInfo
from .storage import StudyConfig, quiet_optuna
from .storage._grid import Grid, config_key
from .strategy import make_strategy

HOST = HostInfo(host="replay", cpu_model="replay", cores=1, mpi="replay", ucx="", python="")


@dataclass(frozen=True)
class ReplaySettings:
    """The study settings a replay runs with: the defaults of `autotune start`."""

    repetitions: int = 5
    stages: int = 2
    prune_after: int = 4
    p_threshold: float = 0.1
    confirm_top: int = 3
    confirm_rounds: int = 5


@dataclass(frozen=True)
class ReplayRun:
    strategy: str
    budget: int
    seed: int
    reported: tuple[tuple[str, str], ...]  # the configuration the run reports
    regret_pp: float
    launches: int
    size_launches: int
    default_reported: bool


@dataclass(frozen=True)
class StrategyFigures:
    strategy: str
    budget: int
    regret_pp_median: float
    regret_pp_p90: float
    launches_median: float
    size_launches_median: float
    default_reported_share: float

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def true_speedups(grid: Grid) -> dict[tuple, float]:
    """Each configuration's true speedup over the default, sizes weighted as a study weighs them
    (uniform over the grid's sizes)."""
    return {c: math.exp(-score) for c, score in grid.truth(uniform_weights(grid.sizes)).items()}


def replay_once(grid: Grid, strategy: str, budget: int, seed: int,
                settings: ReplaySettings = ReplaySettings(),
                truth: dict[tuple, float] | None = None) -> ReplayRun:
    """One study of `budget` trials on the grid, as `autotune start` would run it."""
    quiet_optuna()
    truth = truth or true_speedups(grid)
    space = space_from_grid(grid)
    sizes = grid.sizes
    weights = uniform_weights(sizes)
    config = StudyConfig(collective="replay", nodes=1, ppn=2, space=space.name, sizes=sizes,
                         weights=weights, repetitions=settings.repetitions,
                         stages=settings.stages, time_per_size=0.0)
    plan = MeasurementPlan(collective="replay", nodes=1, ppn=2, sizes=sizes,
                           repetitions=settings.repetitions, stages=settings.stages,
                           time_per_size=0.0)
    executor = ReplayExecutor(grid, seed)
    measurer = Measurer(plan, None, Mpi4pyBenchmark(), executor=executor)
    chosen = make_strategy(strategy, seed=seed, prune_after=settings.prune_after,
                           p_threshold=settings.p_threshold)
    study = optuna.create_study(sampler=chosen.sampler(), pruner=chosen.pruner())
    controller = Controller(study, space, config, measurer, HOST,
                            pool=StaticPool(LocalLauncher(mpirun="replay"), 1, 1),
                            strategy=chosen, seed=seed, confirm_top=settings.confirm_top,
                            confirm_rounds=settings.confirm_rounds)
    controller.run(budget)
    try:
        best = best_config(study)
        reported = () if best.is_default else config_key(best.params)
    except InputError:  # no completed trial: nothing was reported but the default
        reported = ()
    oracle = max(truth.values())
    return ReplayRun(strategy=strategy, budget=budget, seed=seed, reported=reported,
                     regret_pp=(oracle - truth.get(reported, 1.0)) * 100,
                     launches=executor.cost.launches, size_launches=executor.cost.size_launches,
                     default_reported=reported == ())


def compare(grid: Grid, strategies: list[str], budgets: list[int], seeds: int,
            settings: ReplaySettings = ReplaySettings()) -> tuple[list[StrategyFigures],
                                                                  list[ReplayRun]]:
    """Every strategy at every budget over `seeds` seeds: the figures and the runs behind them."""
    truth = true_speedups(grid)
    runs, figures = [], []
    for strategy in strategies:
        for budget in budgets:
            batch = [replay_once(grid, strategy, budget, seed, settings, truth)
                     for seed in range(seeds)]
            runs += batch
            regrets = [r.regret_pp for r in batch]
            figures.append(StrategyFigures(
                strategy=strategy, budget=budget,
                regret_pp_median=statistics.median(regrets),
                regret_pp_p90=float(np.percentile(regrets, 90)),
                launches_median=statistics.median(r.launches for r in batch),
                size_launches_median=statistics.median(r.size_launches for r in batch),
                default_reported_share=sum(r.default_reported for r in batch) / len(batch)))
    return figures, runs
