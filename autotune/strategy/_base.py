"""What a search strategy is: it proposes configurations (an Optuna sampler over the space, and
`suggest` for the configuration of each asked trial), learns from their scores (Optuna's tell,
through the sampler), decides when a losing trial stops (a pruner over the per-launch scores)
and which trials deserve confirmation.

The controller runs the study loop and knows no sampler; the session builds the study with the
strategy's sampler and pruner. Random, grid and the staged sweep of seeds/000 fit the same shape.
A strategy that also decides how much to measure (screen) learns the run's setup (`bind`), is told
every launch's score and every finished trial, and says after each launch whether the trial goes
on, stops as pruned, or stops as measured enough (`after_launch`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import optuna
from optuna.trial import FrozenTrial, TrialState

from .. import objective
from ..optionspec import OptionSpec
from ..storage import TrialRecord

if TYPE_CHECKING:
    from ..space import SearchSpace, TrialContext

Verdict = Literal["continue", "prune", "complete"]  # after a launch: go on, stop pruned, stop done


@dataclass(frozen=True)
class SearchSetup:
    """What a strategy may know of the run it proposes for: the study (with what it holds
    already), the space resolved for these nodes, the default, and how a trial is measured."""

    study: optuna.Study
    space: SearchSpace
    ctx: TrialContext
    context_values: Mapping[str, Any]
    default_params: Mapping[str, Any]
    blocks: tuple[tuple[int, ...], ...]  # the size blocks, in the plan's order
    weights: Mapping[int, float]  # of the sizes
    repetitions: int  # launches of each block a trial gets at most

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    @property
    def block_weights(self) -> tuple[float, ...]:
        return tuple(sum(self.weights.get(s, 0.0) for s in block) for block in self.blocks)

    def round_scores(self, raw_us: Mapping[int, Sequence[float]],
                     default_us: Mapping[int, Sequence[float]]) -> list[float]:
        """A stored trial's score per round (its r-th launch of every block, each against its
        paired default), for the rounds every block has."""
        per_block: list[list[float]] = []
        for block in self.blocks:
            sizes = [s for s in block if self.weights.get(s, 0.0) > 0]
            n = min((min(len(raw_us.get(s, ())), len(default_us.get(s, ()))) for s in sizes),
                    default=0)
            per_block.append([objective.weighted_score(
                {s: math.log(raw_us[s][r] / default_us[s][r]) for s in sizes}, self.weights)
                for r in range(n)])
        rounds = min((len(b) for b in per_block), default=0)
        total = sum(self.block_weights) or 1.0
        return [sum(w * b[r] for w, b in zip(self.block_weights, per_block)) / total
                for r in range(rounds)]


class Strategy(ABC):
    name: str = ""
    summary: str = ""  # one phrase for `start --strategy`'s help
    prunes: str = ""  # how --prune stops a losing configuration, for its help ("": it does not)
    cli_options: ClassVar[tuple[OptionSpec, ...]] = ()  # start's options of its own
    launch_order: str = "blocks"  # "blocks": block by block; "rounds": one launch of each in turn
    baseline_every: int | None = None  # candidate launches per default launch (None: --baseline-every)

    @classmethod
    def from_options(cls, seed: int | None, *, prune: bool = True, **declared: Any) -> Strategy:
        """Made from `start`'s options: --prune, and the values of the options it declares
        (`cli_options`), by field name."""
        return cls(seed)

    def notes(self, launches_per_trial: int) -> list[str]:
        """What a user should know before the study about how it will prune (one line each)."""
        return []

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

    def measures_again(self, params: Mapping[str, Any]) -> bool:
        """Whether proposing a configuration measured before is meant (more rounds of one that
        was stopped early); otherwise the controller measures an unmeasured one instead."""
        return False

    def bind(self, setup: SearchSetup) -> None:
        """Told once, before the first trial, what the run is."""

    def launch_scored(self, trial_number: int, block: int, score: float) -> None:
        """Told after each launch of a trial: its block and weighted score against its default."""

    def after_launch(self, trial: optuna.Trial, is_default: bool) -> Verdict:
        """Asked after each launch but a trial's last: by default, the pruner decides, and the
        default configuration is always measured in full."""
        return "prune" if not is_default and self.should_prune(trial) else "continue"

    def trial_finished(self, number: int, params: dict[str, Any], state: str) -> None:
        """Told when a trial ends (COMPLETE, PRUNED or FAIL)."""

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
