"""TrialRecord and the key constants against real SQLite studies shaped like the controller's."""

from __future__ import annotations

import math

import pytest

from autotune.errors import LaunchFailure, StorageError
from autotune.space import LaunchSettings
from autotune.storage import (CONFIG_ATTR, CONFIRMATION_ATTR, FINGERPRINT_ATTR, RESOLUTION_ATTR,
                              RUN_ATTR, StoredSettings, TrialKey, TrialRecord, failure_attrs,
                              requeue_attrs, run_attrs, stored_confirmation, stored_run,
                              trial_attrs)
from tests.storage import HOST, add_trial, controller_attrs, new_study, reload

# every trial attribute the controller, session and daemon have ever written: the on-disk format
STORED_TRIAL_KEYS = {
    "is_default", "baseline_ids", "default_us", "baseline_launches_during", "run_id", "host",
    "context", "fingerprint", "settings", "raw_us", "launches", "launch_count", "sizes_measured",
    "sizes_complete", "bench_seconds", "controller_seconds", "nodes", "node_names", "node_group",
    "acquire_seconds", "dispatch_seconds", "fail_reason", "fail_detail", "stderr_tail", "scores",
    "speedup", "partial_speedup", "skipped", "requeued_from", "requeue_reason", "warm_start",
    "explored", "checksum"}


def test_key_strings_stay_those_of_stored_studies():
    assert set(TrialKey.all()) == STORED_TRIAL_KEYS
    assert (CONFIG_ATTR, RUN_ATTR, FINGERPRINT_ATTR, RESOLUTION_ATTR, CONFIRMATION_ATTR) == (
        "autotune.config", "autotune.run", "autotune.fingerprint", "autotune.resolution",
        "autotune.confirmation")


def test_trial_record_round_trip_through_sqlite(tmp_path):
    study = new_study(tmp_path)
    number = add_trial(study, "self,sm", "COMPLETE", value=-0.0953)
    rec = TrialRecord.from_trial(reload(study, tmp_path).trials[number])
    assert (rec.number, rec.state, rec.params, rec.value) == (0, "COMPLETE", {"UCX_TLS": "self,sm"},
                                                             -0.0953)
    assert rec.raw_us == {8: [2.0, 2.2], 1024: [10.0, 11.0]}
    assert rec.default_us == {8: [2.1, 2.3], 1024: [12.0, 12.5]}
    assert rec.scores == {8: -0.05, 1024: -0.12}
    assert rec.speedup == 1.1 and rec.partial_speedup is None and not rec.is_default
    assert rec.settings == StoredSettings(env={"UCX_TLS": "self,sm"}, mca={"pml": "ucx"},
                                          mpirun_args=("--map-by", "numa"))
    assert rec.host == HOST and rec.context == {"NPS": 1} and rec.fingerprint["hosts"] == ["n1"]
    assert rec.nodes == ("10.0.0.1",) and rec.node_names == ("n1",) and rec.node_group == "static:0"
    assert rec.baseline_ids == (1, 2) and rec.baseline_launches_during == 2
    assert rec.launch_count == 2 and len(rec.launches) == 2 and rec.first_argv[0] == "mpirun"
    assert rec.bench_seconds == 1.5 and rec.dispatch_seconds == 0.2 and rec.run_id == "run1"
    assert rec.datetime_start is not None and rec.datetime_complete is not None
    assert rec.fail_reason == "" and rec.requeued_from is None


def test_failed_and_pruned_trials_read_back(tmp_path):
    study = new_study(tmp_path)
    failed = add_trial(study, "self,tcp", "FAIL")
    pruned = add_trial(study, "all", "PRUNED")
    records = {t.number: TrialRecord.from_trial(t) for t in reload(study, tmp_path).trials}
    assert records[failed].state == "FAIL" and records[failed].fail_reason == "config"
    assert records[failed].stderr_tail == "unreachable\n" and records[failed].raw_us == {}
    assert records[failed].scores == {} and records[failed].value is None
    assert records[pruned].state == "PRUNED" and records[pruned].partial_speedup == 0.93


