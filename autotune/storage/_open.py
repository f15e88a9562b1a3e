"""Where studies live: storage URLs (SQLite by default, any RDB URL, or a journal file) and the
studies in them. Every failure to open is one readable StorageError; a missing study an InputError.
"""

from __future__ import annotations

from collections.abc import Iterable

import fcntl
import os
import re
import sqlite3
import stat
import time
import warnings
from pathlib import Path

import optuna

from ..errors import InputError, StorageError
from ..files import autotune_home
from ._patient import PatientStorage


def default_storage_url() -> str:
    return f"sqlite:///{autotune_home() / 'autotune.db'}"


def redact(url: str) -> str:
    return re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", url)


def quiet_optuna() -> None:
    """Optuna's per-trial INFO logs and experimental warnings would drown our own progress."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def _check_storage_file(path: Path, url: str, create: bool) -> None:
    """A file storage must be a regular file (a FIFO would block the open forever, a device is no
    storage); a reader (create=False) never creates one."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if not create:
            raise StorageError(f"no autotune storage at {path}: no study yet; run "
                               "`autotune start` first") from None
        return
    except OSError as exc:
        raise StorageError(f"cannot open storage {redact(url)}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise StorageError(f"cannot open storage {redact(url)}: {path} is not a regular file")


SQLITE_HEADER = b"SQLite format 3\x00"


def busy_timeout() -> float:
    """Seconds SQLite waits for another process's lock before a call is retried (PatientStorage
    then waits it out); AUTOTUNE_SQLITE_TIMEOUT overrides the 60 s."""
    try:
        return max(0.1, float(os.environ.get("AUTOTUNE_SQLITE_TIMEOUT", "60")))
    except ValueError:
        return 60.0


def check_sqlite_file(path: Path) -> None:
    """Refuse a file that is not an SQLite database (never overwritten), and a corrupt one, named
    as what it is: SQLite's own quick_check must say ok."""
    with open(path, "rb") as handle:
        head = handle.read(len(SQLITE_HEADER))
    if head and head != SQLITE_HEADER:
        raise StorageError(f"{path} is not an SQLite database; refused, not overwritten")
    if not head:
        return  # empty: SQLite makes a database of it
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=busy_timeout())
        try:
            rows = con.execute("PRAGMA quick_check").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"storage {path} is corrupt: {exc}") from None
    problems = [str(r[0]) for r in rows if r and r[0] != "ok"]
    if problems:
        first = " ".join(problems[0].split())[:200]
        raise StorageError(f"storage {path} is corrupt: {first} ({len(problems)} "
                           "problem(s) found by SQLite's quick_check); restore a copy")


def _rdb_storage(url: str, **kwargs) -> optuna.storages.RDBStorage:
    """Optuna's RDBStorage, once more when another program (an Optuna script or dashboard, which
    knows nothing of our init lock) created the same tables between Optuna's look and its create:
    "table ... already exists" then means the schema is there and a second open finds it."""
    for attempt in range(2):
        try:
            return optuna.storages.RDBStorage(url, **kwargs)
        except Exception as exc:  # sqlalchemy's OperationalError; its text is what tells
            if "already exists" not in str(exc):
                raise
            time.sleep(0.2 * (attempt + 1))
    return optuna.storages.RDBStorage(url, **kwargs)


def open_storage(url: str | None, create: bool = True) -> optuna.storages.BaseStorage:
    """Open a storage, creating it when create is true (`start`); readers pass create=False and
    get "no autotune storage at PATH" for a file storage that does not exist. Any failure is one
    readable StorageError."""
    quiet_optuna()
    url = url or default_storage_url()
    try:
        if url.startswith("journal:"):
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            path = Path(url[len("journal:"):].removeprefix("//"))
            _check_storage_file(path, url, create)
            path.parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(str(path)))
        if url.startswith("sqlite:///"):
            path = Path(url[len("sqlite:///"):].split("?", 1)[0])
            if str(path) not in ("", ":memory:"):
                _check_storage_file(path, url, create)
            if url == default_storage_url():
                path.parent.mkdir(parents=True, exist_ok=True)
            elif not path.parent.is_dir():
                raise StorageError(f"cannot open storage {redact(url)}: directory {path.parent} "
                                   "does not exist")
            if str(path) not in ("", ":memory:") and path.exists():
                check_sqlite_file(path)
            # two processes creating a new database at once race on its tables ("table
            # study_directions already exists"): one creates it while the other waits
            with open(path.with_name(path.name + ".init-lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                return PatientStorage(_rdb_storage(
                    url, engine_kwargs={"connect_args": {"timeout": busy_timeout()}}), str(path))
        return PatientStorage(_rdb_storage(url), redact(url))
    except StorageError:
        raise
    except Exception as exc:  # sqlalchemy/optuna raise many types; the user needs one line
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise StorageError(f"cannot open storage {redact(url)}: {reason[:200]}") from None


def study_names(storage: optuna.storages.BaseStorage) -> list[str]:
    return [s.study_name for s in storage.get_all_studies()]


def load_existing_study(storage: optuna.storages.BaseStorage, name: str | None,
                        url: str | None = None) -> optuna.Study:
    """The named study, or the only one in the storage when no name is given."""
    name = choose_name(study_names(storage), name, redact(url or default_storage_url()),
                       ("study", "studies", "--study", "autotune start"))
    return optuna.load_study(study_name=name, storage=storage)


def choose_name(names: Iterable[str], name: str | None, where: str,
                words: tuple[str, str, str, str]) -> str:
    """`name` if it is one of `names`, or the only one when no name is given; else one line
    saying what there is. words: (kind, plural, the option that names one, what creates one)."""
    kind, plural, option, creator = words
    names = sorted(names)
    if name is None:
        if not names:
            raise InputError(f"no {kind} in {where}: run `{creator}` first")
        if len(names) > 1:
            raise InputError(f"{len(names)} {plural} in {where}; choose one with {option}: "
                             + ", ".join(names))
        return names[0]
    if name not in names:
        raise InputError(f"no {kind} named {name!r} in {where}"
                         + (f" ({plural}: {', '.join(names)})" if names else ""))
    return name
