"""Many writes to one trial in one transaction, where the storage is Optuna's RDB storage.

Optuna commits every parameter and every user attribute on its own: on SQLite each is a
transaction with its own sync to disk, ~2 ms apiece here, and a finished trial writes ~24
attributes and ~9 parameters (about 70 ms per trial, 3% of a trial's benchmark time on this
machine). Written together they take about a third of the time, and they are all-or-nothing: a run
stopped in the middle leaves a trial with all its parameters or none, and its record's attributes
all written or none (Optuna's session scope closes an unfinished session, so a stop signal inside
it commits nothing). This uses the RDB storage's own per-row writers (private to Optuna, which
has no batch API); a storage without them (a journal file, a newer Optuna that renamed them) is
written one call at a time, as before.

A trial's parameters take one more shortcut. Optuna's per-parameter writer reads the trial's row
and looks for an earlier trial's distribution of the same parameter (a join over the study's
params) before every row it adds: at 1,000 trials that was 7 ms of the 8 ms a trial's nine
params cost. Here the trial's row is read once, the first write of a parameter name in a study
goes through Optuna's writer (which finds what earlier trials used), and later ones are checked
against the distribution this process already wrote and checked for that study; the rows are
flushed together at the commit."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import (BaseDistribution, check_distribution_compatibility,
                                  distribution_to_json)

ParamItem = tuple[str, float, BaseDistribution]  # name, Optuna's internal value, distribution


# per RDB storage: (study id, param name) -> the distribution written and checked for that study
_KNOWN: weakref.WeakKeyDictionary[Any, dict[tuple[int, str], BaseDistribution]] = \
    weakref.WeakKeyDictionary()


def _writers(storage: optuna.storages.BaseStorage) -> tuple[Any, Any] | None:
    """Optuna's session factory and row models, when `storage` has them."""
    if not isinstance(storage, optuna.storages.RDBStorage):
        return None
    try:
        from optuna.storages._rdb import models
        from optuna.storages._rdb.storage import _create_scoped_session
    except ImportError:
        return None
    needed = ("scoped_session", "_set_trial_param_without_commit",
              "_set_trial_attr_without_commit", "check_trial_is_updatable")
    rows = ("TrialModel", "TrialParamModel", "TrialUserAttributeModel")
    if not all(hasattr(storage, name) for name in needed) or \
            not all(hasattr(models, name) for name in rows):
        return None
    return _create_scoped_session, models


def writes_in_one_transaction(storage: optuna.storages.BaseStorage) -> bool:
    return _writers(storage) is not None


def set_params_together(storage: optuna.storages.BaseStorage, trial_id: int,
                        items: Sequence[ParamItem]) -> None:
    """Set a fresh trial's parameters; a distribution incompatible with earlier trials' (another
    kind, or other choices, as Optuna judges it) raises ValueError and writes none of them, and
    a finished trial raises Optuna's UpdateFinishedTrialError (a name set twice raises
    IntegrityError: a search space has no two parameters of one name). A study is never deleted
    by autotune, so the study id behind what this process knows names the same study for as
    long as the process runs."""
    writers = _writers(storage)
    if writers is None:
        for name, internal, distribution in items:
            storage.set_trial_param(trial_id, name, internal, distribution)
        return
    session_of, models = writers
    known = _KNOWN.setdefault(storage, {})
    with session_of(storage.scoped_session) as session:
        trial = models.TrialModel.find_or_raise_by_id(trial_id, session)
        storage.check_trial_is_updatable(trial_id, trial.state)
        study_id = trial.study_id
        with session.no_autoflush:  # one flush at the commit, not one per row
            for name, internal, distribution in items:
                previous = known.get((study_id, name))
                if previous is None:  # Optuna's writer looks up what earlier trials used
                    storage._set_trial_param_without_commit(  # noqa: SLF001 - see the docstring
                        session, trial_id, name, internal, distribution)
                    continue
                check_distribution_compatibility(previous, distribution)
                session.add(models.TrialParamModel(
                    trial_id=trial_id, param_name=name, param_value=internal,
                    distribution_json=distribution_to_json(distribution)))
    known.update({(study_id, name): distribution for name, _, distribution in items})


def set_user_attrs_together(storage: optuna.storages.BaseStorage, trial_id: int,
                            attrs: Mapping[str, Any]) -> None:
    writers = _writers(storage)
    if writers is None:
        for key, value in attrs.items():
            storage.set_trial_user_attr(trial_id, key, value)
        return
    session_of, models = writers
    model = models.TrialUserAttributeModel
    # an IntegrityError is raised, not ignored as Optuna's one-row write ignores it: here it
    # would drop the whole record, checksum included (SQLite, PostgreSQL and MySQL upsert)
    with session_of(storage.scoped_session) as session:
        for key, value in attrs.items():
            storage._set_trial_attr_without_commit(  # noqa: SLF001 - see the module docstring
                session, model, trial_id, key, value)
