"""Strategies compared on a recorded grid: the product's own controller, strategy, pruner and
confirmation run on launches served from the grid (launch._replay), many seeds, for free.

Figures, per strategy and budget (trials), over the seeds:
- regret (pp) of the configuration the run finally reports (the confirmed best, or the default):
  (oracle's true speedup - reported configuration's true speedup) x 100, where a configuration's
  truth is the median over passes of its weighted mean log-ratio to the default of the same pass;
- launches (candidate + default + confirmation) and size-launches (sizes measured, summed);
- the share of runs that reported "the default is best".

A replay can be warm-started as a campaign warm-starts a case (`warm=`): configurations another
case found good, adapted to this grid's space, are queued after the default and measured before
the sampler explores. `replay_study` also returns the study, so a finished replay can serve as the
neighbour of another (autotune.campaign._warm.case_candidates).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from threadpoolctl import threadpool_limits

from .benchmarks import Disagreement, Mpi4pyBenchmark
from .controller import Controller
from .errors import InputError
from .export import best_config
from .launch import LocalLauncher, ReplayExecutor, StaticPool, space_from_grid
from .measure import MeasurementPlan, Measurer
from .objective import uniform_weights, weighted_score
from .probe import HostInfo
from .space import SearchSpace, TrialContext
from .storage import Config, Grid, StudyConfig, TrialKey, config_key, params_key, quiet_optuna
from .strategy import Strategy, make_strategy
from .warmstart import WarmConfig, to_params

HOST = HostInfo(host="replay", cpu_model="replay", cores=1, mpi="replay", ucx="", python="")
CONTEXT = TrialContext("replay", 1)  # the context of every replayed study (collective "replay")


@dataclass(frozen=True)
class ReplaySettings:
    """The study settings a replay runs with: the defaults of `autotune start`."""

    repetitions: int = 5
    stages: int = 2
    prune_after: int = 4
    p_threshold: float = 0.1
    confirm_top: int = 3
    confirm_rounds: int = 5
    confirm_max_rounds: int = 80
    # the confirmation widened as if the launches were timed by a benchmark this far off IMB-MPI1
    # (Benchmark.systematic): what the kernel's uncertainty costs a claim; 0 as a replay is judged
    systematic: float = 0.0


@dataclass(frozen=True)
class ConfirmedOutcome:
    """One confirmation candidate of a replayed run, with the grid's truth about it."""

    config: tuple[tuple[str, str], ...]
    true_speedup: float
    verdict: str  # confirm.CLAIMED, NOT_FASTER, UNDECIDED, FAILED
    rounds: int


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
    candidates: tuple[ConfirmedOutcome, ...] = ()
    confirm_rounds: int = 0
    warm_started: tuple[tuple[tuple[str, str], ...], ...] = ()  # queued after the default, adapted


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


class GridRecordings(Mpi4pyBenchmark):
    """Reads replayed launches (the executor serves a grid's recordings in the kernel's record
    format). A replayed claim is judged against the grid's own truth, read by the same recordings,
    so no systematic uncertainty against another benchmark widens it, unless one is asked for
    (`ReplaySettings.systematic`: what a claim timed by the kernel would cost)."""

    systematic = 0.0

    def __init__(self, systematic: float = 0.0) -> None:
        super().__init__()
        self.systematic = systematic

    def disagreement(self, collective: str) -> Disagreement:
        return Disagreement(self.systematic, measured="asked for by the replay"
                            if self.systematic else "")


def true_speedups(grid: Grid) -> dict[tuple, float]:
    """Each configuration's true speedup over the default, sizes weighted as a study weighs them
    (uniform over the grid's sizes)."""
    return {c: math.exp(-score) for c, score in grid.truth(uniform_weights(grid.sizes)).items()}


