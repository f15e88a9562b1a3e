#!/usr/bin/env python3
"""Benchmark (not a test): what the default strategy costs the controller per trial, at 1,000
trials with SQLite storage, against what a trial costs in benchmark time.

A study of `--trials` trials runs on a replayed grid (the product's own controller, strategy and
confirmation; launches served from the recording) with an SQLite file as its storage, opened as
`start` opens it (open_storage), so every ask, report and tell goes through the database as in a
real study. Every call the controller makes into the strategy (bind, suggest, launch_scored,
after_launch, measures_again, trial_finished, confirm_candidates) is timed. A trial's benchmark
time is its launches (its own and its share of default launches) times the seconds of one launch
measured on this machine: `--launch-seconds`, or measured here with 6 real launches of the
mpi4py kernel (2 ranks, the untuned stack, one block of the default study's sizes). Prints the
strategy's seconds per trial by hundreds of trials, the share of a trial's benchmark time at the
end, and the controller's storage time in all.

    .venv/bin/python scripts/bench_strategy_cost.py docs/grids/allreduce-planted-1n2p-imb.parquet
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autotune.replay import replay_study  # noqa: E402
from autotune.storage import PatientStorage, open_storage  # noqa: E402
from autotune.storage._grid import read_grid  # noqa: E402
from autotune.strategy import ScreenStrategy  # noqa: E402

HOOKS = ("bind", "suggest", "launch_scored", "after_launch", "measures_again", "trial_finished",
         "confirm_candidates")


class Timed(ScreenStrategy):
    """The screen strategy with every hook timed (seconds per hook, per trial number)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.seconds: dict[str, float] = defaultdict(float)
        self.per_trial: dict[int, float] = defaultdict(float)
        self.current = -1

    def _timed(self, name: str, trial: int | None, call):  # noqa: ANN001
        t0 = time.perf_counter()
        try:
            return call()
        finally:
            spent = time.perf_counter() - t0
            self.seconds[name] += spent
            self.per_trial[self.current if trial is None else trial] += spent


class TimedStorage:
    """Seconds in the storage, as the product opens it (open_storage: SQLite behind
    PatientStorage): all of it per trial, and the part that writes a trial's params (inside
    the strategy's suggest, but the same for every strategy)."""

    seconds = 0.0  # all storage calls
    params = 0.0  # the params' writes
    per_trial: dict[int, float] = defaultdict(float)  # the params' writes, by trial number
    strategy: Timed | None = None

    @classmethod
    def install(cls, strategy: Timed) -> None:
        cls.strategy = strategy
        base = PatientStorage.patiently

        def patiently(self, name, method, *args, **kwargs):  # noqa: ANN001, ANN202
            t0 = time.perf_counter()
            try:
                return base(self, name, method, *args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                cls.seconds += spent
                if name in ("set_trial_params", "set_trial_param"):
                    cls.params += spent
                    cls.per_trial[cls.strategy.current] += spent
        PatientStorage.patiently = patiently


for _hook in HOOKS:
    def _make(name: str):  # noqa: ANN202
        base = getattr(ScreenStrategy, name)

        def hook(self, *args, **kwargs):  # noqa: ANN001, ANN202
            trial = None
            if name == "suggest":
                self.current = args[0].number
                trial = self.current
            elif name in ("launch_scored", "trial_finished"):
                trial = args[0]
            elif name == "after_launch":
                trial = args[0].number
            return self._timed(name, trial, lambda: base(self, *args, **kwargs))
        return hook
    setattr(Timed, _hook, _make(_hook))


def launch_seconds() -> float:
    """Seconds of one real launch here: the kernel, 2 ranks, the untuned stack, 8 B-1 KiB and
    2 KiB-1 MiB blocks of the default sizes (the median of 6 launches)."""
    from autotune.benchmarks import Mpi4pyBenchmark
    from autotune.launch import LocalLauncher
    from autotune.measure import MeasurementPlan, Measurer
    from autotune.space import LaunchSettings
    from autotune.units import parse_size_range

    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=parse_size_range("8:1m"),
                           repetitions=3, stages=2, time_per_size=0.02)
    measurer = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark())
    return statistics.median(measurer.run_launch(LaunchSettings(), launch, seed=i).seconds
                             for i, launch in enumerate(plan.launches()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grid", type=Path)
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--launch-seconds", type=float, default=None)
    args = parser.parse_args()
    per_launch = args.launch_seconds or launch_seconds()
    grid = read_grid(args.grid)
    strategy = Timed(args.seed)
    TimedStorage.install(strategy)
    with tempfile.TemporaryDirectory() as tmp:
        storage = open_storage(f"sqlite:///{tmp}/cost.db")
        t0 = time.perf_counter()
        run, study = replay_study(grid, strategy, args.trials, args.seed, storage=storage)
        wall = time.perf_counter() - t0
    trials = len(study.trials)
    launches_per_trial = run.launches / max(1, trials)
    bench = launches_per_trial * per_launch
    print(f"{args.grid.name}: {len(grid.t_us)} configurations; {trials} trials in {wall:.0f} s of "
          f"replay (SQLite); {run.launches} launches ({launches_per_trial:.2f} per trial, default "
          f"launches and confirmation included); one launch here {per_launch:.2f} s, so a trial "
          f"costs {bench:.2f} s of benchmark time")
    print("trials\tstrategy ms per trial (mean)\tof which params written to storage\t"
          "share of a trial's benchmark time")
    numbers = sorted(n for n in strategy.per_trial if n >= 0)
    for start in range(0, len(numbers), 100):
        chunk = numbers[start:start + 100]
        mean = statistics.fmean(strategy.per_trial[n] for n in chunk)
        writes = statistics.fmean(TimedStorage.per_trial[n] for n in chunk)
        print(f"{start}-{start + len(chunk) - 1}\t{mean * 1000:.1f}\t{writes * 1000:.1f}\t"
              f"{100 * mean / bench:.2f}%")
    last = numbers[-100:]
    mean = statistics.fmean(strategy.per_trial[n] for n in last)
    writes = statistics.fmean(TimedStorage.per_trial[n] for n in last)
    print("by hook (s, whole run): " + ", ".join(f"{k} {v:.1f}" for k, v in
                                                 sorted(strategy.seconds.items()))
          + f"; params written to storage (within suggest) {TimedStorage.params:.1f}")
    share = mean / bench
    print(f"at {trials} trials: {1000 * mean:.1f} ms per trial = {100 * share:.2f}% of a "
          f"trial's benchmark time (goal <= 1%): {'met' if share <= 0.01 else 'MISSED'}; "
          f"without writing the params ({1000 * writes:.1f} ms, the same for any strategy): "
          f"{1000 * (mean - writes):.1f} ms = {100 * (mean - writes) / bench:.2f}%")
    storage_ms = 1000 * TimedStorage.seconds / max(1, trials)
    print(f"the controller's storage calls in all (params, measurements, records, states; the "
          f"params' writes included): {storage_ms:.1f} ms per trial = "
          f"{100 * storage_ms / 1000 / bench:.2f}% of a trial's benchmark time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
