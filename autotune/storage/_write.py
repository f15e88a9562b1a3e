"""A running trial's parameters, or a batch of its attributes, written at once (one transaction
where the storage allows: _transaction), and the trial object told what was written, so that
reading it back (`trial.params`, `trial.user_attrs`) needs no query."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution

from ._transaction import ParamItem

if TYPE_CHECKING:
    from ..space import SearchSpace, TrialContext


def _batched(trial: optuna.Trial, method: str) -> Any:
    """The storage's batch writer `method` (PatientStorage has them), or None: a trial object
    without the cache this module updates (another Optuna) is written one call at a time."""
    if not all(hasattr(trial, name) for name in ("_cached_frozen_trial", "_fixed_params")):
        return None
    return getattr(trial.storage, method, None)


def set_user_attrs(storage: optuna.storages.BaseStorage, trial_id: int,
                   attrs: Mapping[str, Any]) -> None:
    """A trial's user attributes, in one transaction where the storage offers it
    (PatientStorage), else one call each."""
    batch = getattr(storage, "set_trial_user_attrs", None)
    if batch is not None:
        batch(trial_id, dict(attrs))
        return
    for key, value in attrs.items():
        storage.set_trial_user_attr(trial_id, key, value)


def write_user_attrs(trial: optuna.Trial, attrs: Mapping[str, Any]) -> None:
    """`trial.set_user_attr` for every item, in one transaction where the storage allows."""
    if not hasattr(trial, "_cached_frozen_trial"):  # another Optuna: its own calls
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        return
    set_user_attrs(trial.storage, trial._trial_id, attrs)  # noqa: SLF001 - no public id
    trial._cached_frozen_trial.user_attrs.update(attrs)  # noqa: SLF001


class _FromPlan:
    """Answers a search space's suggest_* calls from a plan, noting each distribution asked, as
    Optuna's Trial answers them: a queued trial's own value first, then a distribution's only
    value whatever the plan says, then the plan; a name asked again keeps its value; an int
    comes back an int."""

    def __init__(self, plan: Mapping[str, Any], fixed: Mapping[str, Any]) -> None:
        self.plan = plan
        self.fixed = fixed
        self.items: dict[str, tuple[Any, BaseDistribution]] = {}

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        return self._take(name, CategoricalDistribution(choices))

    def suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int:
        return int(self._take(name, IntDistribution(low, high, log=log, step=step)))

    def _take(self, name: str, distribution: BaseDistribution) -> Any:
        if name not in self.items:
            if name in self.fixed:
                value = self.fixed[name]
            elif distribution.single():
                value = _only_value(distribution)
            else:
                value = self.plan[name]
            self.items[name] = (value, distribution)
        return self.items[name][0]


def _only_value(distribution: BaseDistribution) -> Any:
    if isinstance(distribution, CategoricalDistribution):
        return distribution.choices[0]
    assert isinstance(distribution, IntDistribution)
    return distribution.low


def write_planned_params(trial: optuna.Trial, space: SearchSpace, ctx: TrialContext,
                         plan: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters `space` asks for in `ctx`, valued from `plan`, written into a fresh trial:
    what `space.suggest(trial, ctx)` does when the study's sampler answers from `plan`
    (PlannedSampler), in one transaction instead of one per parameter. A queued trial's own
    parameters (`study.enqueue_trial`) come before the plan, as Optuna gives them before any
    sampler's. A value outside its parameter's choices, or a distribution unlike the study's
    earlier trials', raises ValueError and writes nothing; an int is not checked against its
    range (Optuna does not check a sampler's value either)."""
    batch = _batched(trial, "set_trial_params")
    if batch is None:
        return space.suggest(trial, ctx)
    planned = _FromPlan(plan, trial._fixed_params)  # noqa: SLF001
    params = space.suggest(planned, ctx)
    items: list[ParamItem] = [(name, distribution.to_internal_repr(value), distribution)
                              for name, (value, distribution) in planned.items.items()]
    batch(trial._trial_id, items)  # noqa: SLF001
    cached = trial._cached_frozen_trial  # noqa: SLF001
    for name, (value, distribution) in planned.items.items():
        cached.distributions[name] = distribution
        cached.params[name] = value
    return params
