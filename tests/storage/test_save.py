"""A finished trial is written as one sealed record; interrupted before its state was told, it
is told failed and sealed as such (a record sealed as complete but failed would read corrupt)."""
import math

import pytest
from optuna.trial import TrialState

from autotune.storage import TrialRecord, save_trial, skip_trial
from tests.storage import controller_attrs, new_study


def asked(study):
    trial = study.ask()
    trial.suggest_categorical("UCX_TLS", ["all", "self,sm"])
    return trial


def test_a_complete_trial_reads_whole_with_its_value(tmp_path):
    study = new_study(tmp_path)
    trial = asked(study)
    save_trial(study, trial, "COMPLETE", -math.log(1.2), controller_attrs(speedup=1.2))
    stored = study.trials[trial.number]
    assert stored.state == TrialState.COMPLETE and stored.value == pytest.approx(-math.log(1.2))
    assert TrialRecord.from_trial(stored).speedup == pytest.approx(1.2)


def test_interrupted_before_the_state_is_told_it_is_failed_and_still_whole(tmp_path, monkeypatch):
    study = new_study(tmp_path)
    trial = asked(study)
    tell = study.tell
    calls = []

    def interrupted_once(*args, **kwargs):
        calls.append(kwargs.get("state"))
        if len(calls) == 1:
            raise KeyboardInterrupt
        return tell(*args, **kwargs)

    monkeypatch.setattr(study, "tell", interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        save_trial(study, trial, "COMPLETE", -math.log(1.2), controller_attrs(speedup=1.2))
    stored = study.trials[trial.number]
    assert stored.state == TrialState.FAIL
    TrialRecord.from_trial(stored)  # sealed as failed: not named corrupt


class Stop(BaseException):
    """What the daemon's signal handlers raise (StopRequested is a BaseException too)."""


@pytest.mark.parametrize("after", [0, 5, 23])  # attributes written before the stop (23: all
# but the checksum)
def test_a_stop_partway_through_the_attributes_leaves_a_failed_whole_trial(tmp_path, monkeypatch,
                                                                        after):
    """The attributes are one transaction: a stop inside it writes none of them, and the
    failure record written next does not carry the rows pending in the session."""
    study = new_study(tmp_path)
    trial = asked(study)
    rdb = study._storage.inner
    write = rdb._set_trial_attr_without_commit
    written, stopped = [], []

    def stopped_after(session, model, trial_id, key, value):
        if len(written) == after and not stopped:
            stopped.append(key)
            raise Stop
        written.append(key)
        return write(session, model, trial_id, key, value)

    monkeypatch.setattr(rdb, "_set_trial_attr_without_commit", stopped_after)
    with pytest.raises(Stop):
        save_trial(study, trial, "COMPLETE", -math.log(1.2), controller_attrs(speedup=1.2))
    stored = study.trials[trial.number]
    assert stored.state == TrialState.FAIL
    assert not set(written[:after]) & set(stored.user_attrs)  # the stopped transaction's rows
    TrialRecord.from_trial(stored)  # sealed over what was written: not named corrupt


def test_a_skipped_proposal_is_failed_with_its_reason(tmp_path):
    study = new_study(tmp_path)
    trial = asked(study)
    skip_trial(study, trial, "duplicate", "same parameters as trial 0")
    record = TrialRecord.from_trial(study.trials[trial.number])
    assert record.state == "FAIL" and record.fail_reason == "duplicate" and record.skipped
