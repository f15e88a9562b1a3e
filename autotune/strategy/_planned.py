"""A sampler that gives each asked parameter the value its strategy planned for the trial: for
strategies that choose whole configurations themselves (the staged sweep, screening)."""

from __future__ import annotations

from typing import Any

import optuna


class PlannedSampler(optuna.samplers.BaseSampler):
    """Gives each asked parameter the planned value (the strategy sets `plan` per trial)."""

    def __init__(self) -> None:
        self.plan: dict[str, Any] = {}

    def infer_relative_search_space(self, study, trial):  # noqa: ANN001 - Optuna's hooks
        return {}

    def sample_relative(self, study, trial, search_space):  # noqa: ANN001
        return {}

    def sample_independent(self, study, trial, param_name, param_distribution):  # noqa: ANN001
        return self.plan[param_name]
