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


def test_a_skipped_proposal_is_failed_with_its_reason(tmp_path):
    study = new_study(tmp_path)
    trial = asked(study)
    skip_trial(study, trial, "duplicate", "same parameters as trial 0")
    record = TrialRecord.from_trial(study.trials[trial.number])
    assert record.state == "FAIL" and record.fail_reason == "duplicate" and record.skipped
