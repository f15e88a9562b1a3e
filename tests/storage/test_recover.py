"""A trial left running by a killed owner is failed as abandoned and queued again; a record the
owner had already sealed (killed between its checksum and its state) still reads as whole."""
import math
import sqlite3

from optuna.trial import TrialState

from autotune.storage import TrialKey, TrialRecord, record_checksum
from autotune.storage._queue import recover_abandoned
from tests.storage import controller_attrs, new_study


def running_trial(study, sealed_value):
    trial = study.ask()
    trial.suggest_categorical("UCX_TLS", ["all", "self,sm"])
    attrs = controller_attrs(speedup=1.2)
    attrs[TrialKey.CHECKSUM] = record_checksum(trial.params, attrs, sealed_value)
    for key, value in attrs.items():
        trial.set_user_attr(key, value)
    return trial  # killed here: sealed, never told


def test_a_sealed_trial_left_running_reads_whole_after_recovery(tmp_path):
    study = new_study(tmp_path)
    complete = running_trial(study, -math.log(1.2))  # sealed as complete, with its value
    pruned = running_trial(study, None)
    assert recover_abandoned(study) == [complete.number, pruned.number]
    for number in (complete.number, pruned.number):
        stored = study.trials[number]
        record = TrialRecord.from_trial(stored)  # a mismatch would raise StorageError (corrupt)
        assert stored.state == TrialState.FAIL and record.fail_reason == "abandoned"
    queued = study.get_trials(states=(TrialState.WAITING,))
    assert [t.system_attrs["fixed_params"] for t in queued] == [complete.params, pruned.params]


def test_a_trial_changed_after_it_was_sealed_is_still_corrupt(tmp_path):
    study = new_study(tmp_path)
    trial = running_trial(study, None)
    study.tell(trial, state=TrialState.PRUNED)
    con = sqlite3.connect(tmp_path / "t.db")
    con.execute("UPDATE trial_user_attributes SET value_json = '9.9' WHERE key = 'speedup'")
    con.commit()
    con.close()
    try:
        TrialRecord.from_trial(study.trials[trial.number])
    except Exception as exc:  # noqa: BLE001 - the message is what is checked
        assert "is corrupt" in str(exc)
    else:
        raise AssertionError("a changed record read as whole")


def test_a_trial_killed_before_its_parameters_were_chosen(tmp_path):
    """Killed between ask and the first suggest: a fresh trial is not queued again with no
    parameters (a run that took it crashed on the missing knobs); a queued one keeps its own."""
    study = new_study(tmp_path)
    fresh = study.ask()
    study.enqueue_trial({"UCX_TLS": "self,sm"})
    taken = study.ask()  # the queued trial, its parameters not suggested yet
    assert fresh.params == {} and taken.params == {}
    assert recover_abandoned(study) == [fresh.number, taken.number]
    queued = study.get_trials(states=(TrialState.WAITING,))
    assert [t.system_attrs["fixed_params"] for t in queued] == [{"UCX_TLS": "self,sm"}]
    assert [TrialRecord.from_trial(t).requeued_from for t in queued] == [taken.number]
