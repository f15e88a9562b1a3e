"""Study config, baselines and the flat history, read from real SQLite studies."""

from __future__ import annotations

import json

import pytest
from optuna.trial import TrialState

from autotune.errors import StorageError
from autotune.storage import (BASELINE_PREFIX, CONFIG_ATTR, HISTORY_COLUMNS, SIZE_COLUMNS,
                              BaselineLaunch, StudyConfig, history_frame, load_baselines,
                              save_baseline, stored_config, trial_records, trials_by_number)
from tests.storage import CONFIG, add_trial, controller_attrs, new_study, reload


def test_study_config_round_trip(tmp_path):
    study = new_study(tmp_path)
    config = stored_config(reload(study, tmp_path))
    assert config.sizes == (8, 1024) and config.weights == {8: 0.5, 1024: 0.5}
    study.set_user_attr(CONFIG_ATTR, config.to_dict())
    assert stored_config(reload(study, tmp_path)) == config
    assert config.differences(StudyConfig.from_dict(dict(CONFIG, ppn=4))) == ["ppn"]


def test_old_and_newer_configs_read(tmp_path):
    study = new_study(tmp_path)
    old = {k: v for k, v in CONFIG.items() if k not in ("weights_source", "space_digest")}
    study.set_user_attr(CONFIG_ATTR, dict(old, added_by_a_newer_version=1))
    config = stored_config(study)
    assert config.space_digest == "" and config.weights_source == "uniform over log2(size)"


def test_another_reference_or_benchmark_is_not_comparable(tmp_path):
    untuned = {"env": {}, "mca": {}, "mpirun_args": []}
    now = StudyConfig.from_dict(dict(CONFIG, benchmark="mpi4py kernel", reference=untuned))
    wave1 = StudyConfig.from_dict(CONFIG)  # stored neither: its reference was forced pml ucx
    assert now.differences(wave1) == ["benchmark", "reference"]
    imb = StudyConfig.from_dict(dict(CONFIG, benchmark="IMB-MPI1 (/x)", reference=untuned))
    assert now.differences(imb) == ["benchmark"]
    assert StudyConfig.from_dict(now.to_dict()) == now


@pytest.mark.parametrize("garbage", [
    {k: v for k, v in CONFIG.items() if k != "sizes"},
    dict(CONFIG, weights={"eight": 1.0}),
    dict(CONFIG, sizes=["8", "big"]),
    ["not", "a", "mapping"],
])
def test_garbled_config_is_a_storage_error(tmp_path, garbage):
    study = new_study(tmp_path)
    study.set_user_attr(CONFIG_ATTR, garbage)
    with pytest.raises(StorageError) as info:
        stored_config(study)
    assert "autotune.config" in str(info.value) and "\n" not in str(info.value)


def test_no_config_is_none(tmp_path):
    study = new_study(tmp_path)
    study.set_user_attr(CONFIG_ATTR, None)
    assert stored_config(study) is None


def test_baselines_round_trip_in_id_order(tmp_path):
    study = new_study(tmp_path)
    for launch_id in (10, 2, 1):
        save_baseline(study, BaselineLaunch(id=launch_id, run_id="r", block=0, started=100.0,
                                            seconds=0.5, t_max_us={8: 2.0, 1024: 12.0},
                                            argv=["mpirun"], hosts=["n1"], drift=0.01 * launch_id))
    assert f"{BASELINE_PREFIX}000010" in study.user_attrs
    loaded = load_baselines(reload(study, tmp_path))
    assert [b.id for b in loaded] == [1, 2, 10]
    assert loaded[0].t_max_us == {8: 2.0, 1024: 12.0} and loaded[2].drift == pytest.approx(0.1)


@pytest.mark.parametrize("garbage", [
    {"id": 1, "run_id": "r", "block": 0, "started": 1.0, "seconds": 1.0},
    {"id": 1, "run_id": "r", "block": 0, "started": 1.0, "seconds": 1.0, "t_max_us": {"8": "x"}},
    {"id": "one", "run_id": "r", "block": 0, "started": 1.0, "seconds": 1.0, "t_max_us": {}},
    "launch",
])
def test_garbled_baseline_is_a_storage_error(tmp_path, garbage):
    study = new_study(tmp_path)
    study.set_user_attr(f"{BASELINE_PREFIX}000001", garbage)
    with pytest.raises(StorageError, match="autotune.baseline.000001"):
        load_baselines(study)


def test_history_frame_rows_and_columns(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.0), value=0.0)
    add_trial(study, "self,sm", "COMPLETE")
    add_trial(study, "self,tcp", "FAIL")
    study.enqueue_trial({"UCX_TLS": "self,sm"}, user_attrs={"requeued_from": 2})
    frame = history_frame(reload(study, tmp_path))
    assert set(HISTORY_COLUMNS) | set(SIZE_COLUMNS) | {"param.UCX_TLS"} == set(frame.columns)
    assert len(frame) == 2 + 2 + 1 + 1  # two sizes per measured trial, one row otherwise
    row = frame[(frame.trial == 1) & (frame["size"] == 1024)].iloc[0]
    assert row.state == "COMPLETE" and row.reps == 2 and json.loads(row.t_us) == [10.0, 11.0]
    assert json.loads(row.t_default_reps_us) == [12.0, 12.5] and row.score == -0.12
    assert row.t_trimmed_us == pytest.approx(10.5) and row.t_default_us == pytest.approx(12.25)
    assert row.host == "n1" and row.mpi == "Open MPI 4.1.4" and row.argv.startswith("mpirun -np 2")
    assert row.baseline_launches == 2 and row.launches == 2 and row["param.UCX_TLS"] == "self,sm"
    failed = frame[frame.trial == 2].iloc[0]
    assert failed.fail_reason == "config" and failed.state == "FAIL"
    assert list(frame[frame.trial == 0].is_default) == [True, True]
    assert frame[frame.trial == 3].iloc[0].state == "WAITING"


