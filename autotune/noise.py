"""The noise floor of an allocation: how far two launches of the very same (default)
configuration differ, from the default launches interleaved with the trials.

Consecutive default launches of the same size block on the same hosts in the same run form an
A/A pair; the floor is the 95th percentile of |weighted log-ratio| over the pairs. A gain below it
cannot be seen in one launch pair; it may still show on average over many, which the confirmation
interval says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import optuna

from . import objective
from .storage import BaselineLaunch, load_baselines, stored_config

MIN_PAIRS = 10  # a 95th percentile of fewer pairs is their maximum


@dataclass(frozen=True)
class NoiseFloor:
    pairs: int  # A/A pairs it is computed from
    spread: float  # 95th percentile of |weighted log-ratio| between paired default launches

    @property
    def percent(self) -> float:
        """The floor as users read it: two runs of the same configuration differ by up to this %."""
        return (math.exp(self.spread) - 1) * 100

    def covers(self, speedup: float) -> bool:
        """Whether a speedup (or slowdown) lies within the floor."""
        return abs(math.log(speedup)) <= self.spread

    def describe(self) -> str:
        return (f"noise floor: two launches of the default differ by up to {self.percent:.1f}% "
                f"(95th percentile of {self.pairs} default-vs-default launch pairs; a claim "
                "averages many launches and is finer than this)")

    def to_dict(self) -> dict[str, float]:
        return {"pairs": self.pairs, "spread": self.spread, "percent": self.percent}


def aa_scores(baselines: Sequence[BaselineLaunch], weights: Mapping[int, float]) -> list[float]:
    """Weighted log-ratio of each default launch to the previous one of its block, hosts and run."""
    previous: dict[tuple, BaselineLaunch] = {}
    scores = []
    for launch in sorted(baselines, key=lambda b: (b.started, b.id)):
        key = (launch.run_id, launch.block, tuple(launch.hosts))
        before = previous.get(key)
        previous[key] = launch
        if before is None:
            continue
        common = {s: objective.log_ratio(t, before.t_max_us[s])
                  for s, t in launch.t_max_us.items()
                  if s in before.t_max_us and t > 0 and before.t_max_us[s] > 0}
        try:
            scores.append(objective.weighted_score(common, weights))
        except ValueError:  # no weighted size in common
            continue
    return scores


def noise_floor_of(baselines: Sequence[BaselineLaunch],
                   weights: Mapping[int, float]) -> NoiseFloor | None:
    scores = aa_scores(baselines, weights)
    if len(scores) < MIN_PAIRS:
        return None
    return NoiseFloor(pairs=len(scores), spread=float(np.percentile(np.abs(scores), 95)))


def noise_floor(study: optuna.Study) -> NoiseFloor | None:
    """The study's noise floor, or None before it has MIN_PAIRS default-vs-default pairs."""
    config = stored_config(study)
    if config is None:
        return None
    return noise_floor_of(load_baselines(study), config.weights)
