"""What a search strategy is: it proposes configurations (an Optuna sampler over the space, and
`suggest` for the configuration of each asked trial), learns from their scores (Optuna's tell,
through the sampler), decides when a losing trial stops (a pruner over the per-launch scores)
and which trials deserve confirmation.

The controller runs the study loop and knows no sampler; the session builds the study with the
strategy's sampler and pruner. Random, grid and the staged sweep of seeds/000 fit the same shape.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from ..storage import TrialRecord

if TYPE_CHECKING:
    from ..space import SearchSpace, TrialContext


class Strategy(ABC):
    name: str = ""

    @abstractmethod
    def sampler(self, fixed: Mapping[str, Any] | None = None) -> optuna.samplers.BaseSampler:
        """Proposes configurations; `fixed` pins allocation context (NPS, ...) to this
        allocation's value, so trials from other allocations teach it but it never proposes
        what these nodes cannot run."""

    def suggest(self, trial: optuna.Trial, space: SearchSpace, ctx: TrialContext
                ) -> dict[str, Any]:
        """The configuration of an asked trial: by default the sampler's choice, asked define-by-
        run over the space (a strategy that proposes otherwise, a staged sweep, overrides it)."""
        return space.suggest(trial, ctx)

    def exhausted(self) -> bool:
        """True when the strategy has nothing left to propose (a finished grid)."""
        return False

    def pruner(self) -> optuna.pruners.BasePruner:
        """Stops losing trials; by default never."""
        return optuna.pruners.NopPruner()

    def should_prune(self, trial: optuna.Trial) -> bool:
        """Asked after each reported launch of a prunable trial."""
        return trial.should_prune()

    def confirm_candidates(self, study: optuna.Study, k: int) -> list[FrozenTrial]:
        """The k best completed non-default trials with distinct parameters that the search saw
        faster than the default (a value below 0): a candidate slower already is not worth rounds."""
        seen: set[tuple] = set()
        chosen: list[FrozenTrial] = []
        trials = sorted((t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                         if t.value is not None and t.value < 0
                         and not TrialRecord.from_trial(t).is_default), key=lambda t: t.value)
        for trial in trials:
            key = tuple(sorted((n, str(v)) for n, v in trial.params.items()))
            if key not in seen:
                seen.add(key)
                chosen.append(trial)
            if len(chosen) == k:
                break
        return chosen

    def describe(self) -> str:
        return self.name