def test_history_of_an_empty_study(tmp_path):
    assert history_frame(new_study(tmp_path)).empty


def test_history_of_a_garbled_trial_is_a_storage_error(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=dict(controller_attrs(), raw_us={"8": "fast"}))
    with pytest.raises(StorageError, match="trial 0: stored attribute 'raw_us'"):
        history_frame(study)


def test_trial_records_filter_by_state(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", "COMPLETE")
    add_trial(study, "self,tcp", "FAIL")
    assert [r.number for r in trial_records(study, (TrialState.FAIL,))] == [1]
    assert [r.state for r in trial_records(study)] == ["COMPLETE", "FAIL"]


def test_trials_by_number_keeps_the_order_and_the_states_asked_for(tmp_path, monkeypatch):
    add_trial(new_study(tmp_path, name="other"), "all")  # trial ids are not the numbers
    study = new_study(tmp_path)
    for tls, state in (("all", "COMPLETE"), ("self,tcp", "PRUNED"), ("self,sm", "FAIL"),
                       ("self,sm", "COMPLETE")):
        add_trial(study, tls, state)
    study = reload(study, tmp_path)
    monkeypatch.setattr(study, "get_trials", None)  # the point: not every trial read to pick a few
    ended = (TrialState.COMPLETE, TrialState.PRUNED)
    picked = trials_by_number(study, [3, 1, 2, 0, 9], ended)  # 2 failed, 9 does not exist
    assert [(t.number, t.params["UCX_TLS"]) for t in picked] == [(3, "self,sm"), (1, "self,tcp"),
                                                                  (0, "all")]
    assert [t.number for t in trials_by_number(study, [1, 3], (TrialState.COMPLETE,))] == [3]


def test_objective_is_part_of_the_config_and_old_studies_score_latency(tmp_path):
    old = StudyConfig.from_dict(CONFIG)  # stored before the objective was: latency
    assert old.objective == "latency" and old.to_dict()["objective"] == "latency"
    overlap = StudyConfig.from_dict(dict(CONFIG, collective="iallreduce", objective="overlap"))
    assert StudyConfig.from_dict(overlap.to_dict()) == overlap
    latency = StudyConfig.from_dict(dict(CONFIG, collective="iallreduce"))
    assert overlap.differences(latency) == ["objective"]
    study = new_study(tmp_path)
    study.set_user_attr(CONFIG_ATTR, dict(CONFIG, objective=["overlap"]))
    with pytest.raises(StorageError, match="ill-typed"):
        stored_config(study)


def _nbc_launch(index, columns, failure=""):
    from tests.storage import launch

    data = launch(index, {s: c[0] for s, c in columns.items()}, failure=failure)
    data["nbc"] = {str(s): dict(zip(("t_pure_us", "t_ovrl_us", "t_cpu_us", "overlap_pct"), c))
                   for s, c in columns.items()}
    return data


def test_nbc_columns_are_read_launch_by_launch_and_shown_in_the_history(tmp_path):
    from autotune.benchmarks import NbcTiming
    from autotune.storage import NBC_SIZE_COLUMNS

    study = new_study(tmp_path)
    attrs = controller_attrs()
    attrs["launches"] = [
        _nbc_launch(0, {8: (2.0, 3.0, 2.0, 50.0), 1024: (10.0, 19.0, 10.0, 10.0)}),
        _nbc_launch(1, {8: (9.0, 9.0, 9.0, 0.0)}, failure="crash: x"),
        _nbc_launch(2, {8: (2.2, 4.4, 2.2, 0.0), 1024: (11.0, 20.0, 11.0, 9.0)})]
    add_trial(study, "all", attrs=attrs, value=-0.1)
    record = trial_records(reload(study, tmp_path))[0]
    samples = record.nbc_samples()  # the failed launch's columns are not a measurement
    assert samples == {8: [NbcTiming(2.0, 3.0, 2.0, 50.0), NbcTiming(2.2, 4.4, 2.2, 0.0)],
                       1024: [NbcTiming(10.0, 19.0, 10.0, 10.0), NbcTiming(11.0, 20.0, 11.0, 9.0)]}
    frame = history_frame(study)
    row = frame[frame["size"] == 1024].iloc[0]
    assert json.loads(row["t_ovrl_us"]) == [19.0, 20.0]
    assert json.loads(row["overlap_pct"]) == [10.0, 9.0]
    assert set(NBC_SIZE_COLUMNS) <= set(frame.columns)
    plain = new_study(tmp_path, name="plain", db="p.db")
    add_trial(plain, "all", value=-0.1)
    assert trial_records(plain)[0].nbc_samples() == {}
    assert not set(NBC_SIZE_COLUMNS) & set(history_frame(plain).columns)


def test_garbled_nbc_columns_are_a_storage_error(tmp_path):
    study = new_study(tmp_path)
    attrs = controller_attrs()
    attrs["launches"] = [_nbc_launch(0, {8: (2.0, "fast", 2.0, 50.0)})]
    add_trial(study, "all", attrs=attrs, value=-0.1)
    with pytest.raises(StorageError, match=r"launches\[0\].nbc\[8\].t_ovrl_us"):
        trial_records(study)[0].nbc_samples()
