"""Storage URLs and finding a study: every failure is one readable line."""

from __future__ import annotations

import optuna
import pytest

from autotune.errors import InputError, StorageError
from autotune.storage import (default_storage_url, load_existing_study, open_storage, redact,
                              study_names)


def _one_line(exc_info) -> str:
    message = str(exc_info.value)
    assert message and "\n" not in message and len(message) < 300
    return message


def test_unknown_url_scheme(tmp_path):
    with pytest.raises(StorageError) as info:
        open_storage("bogus://x")
    assert _one_line(info).startswith("cannot open storage bogus://x: ")


def test_sqlite_file_in_a_missing_directory(tmp_path):
    url = f"sqlite:///{tmp_path / 'nowhere' / 'a.db'}"
    with pytest.raises(StorageError) as info:
        open_storage(url)
    assert "does not exist" in _one_line(info)
    assert not (tmp_path / "nowhere").exists()


def test_password_never_shown(tmp_path):
    with pytest.raises(StorageError) as info:
        open_storage("postgresql+nosuchdriver://tuner:s3cret@127.0.0.1:1/db")
    message = _one_line(info)
    assert "s3cret" not in message and "tuner:***@" in message
    assert redact("mysql://u:p@h/db") == "mysql://u:***@h/db"
    assert redact("sqlite:////a/b.db") == "sqlite:////a/b.db"


def test_default_storage_is_created_under_autotune_home(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path / "home"))
    assert default_storage_url() == f"sqlite:///{tmp_path / 'home' / 'autotune.db'}"
    storage = open_storage(None)
    optuna.create_study(study_name="a", storage=storage)
    assert (tmp_path / "home" / "autotune.db").is_file()


def test_tables_created_by_another_program_in_between_are_found(tmp_path, monkeypatch):
    """An Optuna script reading the same new file knows nothing of our init lock: it may create
    the tables after Optuna's look and before its create ("table ... already exists"). Seen in a
    Ray test whose poller opened the database while the daemon created it."""
    import sqlalchemy.exc

    url = f"sqlite:///{tmp_path / 'new.db'}"
    real = optuna.storages.RDBStorage
    calls = []

    class Racing(real):
        def __init__(self, *args, **kwargs):
            calls.append(args)
            if len(calls) == 1:
                real(url)  # the other program wins the race
                raise sqlalchemy.exc.OperationalError(
                    "CREATE TABLE trial_heartbeats", {},
                    Exception("table trial_heartbeats already exists"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(optuna.storages, "RDBStorage", Racing)
    storage = open_storage(url)
    optuna.create_study(study_name="after-the-race", storage=storage)
    assert len(calls) == 2 and study_names(storage) == ["after-the-race"]


def test_journal_file_storage(tmp_path):
    url = f"journal:{tmp_path / 'j' / 'studies.log'}"
    optuna.create_study(study_name="j1", storage=open_storage(url))
    assert study_names(open_storage(url)) == ["j1"]


def test_load_existing_study_errors(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    storage = open_storage(url)
    with pytest.raises(InputError) as info:
        load_existing_study(storage, None, url)
    assert "no study in" in _one_line(info) and "autotune start" in str(info.value)
    with pytest.raises(InputError, match="no study named 'x'") as info:
        load_existing_study(storage, "x", url)
    optuna.create_study(study_name="b", storage=storage)
    assert load_existing_study(storage, None, url).study_name == "b"
    optuna.create_study(study_name="a", storage=storage)
    with pytest.raises(InputError) as info:
        load_existing_study(storage, None, url)
    assert _one_line(info).endswith("choose one with --study: a, b")
    with pytest.raises(InputError) as info:
        load_existing_study(storage, "c", url)
    assert "(studies: a, b)" in _one_line(info)
    assert load_existing_study(storage, "a", url).study_name == "a"
    assert sorted(study_names(storage)) == ["a", "b"]
