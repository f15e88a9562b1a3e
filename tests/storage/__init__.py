"""Real Optuna SQLite studies whose trials carry user attributes shaped exactly like the ones the
controller writes (literal keys: this pins the stored format that old studies have)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import optuna

from autotune.storage import open_storage

CHOICES = ["all", "self,sm", "self,tcp"]
CONFIG = {"collective": "allreduce", "nodes": 1, "ppn": 2, "space": "test", "sizes": [8, 1024],
          "weights": {"8": 0.5, "1024": 0.5}, "repetitions": 2, "stages": 1,
          "time_per_size": 0.01, "weights_source": "uniform over log2(size)", "space_digest": "ab"}
HOST = {"host": "n1", "cpu_model": "Test CPU", "cores": 4, "mpi": "Open MPI 4.1.4",
        "ucx": "1.13.1", "python": "3.11.2"}


def new_study(tmp_path, name: str = "s", db: str = "t.db") -> optuna.Study:
    storage = open_storage(f"sqlite:///{tmp_path / db}")
    study = optuna.create_study(study_name=name, storage=storage)
    study.set_user_attr("autotune.config", CONFIG)
    return study


def launch(index: int, sizes: dict[int, float], argv=None, failure: str = "") -> dict[str, Any]:
    return {"index": index, "block": 0, "rep": index, "seed": 7, "sizes": sorted(sizes),
            "argv": argv or ["mpirun", "-np", "2", "python", "-m", "kernel"], "hosts": ["n1"],
            "started": 1000.0 + index, "seconds": 0.5, "returncode": 1 if failure else 0,
            "t_max_us": {str(s): t for s, t in sizes.items()},
            "iters": {str(s): 100 for s in sizes}, "failure": failure, "kernel_started": None,
            "inherited_env_dropped": []}


def controller_attrs(*, is_default: bool = False, state: str = "COMPLETE", run_id: str = "run1",
                     env: dict | None = None, speedup: float = 1.1) -> dict[str, Any]:
    """What Controller._record stores for a trial that ended in `state`."""
    raw = {"8": [2.0, 2.2], "1024": [10.0, 11.0]}
    attrs: dict[str, Any] = {
        "is_default": is_default,
        "baseline_ids": [1, 2],
        "default_us": {"8": [2.1, 2.3], "1024": [12.0, 12.5]},
        "baseline_launches_during": 2,
        "run_id": run_id,
        "host": HOST,
        "context": {"NPS": 1},
        "fingerprint": {"hosts": ["n1"], "cpu_model": "Test CPU"},
        "settings": {"env": env if env is not None else {"UCX_TLS": "self,sm"},
                     "mca": {"pml": "ucx"}, "mpirun_args": ["--map-by", "numa"]},
        "raw_us": raw,
        "launches": [launch(0, {8: 2.0, 1024: 10.0}), launch(1, {8: 2.2, 1024: 11.0})],
        "launch_count": 2,
        "sizes_measured": 2,
        "sizes_complete": 2,
        "bench_seconds": 1.5,
        "controller_seconds": 0.01,
        "nodes": ["10.0.0.1"],
        "node_names": ["n1"],
        "node_group": "static:0",
        "acquire_seconds": 0.0,
        "dispatch_seconds": 0.2,
    }
    if state == "FAIL":
        for key in ("raw_us", "launches"):
            attrs[key] = {} if key == "raw_us" else [launch(0, {}, failure="config")]
        attrs.update(launch_count=1, sizes_measured=0, sizes_complete=0, fail_reason="config",
                     fail_detail="MPI refused the configuration", stderr_tail="unreachable\n")
        return attrs
    attrs["scores"] = {"8": -0.05, "1024": -0.12}
    if state == "PRUNED":
        attrs["partial_speedup"] = 0.93
    else:
        attrs["speedup"] = speedup
    return attrs


def add_trial(study: optuna.Study, ucx_tls: str, state: str = "COMPLETE",
              attrs: dict[str, Any] | None = None, value: float | None = None) -> int:
    """A trial through enqueue/ask/tell, as the controller makes it."""
    study.enqueue_trial({"UCX_TLS": ucx_tls})
    trial = study.ask()
    trial.suggest_categorical("UCX_TLS", CHOICES)
    for key, item in (attrs if attrs is not None else controller_attrs(state=state)).items():
        trial.set_user_attr(key, item)
    if state == "COMPLETE":
        study.tell(trial, -0.0953 if value is None else value)
    elif state == "PRUNED":
        study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    elif state == "FAIL":
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return trial.number


def reload(study: optuna.Study, tmp_path, db: str = "t.db") -> optuna.Study:
    """The same study read back through a fresh storage object (nothing cached)."""
    return optuna.load_study(study_name=study.study_name,
                             storage=open_storage(f"sqlite:///{tmp_path / db}"))


def fill_disk(disk: Path) -> Path:
    """Fill the file system of `disk` to the last byte with one file, returned (unlink it to free)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def trials_in(db: Path, state: str, study_name: str | None = None) -> int:
    """Trials in `state` (of one study, if named) read from the SQLite file behind a running
    study: read-only, and a lock its writer holds is not waited for (50 ms) but reads as 0,
    to be looked at again later (the writer may be frozen mid-commit)."""
    query = "SELECT count(*) FROM trials JOIN studies USING (study_id) WHERE state = ?"
    args: tuple[str, ...] = (state,)
    if study_name is not None:
        query, args = query + " AND study_name = ?", (state, study_name)
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.05)
        try:
            return con.execute(query, args).fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0  # not created yet, or locked