def mean_speedups(grid: Grid) -> dict[tuple, float]:
    """Each configuration's speedup as a replayed confirmation estimates it: per size the mean
    over passes of its log-ratio to the default of the same pass, weighted uniformly. (The median
    of true_speedups resists an odd pass; a replay draws passes uniformly, so its target is this.)"""
    default = grid.t_us.get(grid.default, {})
    weights = uniform_weights(grid.sizes)
    result = {}
    for config, passes in grid.t_us.items():
        per_size = {}
        for size in grid.sizes:
            ratios = [math.log(sizes[size] / default[p][size]) for p, sizes in passes.items()
                      if size in sizes and size in default.get(p, {})]
            if ratios:
                per_size[size] = sum(ratios) / len(ratios)
        if per_size:
            result[config] = math.exp(-weighted_score(per_size, weights))
    return result


@dataclass(frozen=True)
class WarmEntry:
    """A warm-start configuration adapted to a replayed grid's space."""

    params: dict[str, Any]
    note: str
    dropped: tuple[str, ...] = ()  # what the adaptation changed: knobs left out, values reset


def adapt_warm(warm: Sequence[Mapping[str, Any] | Any], space: SearchSpace) -> list[WarmEntry]:
    """Warm-start configurations (params dicts, or anything with `.params` and `.note` such as
    campaign._warm.Candidate) as params of `space`, the way `--warm-start` adapts its entries
    (warmstart.to_params): a knob the space lacks is dropped, a value it lacks becomes the knob's
    default ("unset"), a knob inactive under the adapted values is left out. The default and
    repeats are skipped: they are measured anyway."""
    default = params_key(space.defaults(CONTEXT))
    seen = {default}
    entries = []
    for item in warm:
        params = item.params if hasattr(item, "params") else item
        note = str(getattr(item, "note", "") or "warm start")
        adapted = to_params(WarmConfig("replay", 1, 1, dict(params), note), space, CONTEXT, {})
        key = params_key(adapted.params)
        if key in seen:
            continue
        seen.add(key)
        entries.append(WarmEntry(adapted.params, note, tuple(adapted.dropped)))
    return entries


def replay_once(grid: Grid, strategy: str, budget: int, seed: int,
                settings: ReplaySettings = ReplaySettings(),
                truth: dict[tuple, float] | None = None,
                warm: Sequence[Mapping[str, Any] | Any] = ()) -> ReplayRun:
    """One study of `budget` trials on the grid, as `autotune start` would run it; with `warm`,
    warm-started (see replay_study)."""
    return replay_study(grid, strategy, budget, seed, settings, truth, warm)[0]


def replay_study(grid: Grid, strategy: str | Strategy, budget: int, seed: int,
                 settings: ReplaySettings = ReplaySettings(),
                 truth: dict[tuple, float] | None = None,
                 warm: Sequence[Mapping[str, Any] | Any] = (),
                 storage: str | optuna.storages.BaseStorage | None = None
                 ) -> tuple[ReplayRun, optuna.Study]:
    """replay_once, and the study it ran (in memory, or in `storage`: an Optuna storage URL, or
    a storage as `open_storage` gives it).
    `strategy`: a name, or a Strategy built by the caller (instrumented, say). `warm`:
    configurations queued after the default (trial 0), adapted to the grid's space
    (adapt_warm), so they are trials 1.. and count against `budget` like any trial; the sampler
    proposes the rest."""
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
    measurer = Measurer(plan, None, GridRecordings(settings.systematic), executor=executor)
    chosen = strategy if isinstance(strategy, Strategy) else make_strategy(
        strategy, seed=seed, options=settings)
    study = optuna.create_study(sampler=chosen.sampler(), pruner=chosen.pruner(),
                                storage=storage)
    controller = Controller(study, space, config, measurer, HOST,
                            pool=StaticPool(LocalLauncher(mpirun="replay"), 1, 1),
                            strategy=chosen, seed=seed, confirm_top=settings.confirm_top,
                            confirm_rounds=settings.confirm_rounds,
                            confirm_max_rounds=settings.confirm_max_rounds)
    entries = adapt_warm(warm, space)
    if entries:
        controller.enqueue_default()  # trial 0, as run() would queue it; the warm entries follow
        for entry in entries:
            study.enqueue_trial(entry.params, user_attrs={TrialKey.WARM_START: entry.note})
    # One BLAS thread: a multi-threaded fit sums in another order, which flips near-tied
    # decisions, so a seed's trajectory would depend on the machine's core count.
    with threadpool_limits(limits=1):
        controller.run(budget)
    try:
        best = best_config(study)
        reported = () if best.is_default else config_key(best.params)
    except InputError:  # no completed trial: nothing was reported but the default
        reported = ()
    oracle = max(truth.values())
    confirmation = controller.summary.confirmation
    candidates = tuple(
        ConfirmedOutcome(config=config_key(c.params), true_speedup=truth.get(config_key(c.params), 1.0),
                         verdict=c.verdict, rounds=len(c.round_scores))
        for c in (confirmation.candidates if confirmation else ()))
    run = ReplayRun(strategy=chosen.name, budget=budget, seed=seed, reported=reported,
                    regret_pp=(oracle - truth.get(reported, 1.0)) * 100,
                    launches=executor.cost.launches, size_launches=executor.cost.size_launches,
                    default_reported=reported == (), candidates=candidates,
                    confirm_rounds=confirmation.rounds if confirmation else 0,
                    warm_started=tuple(config_key(e.params) for e in entries))
    return run, study