def test_queued_and_old_trials_get_defaults(tmp_path):
    study = new_study(tmp_path)
    study.enqueue_trial({"UCX_TLS": "all"}, user_attrs={"is_default": True})
    study.enqueue_trial({"UCX_TLS": "self,sm"},
                        user_attrs={"requeued_from": 3, "requeue_reason": "interrupted"})
    study.enqueue_trial({"UCX_TLS": "self,tcp"}, user_attrs={"warm_start": "seeds/000 winner"})
    old = study.ask()  # a trial of a very early version: no attributes at all
    old.suggest_categorical("UCX_TLS", ["all", "self,sm", "self,tcp"])
    study.tell(old, 0.0)
    records = [TrialRecord.from_trial(t) for t in reload(study, tmp_path).trials]
    assert records[0].is_default and records[0].raw_us == {} and records[0].bench_seconds == 0.0
    assert records[0].settings == StoredSettings() and records[0].first_argv == []
    assert [r.state for r in records] == ["COMPLETE", "WAITING", "WAITING"]
    assert records[1].requeued_from == 3 and records[1].requeue_reason == "interrupted"
    assert records[2].warm_start == "seeds/000 winner" and records[2].value is None


def test_null_attrs_read_as_defaults(tmp_path):
    study = new_study(tmp_path)
    attrs = dict(controller_attrs(), speedup=None, raw_us=None, host=None, settings=None)
    add_trial(study, "all", "COMPLETE", attrs=attrs)
    rec = TrialRecord.from_trial(reload(study, tmp_path).trials[0])
    assert rec.speedup is None and rec.raw_us == {} and rec.host == {}
    assert rec.settings == StoredSettings()


@pytest.mark.parametrize("key,value", [
    ("raw_us", "2.0 2.2"),
    ("raw_us", {"eight": [2.0]}),
    ("raw_us", {"8": 2.0}),
    ("raw_us", {"8": [2.0, "fast"]}),
    ("default_us", [[2.0]]),
    ("scores", {"8": [0.1]}),
    ("settings", {"env": ["UCX_TLS"]}),
    ("settings", {"env": {"UCX_TLS": {"v": 1}}}),
    ("settings", {"mpirun_args": "--map-by numa"}),
    ("settings", "env"),
    ("is_default", "yes"),
    ("skipped", 2),
    ("bench_seconds", "1.5 s"),
    ("launch_count", 1.5),
    ("launches", [["mpirun"]]),
    ("host", "n1"),
    ("nodes", "n1"),
    ("nodes", [1, 2]),
    ("baseline_ids", [None]),
    ("requeued_from", "3"),
    ("fail_reason", 42),
    ("speedup", True),
])
def test_garbled_attrs_raise_one_storage_error(tmp_path, key, value):
    study = new_study(tmp_path)
    add_trial(study, "all", "COMPLETE", attrs=dict(controller_attrs(), **{key: value}))
    with pytest.raises(StorageError) as info:
        TrialRecord.from_trial(reload(study, tmp_path).trials[0])
    message = str(info.value)
    assert "\n" not in message and len(message) < 300
    assert f"trial 0: stored attribute {key!r}" in message


def test_writer_keeps_the_controller_keys_and_reads_back(tmp_path):
    settings = LaunchSettings(env=(("UCX_TLS", "self,sm"),), mca=(("pml", "ucx"),),
                              mpirun_args=("--map-by", "numa"))
    common = dict(is_default=False, run_id="run1", host=HOST, context={"NPS": 1},
                  fingerprint={"hosts": ["n1"], "cpu_model": "Test CPU"}, settings=settings,
                  raw_us={1024: [10.0, 11.0], 8: [2.0, 2.2]},
                  default_us={8: [2.1, 2.3], 1024: [12.0, 12.5]}, baseline_ids=[1, 2],
                  baseline_launches=2, launches=controller_attrs()["launches"], repetitions=2,
                  bench_seconds=1.500001, controller_seconds=0.0100001, nodes=("10.0.0.1",),
                  node_names=("n1",), node_group="static:0", acquire_seconds=0.0,
                  dispatch_seconds=0.2)
    complete = trial_attrs(**common, scores={8: -0.05, 1024: -0.12}, speedup=1.1)
    assert complete == controller_attrs()
    pruned = trial_attrs(**common, scores={8: -0.05, 1024: -0.12}, partial_speedup=0.93)
    assert pruned == controller_attrs(state="PRUNED")
    failure = LaunchFailure("config", "x" * 600, "e" * 5000)
    failed = trial_attrs(**dict(common, raw_us={}, launches=[{"index": 0}]), failure=failure)
    assert set(failed) - set(complete) == {"fail_reason", "fail_detail", "stderr_tail"}
    assert "scores" not in failed and "speedup" not in failed
    assert len(failed["fail_detail"]) == 500 and len(failed["stderr_tail"]) == 4000
    assert set(complete) | set(failed) | {"partial_speedup", "skipped", "requeued_from",
                                          "requeue_reason", "warm_start", "explored",
                                          "checksum"} \
        == STORED_TRIAL_KEYS
    study = new_study(tmp_path)
    add_trial(study, "self,sm", "COMPLETE", attrs=complete)
    add_trial(study, "self,tcp", "FAIL", attrs=failed)
    done, fail = (TrialRecord.from_trial(t) for t in reload(study, tmp_path).trials)
    assert done.raw_us == {8: [2.0, 2.2], 1024: [10.0, 11.0]} and done.sizes_complete == 2
    assert done.settings.env == {"UCX_TLS": "self,sm"} and done.speedup == 1.1
    assert fail.fail_reason == "config" and fail.launch_count == 1 and fail.raw_us == {}


