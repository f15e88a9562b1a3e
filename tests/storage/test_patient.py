"""A locked database and a full disk are waited out, named, and lose nothing (real SQLite)."""
import sqlite3
import threading
import time
from pathlib import Path

import optuna
import pytest

from autotune.errors import StorageError
from autotune.storage._patient import PatientStorage, cause_of
from tests.storage import fill_disk


def rdb(path: Path, busy_seconds: float) -> optuna.storages.RDBStorage:
    return optuna.storages.RDBStorage(f"sqlite:///{path}",
                                      engine_kwargs={"connect_args": {"timeout": busy_seconds}})


def hold_read_lock(path: Path, seconds: float, started: threading.Event) -> None:
    """A reader that keeps a transaction open, as a notebook or a dashboard may."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN")
    con.execute("SELECT count(*) FROM trials").fetchall()
    started.set()
    time.sleep(seconds)
    con.execute("COMMIT")
    con.close()


def test_a_reader_holding_the_database_past_the_busy_timeout_is_waited_out(tmp_path):
    path = tmp_path / "s.db"
    heard = []
    storage = PatientStorage(rdb(path, 0.5), str(path), notify=heard.append)
    study = optuna.create_study(storage=storage, study_name="s")
    study.enqueue_trial({"x": 1.0})
    started = threading.Event()
    reader = threading.Thread(target=hold_read_lock, args=(path, 3.0, started))
    reader.start()
    started.wait(5)
    t0 = time.monotonic()
    trial = study.ask()  # writes: blocked by the reader's shared lock beyond the busy timeout
    study.tell(trial, 1.0)
    reader.join()
    assert time.monotonic() - t0 >= 2.0 and storage.waited["locked"] >= 1
    assert heard and heard[0].startswith(f"storage {path} locked by another process")
    assert [t.value for t in optuna.load_study(study_name="s", storage=rdb(path, 5)).trials] == [1.0]


def test_past_the_limit_the_lock_is_a_named_one_line_error(tmp_path):
    path = tmp_path / "s.db"
    storage = PatientStorage(rdb(path, 0.2), str(path), locked_wait=1.0)
    study = optuna.create_study(storage=storage, study_name="s")
    started = threading.Event()
    reader = threading.Thread(target=hold_read_lock, args=(path, 4.0, started))
    reader.start()
    started.wait(5)
    with pytest.raises(StorageError, match="locked by another process for"):
        study.set_user_attr("k", "v")
    reader.join()


def test_a_full_disk_pauses_and_resumes_when_space_comes_back(small_disk):
    path = small_disk / "s.db"
    heard = []
    storage = PatientStorage(rdb(path, 5), str(path), notify=heard.append)
    study = optuna.create_study(storage=storage, study_name="s")
    study.set_user_attr("before", "kept")
    filler = fill_disk(small_disk)
    threading.Timer(2.0, filler.unlink).start()  # space comes back
    study.set_user_attr("big", "x" * 200_000)  # does not fit until the filler is gone
    assert storage.waited["full"] >= 1 and heard[0].startswith(f"disk full at {path}")
    reread = optuna.load_study(study_name="s", storage=rdb(path, 5))
    assert reread.user_attrs["before"] == "kept" and len(reread.user_attrs["big"]) == 200_000


def test_causes_are_read_through_the_exception_chain():
    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as inner:
            raise optuna.exceptions.StorageInternalError("commit failed") from inner
    except optuna.exceptions.StorageInternalError as exc:
        assert cause_of(exc) == "full"
    assert cause_of(OSError(28, "No space left on device")) == "full"
    assert cause_of(ValueError("x")) == ""