def planted(grid: Grid, config: Config, gain: float) -> Grid:
    """A copy of `grid` in which `config` is `gain` times faster than measured, in every pass and
    size: a known winner with the grid's real noise, to measure how often it is found."""
    if config not in grid.t_us:
        raise InputError(f"the grid has no configuration {dict(config)}")
    t_us = {c: {p: dict(sizes) for p, sizes in passes.items()} for c, passes in grid.t_us.items()}
    for sizes in t_us[config].values():
        for size in sizes:
            sizes[size] /= gain
    return Grid(knobs=grid.knobs, t_us=t_us, started=dict(grid.started), benchmark=grid.benchmark)


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
            figures.append(figures_of(batch, strategy, budget))
    return figures, runs


def figures_of(batch: Sequence[ReplayRun], strategy: str, budget: int) -> StrategyFigures:
    """The figures of one strategy at one budget over its runs (one per seed)."""
    regrets = [r.regret_pp for r in batch]
    return StrategyFigures(
        strategy=strategy, budget=budget,
        regret_pp_median=statistics.median(regrets),
        regret_pp_p90=float(np.percentile(regrets, 90)),
        launches_median=statistics.median(r.launches for r in batch),
        size_launches_median=statistics.median(r.size_launches for r in batch),
        default_reported_share=sum(r.default_reported for r in batch) / len(batch))


def aa_universe(grid: Grid, seed: int) -> Grid:
    """A/A replay grid: every configuration is the default in fact, with this machine's real noise.

    Every recorded launch of `grid` (an A/A recording: its knobs are dead, so each launch is a
    draw of the untuned stack) becomes one pass of the default; each other configuration gets the
    same launches in another order (a random derangement per configuration). Paired with the
    default of the same pass, a configuration then sees default-vs-default ratios whose mean over
    the passes is exactly 1 at every size: any gain claimed on this grid is false. (Replaying the
    recording as it is would not do: its configurations share each pass's default launch, so
    they inherit that launch's luck as a small true offset the replay can detect.)"""
    launches = [(c, p) for c, passes in sorted(grid.t_us.items()) for p in sorted(passes)]
    sizes = grid.sizes
    launches = [(c, p) for c, p in launches if all(s in grid.t_us[c][p] for s in sizes)]
    if len(launches) < 2:
        raise InputError("an A/A grid needs at least two complete launches")
    rng = random.Random(f"aa-universe-{seed}")  # not the replay's own stream of pass draws
    universe = Grid(knobs=grid.knobs, benchmark=grid.benchmark)
    for config in sorted(grid.t_us):
        order = list(range(len(launches)))
        if config != grid.default:
            while any(i == j for i, j in zip(order, range(len(order)))):
                rng.shuffle(order)
        for new_pass, source in enumerate(order):
            c, p = launches[source]
            for size in sizes:
                universe.add(config, new_pass, size, grid.t_us[c][p][size], grid.started[(c, p)])
    return universe


