"""A storage that waits out a locked database and a full disk instead of ending the run.

Optuna's RDB storage turns SQLite's "database is locked" (a reader holding a transaction longer
than the busy timeout: a notebook, a dashboard) and "database or disk is full" into a generic
StorageInternalError, and the daemon died of it with that message. Every storage call goes
through here: a locked database is retried with backoff and said to be "locked by another
process"; a full disk pauses the caller ("disk full at PATH") and resumes when space comes back.
A failed SQLite transaction is rolled back whole, so repeating the call is safe. Past the wait
limits the call fails with a StorageError that names the cause in one line.
"""

from __future__ import annotations

import errno
import functools
import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import optuna

from ..errors import StorageError
from ._transaction import ParamItem, set_params_together, set_user_attrs_together

LOCKED_SIGNS = ("database is locked", "database table is locked")
FULL_SIGNS = ("database or disk is full", "No space left on device")
CORRUPT_SIGNS = ("database disk image is malformed", "file is not a database",
                 "Could not decode to UTF-8")


def cause_of(exc: BaseException) -> str:
    """"locked", "full", "corrupt" or "" from an exception or anything in its chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno == errno.ENOSPC:
            return "full"
        if isinstance(current, (json.JSONDecodeError, UnicodeDecodeError)):
            return "corrupt"  # a stored value Optuna cannot read back
        text = str(current)
        if any(sign in text for sign in LOCKED_SIGNS):
            return "locked"
        if any(sign in text for sign in FULL_SIGNS):
            return "full"
        if any(sign in text for sign in CORRUPT_SIGNS):
            return "corrupt"
        current = current.__cause__ or current.__context__
    return ""


class PatientStorage(optuna.storages.BaseStorage):
    """Delegates every call to `inner`, waiting out a locked database (backoff up to
    `locked_wait` seconds) and a full disk (polled up to `full_wait` seconds)."""

    def __init__(self, inner: optuna.storages.BaseStorage, where: str, *,
                 locked_wait: float = 600.0, full_wait: float = 3600.0,
                 notify: Callable[[str], None] | None = None) -> None:
        self.inner = inner
        self.where = where
        self.locked_wait = locked_wait
        self.full_wait = full_wait
        self.notify = notify  # told once per wait: "storage ... locked by another process; ..."
        self.waited = {"locked": 0, "full": 0}  # waits survived, for tests and the run summary

    def __getattr__(self, name: str) -> Any:  # anything else an inner storage offers
        return getattr(self.inner, name)

    def set_trial_params(self, trial_id: int, items: Sequence[ParamItem]) -> None:
        """A trial's parameters, in one transaction where the storage allows (_transaction)."""
        self.patiently("set_trial_params", set_params_together, self.inner, trial_id, items)

    def set_trial_user_attrs(self, trial_id: int, attrs: Mapping[str, Any]) -> None:
        """Many user attributes of a trial, in one transaction where the storage allows."""
        self.patiently("set_trial_user_attrs", set_user_attrs_together, self.inner, trial_id, attrs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.patiently(name, getattr(self.inner, name), *args, **kwargs)

    def patiently(self, name: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`method(*args, **kwargs)`, waiting out a locked database or a full disk."""
        started = time.monotonic()
        delay, told = 0.5, ""
        while True:
            try:
                return method(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - only two causes are waited out; see below
                cause = cause_of(exc)
                if not cause:
                    raise
                if cause == "corrupt":
                    detail = (str(exc).strip().splitlines() or [exc.__class__.__name__])[0]
                    raise StorageError(f"storage {self.where} is corrupt: {name} could not read "
                                       f"it ({detail[:160]}); restore a copy") from None
                limit = self.locked_wait if cause == "locked" else self.full_wait
                waited = time.monotonic() - started
                message = (f"storage {self.where} locked by another process"
                           if cause == "locked" else f"disk full at {self.where}")
                if waited >= limit:
                    raise StorageError(f"{message} for {waited:.0f} s; giving up (nothing "
                                       "stored was lost: run `autotune start` again later)") from None
                if told != cause and self.notify is not None:
                    self.notify(f"{message}; waiting (up to {limit:.0f} s) and retrying"
                                + ("" if cause == "locked" else ": free some space"))
                told = cause
                self.waited[cause] += 1
                time.sleep(min(delay, max(0.0, limit - waited)))
                delay = min(delay * 2, 10.0 if cause == "full" else 5.0)


def _delegate(name: str) -> Callable[..., Any]:
    @functools.wraps(getattr(optuna.storages.BaseStorage, name))
    def method(self: PatientStorage, *args: Any, **kwargs: Any) -> Any:
        return self.call(name, *args, **kwargs)
    return method


for _name in dir(optuna.storages.BaseStorage):
    if not _name.startswith("_") and callable(getattr(optuna.storages.BaseStorage, _name)):
        setattr(PatientStorage, _name, _delegate(_name))
PatientStorage.__abstractmethods__ = frozenset()
