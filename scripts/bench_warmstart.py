#!/usr/bin/env python3
"""Does warm start save launches? Replayed on two recorded grids of related cases.

For each direction (source grid -> target grid) and each seed: the source case is replayed cold
(tpe, `--source-budget` trials), its study's `campaign._warm.case_candidates` (the confirmed
winner, then the next best candidates) are queued into the target case's study after the default,
as a campaign does, and the target is replayed warm at `--budgets` trials; the target is also
replayed cold at `--cold-budgets` trials with the same seeds. Figures per budget over the seeds,
as `autotune bench strategies` prints them (docs/strategies.md): regret of the reported
configuration (pp), launches (candidate + default + confirmation) and the share of runs reporting
the default. The source's launches are not counted: in a campaign the neighbour is tuned anyway.

Usage: .venv/bin/python scripts/bench_warmstart.py [--seeds 20] [--source-budget 20]
           [--budgets 3,5,8,10,15,20,30,40] [--cold-budgets 5,8,10,15,20,30,40]
           [--grids docs/grids/allgather-1n2p-imb.csv,docs/grids/allreduce-1n2p-imb.csv]
           [--plot warm-start.png]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from optuna.trial import TrialState

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autotune.campaign._warm import Candidate, case_candidates  # noqa: E402
from autotune.launch._replay import space_from_grid  # noqa: E402
from autotune.replay import (ReplayRun, StrategyFigures, adapt_warm, figures_of,  # noqa: E402
                             replay_study, true_speedups)
from autotune.storage._grid import Config, Grid, config_key, read_grid  # noqa: E402

GRIDS = "docs/grids/allgather-1n2p-imb.csv,docs/grids/allreduce-1n2p-imb.csv"
EPS = 1e-9  # regrets are compared up to rounding


@dataclass(frozen=True)
class Row:
    """The figures of `autotune bench strategies`, and two that tell a search that never visited
    a good configuration from a final pick that passed one over."""

    figures: StrategyFigures
    visited_pp_median: float  # regret of the best configuration the run measured (or pruned)
    within_1pp_share: float  # runs whose reported configuration is within 1 pp of the oracle


def replay_batch(grid: Grid, label: str, budget: int, truth: dict, args: argparse.Namespace,
                 warm: list[list[Candidate]] | None = None) -> Row:
    oracle = max(truth.values())
    runs, visited = [], []
    for seed in range(args.seeds):
        run, study = replay_study(grid, args.strategy, budget, seed, truth=truth,
                                  warm=warm[seed] if warm else ())
        runs.append(run)
        measured = [truth.get(config_key(t.params), 1.0) for t in study.get_trials(
            deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))]
        visited.append((oracle - max(measured, default=1.0)) * 100)
    return Row(figures_of(runs, label, budget), statistics.median(visited),
               sum(r.regret_pp <= 1.0 + EPS for r in runs) / len(runs))


@dataclass
class Direction:
    source: str
    target: str
    cold: list[Row]
    warm: list[Row]
    source_runs: list[ReplayRun]
    candidates: list[list[Candidate]]
    floor_pp: list[float]  # per seed: the best regret on the target among the adapted candidates
    winner_pp: list[float | None]  # per seed: the adapted confirmed winner's regret on the target


def label_of(path: Path) -> str:
    """`allgather-1n2p-imb.csv` -> `allgather-1n2p` (the campaign's case label)."""
    parts = path.stem.split("-")
    return "-".join(parts[:2]) if len(parts) >= 2 else path.stem


def describe(config: Config) -> str:
    return " ".join(f"{k}={v}" for k, v in config) or "(the untuned default)"


def shared_part(config: Config, knobs: set[str]) -> Config:
    return tuple((k, v) for k, v in config if k in knobs)


def patterns(grids: dict[str, Grid], truths: dict[str, dict], top: int) -> list[str]:
    """Top configurations of each grid, and whether they agree on the knobs both grids have."""
    names = list(grids)
    shared = set(grids[names[0]].knobs) & set(grids[names[1]].knobs)
    lines = [f"## Do the two cases' winners share knob values? (top {top} true configurations; "
             f"shared knobs: {', '.join(k for k in grids[names[0]].knobs if k in shared)})"]
    tops = {}
    for name in names:
        truth = truths[name]
        oracle = max(truth.values())
        ranked = sorted(truth, key=lambda c: -truth[c])
        tops[name] = ranked[:top]
        lines.append(f"{name}: oracle {oracle:.3f}x; default ranks {ranked.index(()) + 1} of "
                     f"{len(ranked)}")
        for i, config in enumerate(ranked[:top], 1):
            regret = (oracle - truth[config]) * 100
            lines.append(f"  {i}. {truth[config]:.3f}x (regret {regret:4.1f} pp)  {describe(config)}")
    for source, target in ((names[0], names[1]), (names[1], names[0])):
        space = space_from_grid(grids[target])
        truth = truths[target]
        oracle = max(truth.values())
        ranked = sorted(truth, key=lambda c: -truth[c])
        lines.append(f"{source}'s top {top}, adapted to {target} (a knob it lacks dropped, "
                     "its default kept):")
        for i, config in enumerate(tops[source], 1):
            entries = adapt_warm([dict(config)], space)
            adapted = config_key(entries[0].params) if entries else ()
            rank = ranked.index(adapted) + 1 if adapted in ranked else "-"
            lines.append(f"  {i}. -> {describe(adapted)}: {truth.get(adapted, 1.0):.3f}x, regret "
                         f"{(oracle - truth.get(adapted, 1.0)) * 100:.1f} pp, rank {rank} of "
                         f"{len(ranked)}")
    a, b = ({shared_part(c, shared) for c in tops[n]} for n in names)
    lines.append(f"top-{top} overlap on the shared knobs: {len(a & b)} of {top} "
                 f"({'; '.join(describe(c) for c in sorted(a & b)) or 'none'})")
    return lines


def run_direction(source_path: Path, target_path: Path, grids: dict[str, Grid],
                  truths: dict[str, dict], args: argparse.Namespace) -> Direction:
    source, target = label_of(source_path), label_of(target_path)
    src, tgt = grids[source], grids[target]
    truth = truths[target]
    oracle = max(truth.values())
    space = space_from_grid(tgt)
    source_runs, candidates, floor_pp, winner_pp = [], [], [], []
    for seed in range(args.seeds):
        run, study = replay_study(src, args.strategy, args.source_budget, seed,
                                  truth=truths[source])
        chosen = case_candidates(study, source)
        source_runs.append(run)
        candidates.append(chosen)
        adapted = [config_key(e.params) for e in adapt_warm(chosen, space)]
        floor_pp.append(min([(oracle - truth.get(c, 1.0)) * 100 for c in adapted]
                            + [(oracle - 1.0) * 100]))
        winner = [c for c in chosen if c.winner]
        if winner:
            entries = adapt_warm(winner, space)
            key = config_key(entries[0].params) if entries else ()
            winner_pp.append((oracle - truth.get(key, 1.0)) * 100)
        else:
            winner_pp.append(None)
    print(f"  {source} -> {target}: sources done", file=sys.stderr, flush=True)
    warm = [replay_batch(tgt, "warm", budget, truth, args, candidates) for budget in args.budgets]
    print(f"  {source} -> {target}: warm done", file=sys.stderr, flush=True)
    cold = [replay_batch(tgt, "cold", budget, truth, args) for budget in args.cold_budgets]
    print(f"  {source} -> {target}: cold done", file=sys.stderr, flush=True)
    return Direction(source, target, cold, warm, source_runs, candidates, floor_pp, winner_pp)


def first_reaching(rows: list[Row], target_pp: float) -> StrategyFigures | None:
    """The cheapest budget whose median regret is at most `target_pp`."""
    reached = [r.figures for r in rows if r.figures.regret_pp_median <= target_pp + EPS]
    return min(reached, key=lambda f: (f.launches_median, f.budget)) if reached else None


def table(d: Direction) -> list[str]:
    lines = ["| run | budget | regret pp median | regret pp p90 | launches median | "
             "size-launches median | default reported | within 1 pp | best visited pp median |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in d.cold + d.warm:
        f = row.figures
        lines.append(f"| {f.strategy} | {f.budget} | {f.regret_pp_median:.1f} | "
                     f"{f.regret_pp_p90:.1f} | {f.launches_median:.0f} | "
                     f"{f.size_launches_median:.0f} | {f.default_reported_share:.0%} | "
                     f"{row.within_1pp_share:.0%} | {row.visited_pp_median:.1f} |")
    return lines


def headline(d: Direction, source_budget: int) -> list[str]:
    lines = []
    by_budget = {r.figures.budget: r.figures for r in d.cold}
    targets = []
    if source_budget in by_budget:
        targets.append((f"cold@{source_budget}", by_budget[source_budget].regret_pp_median))
    largest = max((r.figures for r in d.cold), key=lambda f: f.budget)
    if largest.budget != source_budget:
        targets.append((f"cold@{largest.budget} (its largest budget)", largest.regret_pp_median))
    for name, target_pp in targets:
        cold, warm = first_reaching(d.cold, target_pp), first_reaching(d.warm, target_pp)
        assert cold is not None  # the target is a cold median itself
        if warm is None:
            lines.append(f"- to reach {name} median regret ({target_pp:.1f} pp): cold needs "
                         f"{cold.launches_median:.0f} launches ({cold.budget} trials); warm does "
                         f"not reach it at any budget tried (best median "
                         f"{min(r.figures.regret_pp_median for r in d.warm):.1f} pp)")
            continue
        saved = cold.launches_median - warm.launches_median
        lines.append(f"- to reach {name} median regret ({target_pp:.1f} pp): warm needs "
                     f"{warm.launches_median:.0f} launches ({warm.budget} trials, "
                     f"{warm.size_launches_median:.0f} size-launches), cold "
                     f"{cold.launches_median:.0f} ({cold.budget} trials, "
                     f"{cold.size_launches_median:.0f} size-launches): {saved:.0f} launches saved "
                     f"({saved / cold.launches_median:.0%})")
    return lines


def source_summary(d: Direction) -> list[str]:
    regrets = [r.regret_pp for r in d.source_runs]
    counts = [len(c) for c in d.candidates]
    winners = [w for w in d.winner_pp if w is not None]
    oracle_hit = sum(f <= EPS for f in d.floor_pp)
    return [
        f"source {d.source} cold: median regret {statistics.median(regrets):.1f} pp, median "
        f"launches {statistics.median(r.launches for r in d.source_runs):.0f}; candidates per "
        f"seed {min(counts)}-{max(counts)} (median {statistics.median(counts):.0f}); a confirmed "
        f"winner in {len(winners)} of {len(d.candidates)} seeds",
        f"on {d.target}: the adapted candidates include its oracle in {oracle_hit} of "
        f"{len(d.floor_pp)} seeds; best adapted candidate's regret median "
        f"{statistics.median(d.floor_pp):.1f} pp (p90 "
        f"{float(np.percentile(d.floor_pp, 90)):.1f}); adapted confirmed "
        f"winner's regret median "
        f"{statistics.median(winners) if winners else float('nan'):.1f} pp",
    ]


def plot(directions: list[Direction], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(directions), figsize=(6 * len(directions), 4.2), squeeze=False)
    for ax, d in zip(axes[0], directions):
        for rows, style in ((d.cold, "o-"), (d.warm, "s-")):
            figures = [r.figures for r in rows]
            ax.plot([f.launches_median for f in figures], [f.regret_pp_median for f in figures],
                    style, label=f"{figures[0].strategy}" + (f" (from {d.source})"
                                                             if rows is d.warm else ""))
            for f in figures:
                ax.annotate(str(f.budget), (f.launches_median, f.regret_pp_median),
                            textcoords="offset points", xytext=(3, 3), fontsize=7)
        ax.set_xlabel("launches (median over seeds)")
        ax.set_ylabel("regret of the reported configuration (pp, median)")
        ax.set_title(f"{d.target}: cold vs warm-started from {d.source}\n(labels: trials)",
                     fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _ints(text: str) -> list[int]:
    try:
        values = sorted({int(v) for v in text.split(",") if v.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("a list of positive integers such as 5,10,20") from None
    if not values or values[0] < 1:
        raise argparse.ArgumentTypeError("a list of positive integers such as 5,10,20")
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--source-budget", type=int, default=20,
                        help="trials of the cold source replay whose candidates warm the target")
    parser.add_argument("--budgets", type=_ints, default=_ints("3,5,8,10,15,20,30,40"),
                        help="trials of the warm-started target replays")
    parser.add_argument("--cold-budgets", type=_ints, default=_ints("5,8,10,15,20,30,40"),
                        help="trials of the cold target replays")
    parser.add_argument("--grids", default=GRIDS, help="two grids of related cases, A,B: "
                        "replayed A -> B and B -> A")
    parser.add_argument("--strategy", default="tpe")
    parser.add_argument("--top", type=int, default=5, help="true configurations listed per grid")
    parser.add_argument("--plot", type=Path, default=None,
                        help="PNG: median regret vs median launches, cold vs warm, per direction")
    args = parser.parse_args()
    paths = [Path(p) for p in args.grids.split(",") if p.strip()]
    if len(paths) != 2:
        parser.error("--grids takes exactly two grid files, A,B")
    if args.seeds < 1 or args.source_budget < 1:
        parser.error("--seeds and --source-budget must be at least 1")
    python = sys.executable
    if python.startswith(os.getcwd() + os.sep):
        python = os.path.relpath(python)
    print(f"$ {shlex.join([python, *sys.argv])}")
    print()
    grids = {label_of(p): read_grid(p) for p in paths}
    if len(grids) != 2:
        parser.error("the two grids must be of different cases")
    truths = {name: true_speedups(g) for name, g in grids.items()}
    print("\n".join(patterns(grids, truths, args.top)))
    directions = []
    for source, target in ((paths[0], paths[1]), (paths[1], paths[0])):
        d = run_direction(source, target, grids, truths, args)
        directions.append(d)
        print()
        print(f"## {d.source} -> {d.target}: {args.strategy}, {args.seeds} seeds, source "
              f"budget {args.source_budget} trials")
        print("\n".join(source_summary(d)))
        print()
        print("\n".join(table(d)))
        print()
        print("\n".join(headline(d, args.source_budget)))
        sys.stdout.flush()
    if args.plot:
        plot(directions, args.plot)
        print(f"\nplot: {args.plot}")


if __name__ == "__main__":
    main()
