"""The next configuration to launch, as the strategy proposes it: never one MPI refused or got
wrong before, and never one measured already unless it was queued (the default, a warm start,
a requeue) or the strategy measures it again; a repeat is failed as skipped without a launch."""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from typing import Any

import optuna
from optuna.trial import TrialState

from ..errors import InputError, NothingNew
from ..events import RunSummary
from ..space import SearchSpace, TrialContext
from ..storage import NEVER_AGAIN, TrialKey, known_invalid_params, params_key, skip_trial
from ..strategy import Strategy

QUEUED_ATTRS = (TrialKey.IS_DEFAULT, TrialKey.WARM_START, TrialKey.REQUEUED_FROM)  # enqueued
MAX_ASKS = 100  # proposals in a row that repeat what was measured: the sampler has nothing new


class Proposals:
    """What was measured and refused so far, and the asking (one thread at a time)."""

    def __init__(self, study: optuna.Study, strategy: Strategy, space: SearchSpace,
                 ctx: TrialContext, context_values: Mapping[str, Any], rng: random.Random,
                 summary: RunSummary) -> None:
        self.study, self.strategy, self.space, self.ctx = study, strategy, space, ctx
        self.context_values = dict(context_values)
        self.rng, self.summary = rng, summary
        self.known_invalid = known_invalid_params(study)
        self.measured = {params_key(t.params): t.number for t in study.get_trials(
            deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))}
        self._ask_lock = threading.Lock()  # two threads must never pop the same queued trial
        self._lock = threading.Lock()  # measured: worker threads share it

    def next(self) -> tuple[optuna.Trial, dict[str, Any]]:
        """Ask until a proposal is worth a launch; NothingNew when none comes."""
        for _ in range(MAX_ASKS):
            with self._ask_lock:
                trial = self.study.ask()
            try:
                with self._ask_lock:  # the sampler's state is not thread-safe
                    params = self._suggest(trial)
                if self._worth_launching(trial, params):
                    return trial, params
            except BaseException:
                self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
                self.strategy.trial_finished(trial.number, dict(trial.params), "FAIL")
                raise
        raise NothingNew(f"done: the last {MAX_ASKS} proposals were all configurations "
                         "already measured or refused")

    def _worth_launching(self, trial: optuna.Trial, params: dict[str, Any]) -> bool:
        key = params_key(params)
        queued = any(k in trial.user_attrs for k in QUEUED_ATTRS)
        if key in self.known_invalid:
            # an invalid configuration fails the same way every time: never again
            self._skip(trial, "config", f"same parameters as trial {self.known_invalid[key]}, "
                       "refused by MPI or wrong in its results; not launched again")
            self.summary.skipped_known_invalid += 1
            return False
        if key in self.measured and not queued and not self.strategy.measures_again(params):
            # TPE re-proposed measured points (40 trials visited 19-25 distinct ones on a
            # replayed grid), and asked again it proposes them again: a measured point is not
            # measured from scratch; an unmeasured one, drawn at random, is next
            self._skip(trial, "duplicate", f"same parameters as trial {self.measured[key]}, "
                       "already measured; not launched again")
            self.summary.skipped_duplicates += 1
            fresh = self._unmeasured()
            if fresh is None:
                raise NothingNew("done: every configuration the space allows is measured")
            self.study.enqueue_trial(fresh, user_attrs={TrialKey.EXPLORED: True})
            return False
        with self._lock:
            self.measured[key] = trial.number
        return True

    def failed(self, number: int, params: dict[str, Any], reason: str) -> None:
        """A launched trial failed: never again if the configuration is at fault, and in any
        case not measured (it may be proposed again)."""
        key = params_key(params)
        if reason in NEVER_AGAIN:
            self.known_invalid[key] = number
        with self._lock:
            if self.measured.get(key) == number:
                del self.measured[key]

    def _unmeasured(self, tries: int = 200) -> dict[str, Any] | None:
        """A configuration of the space neither measured nor refused, drawn at random."""
        for _ in range(tries):
            params = self.space.sample(self.rng, self.ctx)
            params.update({k: v for k, v in self.context_values.items() if k in params})
            key = params_key(params)
            if key not in self.measured and key not in self.known_invalid:
                return params
        return None

    def _skip(self, trial: optuna.Trial, reason: str, detail: str) -> None:
        """Fail a proposal without launching anything (it costs no benchmark time)."""
        skip_trial(self.study, trial, reason, detail)
        self.strategy.trial_finished(trial.number, dict(trial.params), "FAIL")

    def _suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        try:
            return self.strategy.suggest(trial, self.space, self.ctx)
        except ValueError as exc:  # optuna: a parameter's distribution differs from earlier trials
            raise InputError(f"the search space {self.space.name!r} no longer matches the trials "
                             f"of study {self.study.study_name!r} ({exc}); start a new study "
                             "with --study NAME") from None
