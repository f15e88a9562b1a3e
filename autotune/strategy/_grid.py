"""Exhaustive search: every configuration of the (finite, conditional) space once, in a seeded
random order; what the manual method does when it does not stage its sweeps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import optuna

from ._base import Strategy


class _AskTellBruteForce(optuna.samplers.BruteForceSampler):
    """BruteForceSampler ends `optimize` with study.stop() once every branch is explored, which
    raises outside `optimize`; under ask/tell it only says so (the controller asks)."""

    done = False

    def after_trial(self, study, trial, state, values) -> None:  # noqa: ANN001 - Optuna's hook
        study.stop = self._mark_done  # shadows the method for this call only
        try:
            super().after_trial(study, trial, state, values)
        finally:
            del study.stop

    def _mark_done(self) -> None:
        self.done = True


class GridStrategy(Strategy):
    """Optuna's BruteForceSampler walks the define-by-run space, conditional knobs included,
    and never proposes a configuration twice; no pruning; the run ends when all are measured."""

    name = "grid"
    summary = "every configuration once"

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._sampler = _AskTellBruteForce(seed=seed)

    def sampler(self, fixed: Mapping[str, Any] | None = None) -> optuna.samplers.BaseSampler:
        if fixed:
            return optuna.samplers.PartialFixedSampler(dict(fixed), self._sampler)
        return self._sampler

    def exhausted(self) -> bool:
        return self._sampler.done

    def describe(self) -> str:
        return "grid (every configuration once), no pruning"