def test_unplaced_trial_and_no_settings_store_no_node_keys():
    attrs = trial_attrs(is_default=True, run_id="r", host={}, context={}, fingerprint={},
                        settings=None, raw_us={}, default_us={}, baseline_ids=[],
                        baseline_launches=0, launches=[], repetitions=3, bench_seconds=0.0,
                        controller_seconds=0.0, failure=LaunchFailure("interrupted", "stop"))
    assert attrs["settings"] == {} and "nodes" not in attrs and "dispatch_seconds" not in attrs
    assert attrs["fail_reason"] == "interrupted" and attrs["stderr_tail"] == ""


def test_small_writers(tmp_path):
    assert failure_attrs("abandoned", "left running") == {
        "fail_reason": "abandoned", "fail_detail": "left running", "stderr_tail": ""}
    assert requeue_attrs(4, "interrupted", 1) == {"requeued_from": 4,
                                                   "requeue_reason": "interrupted",
                                                   "is_default": True}
    study = new_study(tmp_path)
    assert stored_run(study) is None
    study.set_user_attr(RUN_ATTR, run_attrs("abc", 20, 1000.0, None))
    run = stored_run(reload(study, tmp_path))
    assert (run.run_id, run.trials_planned, run.started, run.deadline) == ("abc", 20, 1000.0, None)


def test_stored_confirmation(tmp_path):
    study = new_study(tmp_path)
    assert stored_confirmation(study) is None
    study.set_user_attr(CONFIRMATION_ATTR, {
        "rounds": 3, "best_trial": 2, "finished": 5.0, "method": "t", "family": 6,
        "candidates": [{"trial": 2, "params": {}, "round_scores": [-0.1] * 3, "mean": -0.1,
                        "ci_low": -0.12, "ci_high": -0.08, "failed": "",
                        "speedup": math.exp(0.1), "speedup_interval": [1.08, 1.13]},
                       {"trial": 4, "params": {}, "round_scores": [], "mean": None,
                        "ci_low": None, "ci_high": None, "failed": "crash: x",
                        "speedup": None, "speedup_interval": None}]})
    conf = stored_confirmation(reload(study, tmp_path))
    assert conf.rounds == 3 and conf.best.trial == 2 and conf.best.speedup_interval == (1.08, 1.13)
    assert conf.candidate(4).failed == "crash: x" and conf.candidate(4).speedup is None
    assert conf.level == "95% CI, simultaneous over 6" and not conf.legacy
    # written by the version whose 5-round bootstrap claims did not hold: it claims nothing
    legacy = dict(study.user_attrs[CONFIRMATION_ATTR])
    del legacy["method"]
    study.set_user_attr(CONFIRMATION_ATTR, legacy)
    conf = stored_confirmation(study)
    assert conf.legacy and conf.best is None and conf.best_trial == 2
    study.set_user_attr(CONFIRMATION_ATTR, {"rounds": 3, "best_trial": 7, "candidates": [],
                                            "method": "t"})
    with pytest.raises(StorageError, match="names trial 7"):
        _ = stored_confirmation(study).best
    study.set_user_attr(CONFIRMATION_ATTR, {"rounds": 3, "best_trial": 2,
                                            "candidates": [{"trial": 2, "speedup_interval": 1}]})
    with pytest.raises(StorageError, match="speedup_interval"):
        stored_confirmation(study)


def test_study_level_garbage_is_a_storage_error(tmp_path):
    study = new_study(tmp_path)
    study.set_user_attr(RUN_ATTR, {"run_id": 5})
    with pytest.raises(StorageError, match="autotune.run: run_id"):
        stored_run(study)
    study.set_user_attr(CONFIRMATION_ATTR, ["not", "a", "mapping"])
    with pytest.raises(StorageError, match="autotune.confirmation is not a mapping"):
        stored_confirmation(study)