NOISY_PASS_SD = 0.10  # launch-to-launch level of a noisy 2-core VM (issue 55, AMD EPYC)
NOISY_SIZE_SD = 0.05  # size-to-size within one launch


def noisy_universe(grid: Grid, seed: int, values: int = 12, passes: int = 12,
                   pass_sd: float = NOISY_PASS_SD, size_sd: float = NOISY_SIZE_SD,
                   knob: str = "knob") -> Grid:
    """An A/A grid as noisy as a busy machine, from the real untuned launches of an A/A
    recording (`grid`): one knob of `values` values (the first is the default, "unset"), each
    `passes` launches, every launch a real one drawn at random, its level over the sizes (its
    mean log-time against the per-size median) rescaled to a standard deviation of `pass_sd`
    over the recording's launches and its size-to-size residuals to `size_sd`. Real launches
    keep the shape of real noise (its tails); the rescaling sets its width. A launch's level
    is its own: nothing is shared between the configurations of a pass, so the replay's
    pairing with the default launch of the same pass cancels nothing, as on a machine whose
    level changes from one launch to the next. Every configuration is the default in fact:
    the `passes` launches are drawn once, and every configuration gets the same ones, the
    default in their order and each other configuration in an order of its own with no launch
    in its own pass (a derangement, as `aa_universe` does). Its mean over the passes is then
    the default's exactly: any gain claimed is false (`planted` makes one real). Drawing each
    configuration's launches apart instead gave each a true offset of its own (10% launches,
    12 passes: about 4% from the default), which a long enough confirmation rightly found:
    "false" claims in a fifth of the seeds that were not false in the universe."""
    sizes = grid.sizes
    launches = [sizes_of for passes_ in grid.t_us.values() for sizes_of in passes_.values()
                if all(s in sizes_of for s in sizes)]
    if len(launches) < 2:
        raise InputError("a noisy universe needs at least two complete launches")
    logs = np.log(np.array([[launch[s] for s in sizes] for launch in launches]))
    median = np.median(logs, axis=0)
    level = (logs - median).mean(axis=1)
    residual = logs - median - level[:, None]
    level_sd, residual_sd = float(level.std()), float(residual.std())
    level = level / level_sd * pass_sd if level_sd > 0 else level
    residual = residual / residual_sd * size_sd if residual_sd > 0 else residual
    rng = random.Random(f"noisy-universe-{seed}")
    drawn = [rng.randrange(len(launches)) for _ in range(passes)]
    universe = Grid(knobs=(knob,), benchmark=grid.benchmark)
    for v in range(values):
        config: Config = () if v == 0 else ((knob, f"v{v}"),)
        order = list(range(passes))
        while v and passes > 1 and any(i == j for i, j in enumerate(order)):
            rng.shuffle(order)
        for p in range(passes):
            i = drawn[order[p]]
            for j, size in enumerate(sizes):
                universe.add(config, p, size, float(np.exp(median[j] + level[i] + residual[i, j])),
                             float(p))
    return universe


def plot_regret(figures: Sequence[StrategyFigures], path: Path, title: str) -> None:
    """PNG: median regret against median size-launches, one line per strategy, labelled with
    the budgets (a strategy run at one budget, the complete staged sweep, is one point)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for strategy in dict.fromkeys(f.strategy for f in figures):
        mine = sorted((f for f in figures if f.strategy == strategy),
                      key=lambda f: f.size_launches_median)
        ax.plot([f.size_launches_median for f in mine], [f.regret_pp_median for f in mine],
                marker="o", label=strategy)
        for f in mine:
            ax.annotate(str(f.budget), (f.size_launches_median, f.regret_pp_median),
                        textcoords="offset points", xytext=(3, 3), fontsize=7)
    ax.set_xlabel("size-launches (median over seeds)")
    ax.set_ylabel("regret of the reported configuration (pp, median)")
    ax.set_title(f"strategies replayed on {title} (labels: trials)")
    ax.grid(alpha=0.3)
    ax.legend()
    try:
        fig.savefig(path, dpi=120, bbox_inches="tight")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
