"""The study's queue as the controller keeps it: the default configuration first, parameters
MPI refused never again, trials left running by a dead owner failed and queued once more."""

from __future__ import annotations

from typing import Any

import optuna
from optuna.trial import TrialState

from ._save import fail_sealed
from ._schema import TrialKey, TrialRecord, failure_attrs, requeue_attrs


def params_key(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))


# Failure reasons that are the configuration's own and would recur every time: MPI refused it
# (config), or it ran and returned a wrong answer (wrong-result). Never launched again.
NEVER_AGAIN = ("config", "wrong-result")


def known_invalid_params(study: optuna.Study) -> dict[tuple, int]:
    """Params that made MPI refuse the configuration or give wrong results: never launched again."""
    invalid = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        record = TrialRecord.from_trial(t)
        if record.fail_reason in NEVER_AGAIN and not record.skipped:
            invalid[params_key(t.params)] = t.number
    return invalid


def recover_abandoned(study: optuna.Study) -> list[int]:
    """Trials left RUNNING by an owner that died (the caller holds the study lock, so nobody else
    runs them): mark them failed, and queue their params again once. An owner killed between
    sealing its record and telling its state left a checksum for the record before the failure
    attributes: the record is sealed again as it now stands, else it would read as corrupt.
    An owner killed before it chose a trial's parameters left none: a queued trial's are in its
    fixed params, a fresh one had none yet and is not queued (the next ask proposes again)."""
    recovered = []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        record = TrialRecord.from_trial(trial)
        fail_sealed(study, trial._trial_id, trial.number, failure_attrs(  # noqa: SLF001
            "abandoned", "left running by a process that died (killed or crashed)"))
        params = dict(trial.params) or dict(trial.system_attrs.get("fixed_params") or {})
        if record.requeue_reason != "abandoned" and (params or record.is_default):
            study.enqueue_trial(params, user_attrs=requeue_attrs(
                trial.number, "abandoned", record.is_default))
        recovered.append(trial.number)
    return recovered


def enqueue_default(study: optuna.Study, default_params: dict[str, Any]) -> bool:
    """Queue the default configuration as a trial unless the study already has it (first in line,
    so it is trial 0 of a new study)."""
    for trial in study.get_trials(deepcopy=False, states=(
            TrialState.COMPLETE, TrialState.WAITING, TrialState.RUNNING)):
        if TrialRecord.from_trial(trial).is_default:
            return False
    study.enqueue_trial(default_params, user_attrs={TrialKey.IS_DEFAULT: True})
    return True
