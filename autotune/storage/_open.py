"""Where studies live: storage URLs (SQLite by default, any RDB URL, or a journal file) and the
studies in them. Every failure to open is one readable StorageError; a missing study an InputError.
"""

from __future__ import annotations

import fcntl
import os
import re
import warnings
from pathlib import Path

import optuna

from ..errors import InputError, StorageError


def autotune_home() -> Path:
    return Path(os.environ.get("AUTOTUNE_HOME") or Path.home() / ".autotune").expanduser()


def default_storage_url() -> str:
    return f"sqlite:///{autotune_home() / 'autotune.db'}"


def redact(url: str) -> str:
    return re.sub(r"(://[^:/@]+:)[^@]+@", r"\1***@", url)


def quiet_optuna() -> None:
    """Optuna's per-trial INFO logs and experimental warnings would drown our own progress."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def open_storage(url: str | None) -> optuna.storages.BaseStorage:
    """Open (and create) a storage; any failure is one readable StorageError."""
    quiet_optuna()
    url = url or default_storage_url()
    try:
        if url.startswith("journal:"):
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            path = Path(url[len("journal:"):].removeprefix("//"))
            path.parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(str(path)))
        if url.startswith("sqlite:///"):
            path = Path(url[len("sqlite:///"):])
            if url == default_storage_url():
                path.parent.mkdir(parents=True, exist_ok=True)
            elif not path.parent.is_dir():
                raise StorageError(f"cannot open storage {redact(url)}: directory {path.parent} "
                                   "does not exist")
            # two processes creating a new database at once race on its tables ("table
            # study_directions already exists"): one creates it while the other waits
            with open(path.with_name(path.name + ".init-lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                return optuna.storages.RDBStorage(
                    url, engine_kwargs={"connect_args": {"timeout": 60}})
        return optuna.storages.RDBStorage(url)
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
    names = study_names(storage)
    where = redact(url or default_storage_url())
    if name is None:
        if not names:
            raise InputError(f"no study in {where}: run `autotune start` first")
        if len(names) > 1:
            raise InputError(f"{len(names)} studies in {where}; choose one with --study: "
                             + ", ".join(sorted(names)))
        name = names[0]
    elif name not in names:
        raise InputError(f"no study named {name!r} in {where}"
                         + (f" (studies: {', '.join(sorted(names))})" if names else ""))
    return optuna.load_study(study_name=name, storage=storage)
