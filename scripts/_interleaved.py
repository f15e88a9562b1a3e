"""Interleaved rounds of many configurations against the untuned stack, with one or several
benchmarks, for the benchmark scripts (bench_agreement.py, check_quickstart.py).

Each round visits the arms in a random order, in groups; for each group and each benchmark (in a
random order) one launch of the untuned stack, then each arm of the group (random order). An
arm's score in a round is the weighted mean over the sizes of log(t_arm / t_default) against the
default launch of its group and benchmark: paired with a launch seconds before it, so the
machine's slow level changes (minutes) cancel.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autotune import objective  # noqa: E402
from autotune.measure import LaunchFailed, Measurer  # noqa: E402
from autotune.space import LaunchSettings  # noqa: E402
from autotune.stats import mean_interval  # noqa: E402


@dataclass
class Arm:
    label: str
    settings: LaunchSettings
    params: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)  # benchmark -> per round
    # benchmark -> per round: {size: log(t_arm / t_default)} (the per-size evidence)
    per_size: dict[str, list[dict[int, float]]] = field(default_factory=dict)
    rounds: dict[str, list[int]] = field(default_factory=dict)  # benchmark -> round of each score
    # benchmark -> round -> {size: log t_max}: to compare two arms directly, round by round
    log_t: dict[str, dict[int, dict[int, float]]] = field(default_factory=dict)

    def speedup(self, bench: str) -> tuple[float, float, float] | None:
        """exp(-mean score) with its Student-t 95% interval (speedup, low, high)."""
        values = self.scores.get(bench, [])
        return mean_interval(values).speedup() if len(values) >= 2 else None

    def median_speedup(self, bench: str) -> float | None:
        values = self.scores.get(bench, [])
        return math.exp(-statistics.median(values)) if values else None

    def against(self, other: Arm, bench: str, weights: Mapping[int, float]) -> list[float]:
        """Per round both arms ran: the weighted mean over sizes of log(t_other / t_self), this
        arm's speedup over `other` in log units, measured in the same round (no default in
        between: the two arms themselves are paired)."""
        mine, theirs = self.log_t.get(bench, {}), other.log_t.get(bench, {})
        return [objective.weighted_score({s: theirs[r][s] - mine[r][s] for s in mine[r]
                                          if s in theirs[r]}, weights)
                for r in sorted(mine) if r in theirs]


def run_rounds(arms: list[Arm], default: LaunchSettings, measurers: Mapping[str, Measurer],
               rounds: int, *, group: int, rng: random.Random,
               weights: Mapping[int, float] | Mapping[str, Mapping[int, float]],
               failures: list[str], say=lambda text: print(text, file=sys.stderr)) -> None:
    """`weights`: by size, or by benchmark name and size where their sizes differ (an
    application against a microbenchmark); each benchmark runs the first launch of its plan."""
    by_bench = {b: (weights[b] if b in weights else weights) for b in measurers}  # type: ignore[index]
    for r in range(rounds):
        order = list(arms)
        rng.shuffle(order)
        for start in range(0, len(order), group):
            chunk = order[start:start + group]
            benches = list(measurers)
            rng.shuffle(benches)
            for bench in benches:
                measurer = measurers[bench]
                launch = measurer.plan.launches()[0]
                try:
                    ref = measurer.run_launch(default, launch, seed=rng.randrange(2**31),
                                              is_default=True)
                except LaunchFailed as exc:
                    failures.append(f"{bench} default: {exc}")
                    continue
                rng.shuffle(chunk)
                for arm in chunk:
                    try:
                        record = measurer.run_launch(arm.settings, launch,
                                                     seed=rng.randrange(2**31), params=arm.params)
                    except LaunchFailed as exc:
                        failures.append(f"{bench} {arm.label}: {exc}")
                        continue
                    ratios = {s: math.log(t / ref.t_max_us[s])
                              for s, t in record.t_max_us.items()}
                    arm.scores.setdefault(bench, []).append(objective.weighted_score(
                        ratios, by_bench[bench]))
                    arm.per_size.setdefault(bench, []).append(ratios)
                    arm.rounds.setdefault(bench, []).append(r)
                    arm.log_t.setdefault(bench, {})[r] = {
                        s: math.log(t) for s, t in record.t_max_us.items()}
        say(f"round {r + 1}/{rounds} done")
