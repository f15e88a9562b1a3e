"""`autotune status` from the storage alone: a real SQLite study with complete, pruned and failed
trials, interleaved default launches, a run and a confirmation, shaped like the controller's."""

from __future__ import annotations

import math
import os
import socket
import time

import pytest

from autotune.daemon import Owner, StudyLock
from autotune.errors import StorageError
from autotune.status import study_status
from autotune.storage import (CONFIRMATION_ATTR, RUN_ATTR, BaselineLaunch, run_attrs,
                              save_baseline)
from tests.storage import add_trial, controller_attrs, new_study


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _study(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=dict(controller_attrs(is_default=True, speedup=1.01),
                                       bench_seconds=2.0), value=-0.01)
    add_trial(study, "self,sm", attrs=dict(controller_attrs(speedup=1.2), bench_seconds=3.0),
              value=-math.log(1.2))
    add_trial(study, "self,tcp", "PRUNED")
    add_trial(study, "self,tcp", "FAIL")
    for i, drift in enumerate([0.0, 0.02, -0.01], start=1):
        save_baseline(study, BaselineLaunch(id=i, run_id="run1", block=0, started=1000.0 + i,
                                            seconds=0.5, t_max_us={8: 2.0}, drift=drift))
    return study


def test_status_counts_best_default_and_baselines(tmp_path, home):
    url = f"sqlite:///{tmp_path / 't.db'}"
    status = study_status(_study(tmp_path), url)
    assert (status.trials_complete, status.trials_pruned, status.trials_failed,
            status.trials_running) == (2, 1, 1, 0)
    assert status.best_trial == 1 and status.best_speedup == pytest.approx(1.2)
    assert not status.best_is_default and status.default_speedup == pytest.approx(math.exp(0.01))
    assert status.bench_seconds == pytest.approx(2.0 + 3.0 + 1.5 + 1.5)
    assert status.baseline_launches == 3 and status.recent_drift == pytest.approx(0.01 / 3)
    assert (status.collective, status.nodes, status.ppn) == ("allreduce", 1, 2)
    assert status.sizes == "2 sizes 8 B..1 KiB"
    assert not status.alive and status.eta_seconds is None and status.confirmation == ""
    text = status.render()
    assert "trials: 2 complete, 1 pruned, 1 failed, 0 running" in text
    assert "best: trial 1, speedup 1.200x" in text and "3 interleaved launches" in text
    assert status.to_dict()["best_trial"] == 1


def test_status_of_a_confirmed_study(tmp_path, home):
    study = _study(tmp_path)
    study.set_user_attr(CONFIRMATION_ATTR, {
        "rounds": 3, "best_trial": 1, "finished": 5.0, "method": "t",
        "candidates": [{"trial": 1, "params": {}, "round_scores": [-0.18] * 3, "mean": -0.18,
                        "ci_low": -0.2, "ci_high": -0.16, "failed": "",
                        "speedup": 1.197, "speedup_interval": [1.17, 1.22]}]})
    status = study_status(study, f"sqlite:///{tmp_path / 't.db'}")
    assert status.confirmed_best_trial == 1 and status.best_speedup_ci == (1.17, 1.22)
    assert "confirmed best: trial 1, speedup 1.197x (95% CI 1.170x..1.220x)" in status.render()
    study.set_user_attr(CONFIRMATION_ATTR, {"rounds": 3, "best_trial": None, "candidates": []})
    status = study_status(study, f"sqlite:///{tmp_path / 't.db'}")
    assert status.confirmed_best_trial is None
    assert status.confirmation == "confirmed: no candidate is faster than the default beyond doubt"


def test_status_while_a_run_holds_the_study(tmp_path, home):
    url = f"sqlite:///{tmp_path / 't.db'}"
    study = _study(tmp_path)
    study.set_user_attr(RUN_ATTR, run_attrs("run1", 10, time.time(), None))
    study.enqueue_trial({"UCX_TLS": "self,sm"})
    study.ask().suggest_categorical("UCX_TLS", ["all", "self,sm", "self,tcp"])  # now running
    lock = StudyLock.of(url, study.study_name)
    lock.acquire(Owner(pid=os.getpid(), host=socket.gethostname(), started=time.time(),
                       study=study.study_name, log=str(lock.log)))
    try:
        status = study_status(study, url)
    finally:
        lock.release()
    assert status.alive and status.pid == os.getpid() and status.running_trial == 4
    assert status.running_params == {"UCX_TLS": "self,sm"} and status.trials_running == 1
    assert status.eta_seconds is not None and status.eta_seconds >= 0
    assert "trial 4 in progress" in status.render()


def test_empty_study(tmp_path, home):
    status = study_status(new_study(tmp_path), f"sqlite:///{tmp_path / 't.db'}")
    assert status.best_trial is None and status.best_speedup is None
    assert status.trials_complete == 0 and status.last_baseline is None


def test_garbled_trial_is_a_storage_error(tmp_path, home):
    study = _study(tmp_path)
    add_trial(study, "all", attrs=dict(controller_attrs(), bench_seconds="lots"))
    with pytest.raises(StorageError, match="trial 4: stored attribute 'bench_seconds'"):
        study_status(study, f"sqlite:///{tmp_path / 't.db'}")
