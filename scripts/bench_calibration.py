#!/usr/bin/env python3
"""Calibration of autotune's claims on replayed grids: false claims and detection, many seeds.

The product's own controller, strategy, pruner and confirmation run on launches served from real
recordings (autotune.replay); a replay compares methods, it never claims a gain on a machine.

- A/A: the dead-knob recording (docs/grids/aa-*.csv) re-paired so that every configuration is
  the default in fact (replay.aa_universe): a run that reports any configuration but the default
  makes a false claim. Goal: <= 5% of runs.
- Planted gain: the same A/A universe with one configuration made `--gain` times faster in every
  pass and size: a run that reports it finds it. Goal: >= 90% of runs.
- Noisy A/A and planted (`--noisy-budget` trials, 20 by default): a universe as noisy as a busy
  2-core VM (replay.noisy_universe: real untuned launches of the same recording, rescaled to
  10% launch to launch and 5% size to size, nothing shared between the launches of a pass), one
  knob of 12 values all truly the default; planted: one of the 11 others (a different one per
  seed) made `--gain` times faster. Goals: false claims <= 5%, found >= 90%.
- Real grids (docs/grids/allreduce-*, allgather-*): runs reporting a configuration that is truly
  slower than the default, candidates truly slower yet claimed, and candidates truly >= `--gain`
  faster yet not claimed. "Truly" is what a replayed confirmation estimates: per size the mean
  over the grid's passes of the log-ratio to the default of the same pass (replay.mean_speedups).
  Regret uses the grid's median truth, as docs/strategies.md does.

Usage: .venv/bin/python scripts/bench_calibration.py [--seeds 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autotune.endgame.confirm import CLAIMED  # noqa: E402
from autotune.replay import (ReplayRun, ReplaySettings, aa_universe,  # noqa: E402
                             mean_speedups, noisy_universe, planted, replay_once, true_speedups)
from autotune.storage._grid import read_grid  # noqa: E402
from autotune.strategy import DEFAULT_STRATEGY  # noqa: E402

AA_GRID = ROOT / "docs/grids/aa-allreduce-1n2p-imb.csv"
REAL_GRIDS = (ROOT / "docs/grids/allreduce-1n2p-imb.csv", ROOT / "docs/grids/allgather-1n2p-imb.csv")


@dataclass(frozen=True)
class Rate:
    hits: int
    total: int

    def describe(self) -> str:
        if not self.total:
            return "0/0"
        ci = stats.binomtest(self.hits, self.total).proportion_ci(0.95, method="exact")
        return (f"{self.hits}/{self.total} = {100 * self.hits / self.total:.1f}% "
                f"(95% CI {100 * ci.low:.1f}-{100 * ci.high:.1f}%)")

    def to_dict(self) -> dict[str, float]:
        return {"hits": self.hits, "total": self.total,
                "rate": self.hits / self.total if self.total else 0.0}


def costs(runs: list[ReplayRun]) -> str:
    return (f"median size-launches {statistics.median(r.size_launches for r in runs):.0f}, "
            f"median confirmation rounds {statistics.median(r.confirm_rounds for r in runs):.0f}")


def aa_check(args: argparse.Namespace, settings: ReplaySettings) -> dict:
    recording = read_grid(args.aa_grid)
    runs = [replay_once(aa_universe(recording, seed), args.strategy, args.budget, seed, settings)
            for seed in range(args.seeds)]
    false = Rate(sum(not r.default_reported for r in runs), len(runs))
    verdict = "met" if false.hits / false.total <= 0.05 else "MISSED"
    print(f"A/A ({args.aa_grid.name}, re-paired; {args.strategy}, {args.budget} trials, "
          f"{args.seeds} seeds): false claims {false.describe()}; goal <= 5%: {verdict}; "
          f"{costs(runs)}")
    return {"false_claims": false.to_dict(), "goal_met": verdict == "met"}


def planted_check(args: argparse.Namespace, settings: ReplaySettings) -> dict:
    recording = read_grid(args.aa_grid)
    target = sorted(c for c in recording.t_us if c != recording.default)[args.planted_index]
    runs = []
    for seed in range(args.seeds):
        grid = planted(aa_universe(recording, seed), target, args.gain)
        runs.append(replay_once(grid, args.strategy, args.budget, seed, settings))
    found = Rate(sum(r.reported == target for r in runs), len(runs))
    confirmed = [c for r in runs for c in r.candidates if c.config == target]
    claimed = Rate(sum(c.verdict == CLAIMED for c in confirmed), len(confirmed))
    never = sum(all(c.config != target for c in r.candidates) for r in runs)
    verdict = "met" if found.hits / found.total >= 0.90 else "MISSED"
    name = ",".join(f"{k}={v}" for k, v in target)
    print(f"planted {args.gain:.2f}x ({name}): found {found.describe()}; goal >= 90%: {verdict}; "
          f"claimed when confirmed {claimed.describe()}; never among the candidates in {never} "
          f"runs; {costs(runs)}")
    return {"found": found.to_dict(), "claimed_when_confirmed": claimed.to_dict(),
            "never_candidate": never, "goal_met": verdict == "met"}


def noisy_checks(args: argparse.Namespace, settings: ReplaySettings) -> dict:
    """The A/A and planted checks on universes as noisy as a busy machine (noisy_universe)."""
    recording = read_grid(args.aa_grid)
    aa, found_runs, targets = [], [], []
    for seed in range(args.seeds):
        universe = noisy_universe(recording, seed)
        aa.append(replay_once(universe, args.strategy, args.noisy_budget, seed, settings))
        others = sorted(c for c in universe.t_us if c != universe.default)
        target = others[seed % len(others)]
        targets.append(target)
        found_runs.append(replay_once(planted(universe, target, args.gain), args.strategy,
                                      args.noisy_budget, seed, settings))
    false = Rate(sum(not r.default_reported for r in aa), len(aa))
    found = Rate(sum(r.reported == t for r, t in zip(found_runs, targets)), len(found_runs))
    never = sum(all(c.config != t for c in r.candidates) for r, t in zip(found_runs, targets))
    confirmed = [c for r, t in zip(found_runs, targets) for c in r.candidates if c.config == t]
    claimed = Rate(sum(c.verdict == CLAIMED for c in confirmed), len(confirmed))
    aa_ok = false.hits / false.total <= 0.05
    found_ok = found.hits / found.total >= 0.90
    print(f"noisy A/A (10% per pass, 5% per size, 12 values; {args.strategy}, "
          f"{args.noisy_budget} trials, {args.seeds} seeds): false claims {false.describe()}; "
          f"goal <= 5%: {'met' if aa_ok else 'MISSED'}; {costs(aa)}")
    print(f"noisy planted {args.gain:.2f}x (one of 11 values): found {found.describe()}; goal "
          f">= 90%: {'met' if found_ok else 'MISSED'}; claimed when confirmed "
          f"{claimed.describe()}; never among the candidates in {never} runs; {costs(found_runs)}")
    return {"false_claims": false.to_dict(), "found": found.to_dict(),
            "claimed_when_confirmed": claimed.to_dict(), "never_candidate": never,
            "goal_met": aa_ok and found_ok}


def real_check(path: Path, args: argparse.Namespace, settings: ReplaySettings) -> dict:
    grid = read_grid(path)
    runs = [replay_once(grid, args.strategy, args.real_budget, seed, settings, true_speedups(grid))
            for seed in range(args.seeds)]
    mean = mean_speedups(grid)
    slower_reported = Rate(sum(mean.get(r.reported, 1.0) < 1.0 for r in runs), len(runs))
    candidates = [c for r in runs for c in r.candidates]
    slower = [c for c in candidates if mean.get(c.config, 1.0) < 1.0]
    faster = [c for c in candidates if mean.get(c.config, 1.0) >= args.gain]
    slower_claimed = Rate(sum(c.verdict == CLAIMED for c in slower), len(slower))
    faster_missed = Rate(sum(c.verdict != CLAIMED for c in faster), len(faster))
    regret = statistics.median(r.regret_pp for r in runs)
    print(f"real grid {path.name} ({args.strategy}, {args.real_budget} trials): reported a truly "
          f"slower configuration {slower_reported.describe()}; truly slower candidates claimed "
          f"{slower_claimed.describe()}; truly >= {args.gain:.2f}x candidates not claimed "
          f"{faster_missed.describe()}; median regret {regret:.1f} pp; {costs(runs)}")
    return {"grid": path.name, "slower_reported": slower_reported.to_dict(),
            "slower_claimed": slower_claimed.to_dict(), "faster_missed": faster_missed.to_dict(),
            "regret_pp_median": regret}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--strategy", default=DEFAULT_STRATEGY, help="default: start's default")
    parser.add_argument("--budget", type=int, default=10, help="trials per A/A or planted run")
    parser.add_argument("--real-budget", type=int, default=20, help="trials per real-grid run")
    parser.add_argument("--noisy-budget", type=int, default=20,
                        help="trials per run on the noisy universes")
    parser.add_argument("--only", default="",
                        help="comma-separated: aa, planted, noisy, real (default: all)")
    parser.add_argument("--gain", type=float, default=1.10)
    parser.add_argument("--aa-grid", type=Path, default=AA_GRID)
    parser.add_argument("--planted-index", type=int, default=0,
                        help="which non-default configuration of the A/A grid gets the gain")
    parser.add_argument("--confirm-rounds", type=int, default=ReplaySettings.confirm_rounds)
    parser.add_argument("--confirm-max-rounds", type=int,
                        default=ReplaySettings.confirm_max_rounds)
    parser.add_argument("--systematic", type=float, default=0.0,
                        help="widen every claim as a study timed by a benchmark this far off "
                             "IMB-MPI1 would (log units; the kernel's: 0.03): what it costs")
    parser.add_argument("--no-real", action="store_true", help="skip the real grids")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.seeds < 1 or args.budget < 1 or args.real_budget < 1:
        parser.error("--seeds, --budget and --real-budget must be at least 1")
    if not math.isfinite(args.systematic) or args.systematic < 0:
        parser.error("--systematic must be a finite number >= 0 (log units; the kernel's: 0.03)")
    others = len(read_grid(args.aa_grid).t_us) - 1
    if not 0 <= args.planted_index < others:
        parser.error(f"--planted-index must be in 0..{others - 1}")
    settings = ReplaySettings(confirm_rounds=args.confirm_rounds,
                              confirm_max_rounds=args.confirm_max_rounds,
                              systematic=args.systematic)
    only = set(args.only.split(",")) if args.only else {"aa", "planted", "noisy", "real"}
    if args.no_real:
        only.discard("real")
    figures: dict = {}
    if "aa" in only:
        figures["aa"] = aa_check(args, settings)
    if "planted" in only:
        figures["planted"] = planted_check(args, settings)
    if "noisy" in only:
        figures["noisy"] = noisy_checks(args, settings)
    if "real" in only:
        figures["real"] = [real_check(path, args, settings) for path in REAL_GRIDS]
    if args.json:
        print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
