"""TPE over the space with Wilcoxon pruning against the best trial (wave 1's strategy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import optuna

from ..optionspec import OptionSpec
from ._base import Strategy


class TpeStrategy(Strategy):
    """Multivariate, grouped TPE (the space is conditional: UCX knobs only under pml ucx, segment
    sizes only for segmenting algorithms); the constant liar keeps parallel trials apart.

    Pruning: a Wilcoxon signed-rank test of this trial's per-launch scores against the best
    trial's. One step per launch (the launch's index in the plan, the same for every trial),
    valued at the weighted mean log-ratio of that launch's sizes. Launches, not sizes, are the
    unit of evidence: a latency level holds for a whole launch and moves all its small sizes
    together, so per-size steps made the test overconfident (19 of 20 trials pruned in a trial run).
    """

    name = "tpe"
    summary = "Optuna's TPE, Wilcoxon pruning"
    prunes = "Wilcoxon test against the best trial"
    cli_options = (
        OptionSpec("--prune-after", "tpe: launches a trial gets before it may be pruned (at "
                   "p<0.1 the exact test needs 4)", kind="int", default=4, low=2,
                   show_default=True),
        OptionSpec("--p-threshold", "tpe: p-value below which a trial is pruned", kind="float",
                   default=0.1, low=0, high=1, open_low=True, open_high=True,
                   show_default=True),
    )

    @classmethod
    def from_options(cls, seed: int | None, *, prune: bool = True, prune_after: int = 4,
                     p_threshold: float = 0.1, **_: Any) -> TpeStrategy:
        return cls(seed, prune=prune, prune_after=prune_after, p_threshold=p_threshold)

    def notes(self, launches_per_trial: int) -> list[str]:
        """The Wilcoxon test cannot prune with too few launches for its p-value or its wait."""
        if not self.prune:
            return []
        if 0.5 ** min(launches_per_trial - 1, 30) >= self.p_threshold:
            return [f"pruning can never trigger: {launches_per_trial - 1} launches give at best "
                    f"p={0.5 ** (launches_per_trial - 1):.3g} >= --p-threshold "
                    f"{self.p_threshold}"]
        if self.prune_after >= launches_per_trial:
            return [f"pruning is off in effect: --prune-after {self.prune_after} >= the "
                    f"{launches_per_trial} launches of a trial"]
        return []

    def __init__(self, seed: int | None = None, *, prune: bool = True, prune_after: int = 4,
                 p_threshold: float = 0.1) -> None:
        self.seed = seed
        self.prune = prune
        self.prune_after = prune_after
        self.p_threshold = p_threshold

    def sampler(self, fixed: Mapping[str, Any] | None = None) -> optuna.samplers.BaseSampler:
        tpe = optuna.samplers.TPESampler(multivariate=True, group=True, constant_liar=True,
                                         seed=self.seed)
        if fixed:
            return optuna.samplers.PartialFixedSampler(dict(fixed), tpe)
        return tpe

    def pruner(self) -> optuna.pruners.BasePruner:
        if not self.prune:
            return optuna.pruners.NopPruner()
        return optuna.pruners.WilcoxonPruner(p_threshold=self.p_threshold,
                                             n_startup_steps=max(2, self.prune_after))

    def should_prune(self, trial: optuna.Trial) -> bool:
        return self.prune and trial.should_prune()

    def describe(self) -> str:
        pruning = (f"Wilcoxon pruning p<{self.p_threshold} after {self.prune_after} launches"
                   if self.prune else "no pruning")
        return f"TPE, {pruning}"
