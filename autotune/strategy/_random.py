"""Random search: the baseline any strategy must beat at equal cost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import optuna

from ._base import Strategy


class RandomStrategy(Strategy):
    """Uniform over the (conditional) space; no pruning, so each proposal is measured in full."""

    name = "random"
    summary = "uniform over the space"

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def sampler(self, fixed: Mapping[str, Any] | None = None) -> optuna.samplers.BaseSampler:
        sampler = optuna.samplers.RandomSampler(seed=self.seed)
        if fixed:
            return optuna.samplers.PartialFixedSampler(dict(fixed), sampler)
        return sampler

    def describe(self) -> str:
        return "random, no pruning"
