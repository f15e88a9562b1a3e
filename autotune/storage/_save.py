"""A finished trial written as one record: its attributes, sealed by a checksum over params,
attributes and value, then its state told to Optuna. Nothing else writes a trial's end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import optuna
from optuna.trial import TrialState

from ._schema import TrialKey, failure_attrs, record_checksum
from ._write import set_user_attrs, write_user_attrs

STATES = {"COMPLETE": TrialState.COMPLETE, "PRUNED": TrialState.PRUNED, "FAIL": TrialState.FAIL}


def save_trial(study: optuna.Study, trial: optuna.Trial, state: str, value: float | None,
               attrs: Mapping[str, Any]) -> None:
    """Write `attrs`, sealed, and tell `state` ("COMPLETE" with `value`, "PRUNED", "FAIL").
    Stopped before the state was told (a stop signal, Ctrl-C, the storage giving up), the trial
    is told failed, sealed over the attributes the storage holds by then: a record sealed for an
    outcome that was never told, or over attributes never written, would read as corrupt."""
    sealed = dict(attrs)
    sealed[TrialKey.CHECKSUM] = record_checksum(trial.params, {**trial.user_attrs, **sealed},
                                                value if state == "COMPLETE" else None)
    try:
        write_user_attrs(trial, sealed)
        if state == "COMPLETE":
            study.tell(trial, value)
        else:
            study.tell(trial, state=STATES[state])
    except BaseException:
        _fail_sealed(study, trial)
        raise


def _fail_sealed(study: optuna.Study, trial: optuna.Trial) -> None:
    """Tell an unfinished trial failed, sealed as the storage holds it; if the storage cannot
    take even that, the trial stays running and the next start recovers it (recover_abandoned)."""
    try:
        fail_sealed(study, trial._trial_id, trial.number, seal=True)  # noqa: SLF001
    except Exception:  # noqa: BLE001 - the first failure is the one raised
        pass


def fail_sealed(study: optuna.Study, trial_id: int, number: int,
                extra: Mapping[str, Any] | None = None, *, seal: bool = False) -> bool:
    """Write `extra` into an unfinished trial, seal its record as the storage then holds it (when
    `seal`, or when it was sealed before: a checksum over fewer attributes would read as
    corrupt), and tell it failed. False when it had finished already."""
    storage = study._storage  # noqa: SLF001 - the public Study API cannot touch other trials' attrs
    stored = storage.get_trial(trial_id)
    if stored.state.is_finished():
        return False
    attrs = dict(extra or {})
    if seal or TrialKey.CHECKSUM in stored.user_attrs:
        attrs[TrialKey.CHECKSUM] = record_checksum(stored.params, {**stored.user_attrs, **attrs},
                                                   None)
    set_user_attrs(storage, trial_id, attrs)
    study.tell(number, state=TrialState.FAIL, skip_if_finished=True)
    return True


def skip_trial(study: optuna.Study, trial: optuna.Trial, reason: str, detail: str) -> None:
    """Fail a proposal that is not launched (a repeat, a configuration MPI refused before)."""
    write_user_attrs(trial, {**failure_attrs(reason, detail), TrialKey.SKIPPED: True})
    study.tell(trial, state=TrialState.FAIL)
