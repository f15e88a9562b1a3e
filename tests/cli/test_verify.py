"""`autotune verify` and `start --verify` refusing: one line, nothing launched."""

from __future__ import annotations

import math
import os
import socket
import time

from autotune.daemon import Owner, StudyLock
from autotune.storage import CONFIRMATION_ATTR
from tests.cli import assert_one_line_error
from tests.storage import add_trial, controller_attrs, new_study


def test_start_verify_without_imb_is_refused_before_anything_runs(autotune_cli, tmp_path):
    """A kernel search is checked by IMB, else by autotune's C benchmark: with neither (no IMB,
    no mpicc that builds it) --verify is one line, before anything runs."""
    assert_one_line_error(autotune_cli("start", "--collective", "allreduce", "--verify",
                                       "--benchmark", "mpi4py", "--foreground",
                                       extra_env={"PATH": os.environ["PATH"],
                                                  "AUTOTUNE_MPICC": "/bin/false",
                                                  "AUTOTUNE_KERNEL_CACHE": str(tmp_path / "c")}),
                          "--verify: IMB-MPI1 not found")
    assert_one_line_error(autotune_cli("start", "--collective", "allreduce", "--imb-dir",
                                       str(tmp_path), "--foreground"), "IMB-MPI1 not found")


def test_verify_refuses_while_the_study_runs(autotune_cli, tmp_path, monkeypatch):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.0, env={}),
              value=0.0)
    url = f"sqlite:///{tmp_path / 't.db'}"
    assert autotune_cli("verify", "--storage", url, check=True).stdout == (
        "nothing to verify: the study recommends the untuned stack\n")
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=1.2), value=-math.log(1.2))
    study.set_user_attr(CONFIRMATION_ATTR, {"rounds": 2, "best_trial": 1, "candidates": [
        {"trial": 1, "speedup": 1.2, "speedup_interval": [1.1, 1.3]}]})
    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path / "home"))  # the lock the CLI looks at
    lock = StudyLock.of(url, "s")
    lock.acquire(Owner(pid=os.getpid(), host=socket.gethostname(), started=time.time(),
                       study="s", log=str(lock.log)))
    try:
        assert_one_line_error(autotune_cli("verify", "--storage", url),
                              "study 's' is already running")
    finally:
        lock.release()
