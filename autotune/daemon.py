"""Run a study unattended: detach, one owner per study (a lock that dies with its owner), signals
that stop cleanly, and the files a user looks at (pid/owner, log) under $AUTOTUNE_HOME."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import AutotuneError, StopRequested, StorageError
from .storage import autotune_home


class AlreadyRunning(AutotuneError):
    exit_code = 3


@dataclass(frozen=True)
class Owner:
    pid: int
    host: str
    started: float
    study: str
    log: str

    def alive(self) -> bool:
        if self.host != socket.gethostname():
            return True  # cannot check another host; the lock says it is held
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def study_slug(storage_url: str, study: str) -> str:
    """A file-name-safe key per (storage, study): readable prefix plus a hash of both."""
    digest = hashlib.sha256(f"{storage_url}\0{study}".encode()).hexdigest()[:10]
    return f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', study)[:60]}-{digest}"


def run_dir() -> Path:
    path = autotune_home() / "run"
    path.mkdir(parents=True, exist_ok=True)
    return path


def log_path(slug: str) -> Path:
    path = autotune_home() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path / f"{slug}.log"


class StudyLock:
    """An exclusive flock on run/<slug>.lock. The kernel drops it when the owner dies, however it
    dies, so a lock left by a dead owner is free at once. The file also names the owner."""

    def __init__(self, slug: str) -> None:
        self.slug = slug
        self.path = run_dir() / f"{slug}.lock"
        self.log = log_path(slug)
        self._fd: int | None = None

    @classmethod
    def of(cls, storage_url: str, study: str) -> "StudyLock":
        return cls(study_slug(storage_url, study))

    def refuse_if_held(self, study: str) -> None:
        current = self.owner()
        if current is not None:
            raise AlreadyRunning(f"study {study!r} is already running (pid {current.pid} on "
                                 f"{current.host}); `autotune stop` ends it, `autotune status` "
                                 "shows it")

    def acquire(self, owner: Owner) -> None:
        try:
            self._acquire(owner)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise StorageError(f"disk full at {self.path.parent}: cannot write the study's "
                                   "lock file; free some space and start again") from None
            raise

    def _acquire(self, owner: Owner) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            # the winner takes the lock, then writes its name: give it a moment to say who it is
            for _ in range(20):
                self.refuse_if_held(owner.study)
                time.sleep(0.05)
            raise AlreadyRunning(f"study {owner.study!r} is already running") from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(asdict(owner)).encode())
            os.fsync(fd)
        except OSError:
            os.close(fd)  # the lock goes with it
            raise
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None

    def owner(self) -> Owner | None:
        """The process holding the lock, or None when nobody holds it (a stale file is ignored)."""
        if not self.path.exists():
            return None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return None  # nobody holds it
            except BlockingIOError:
                pass
            text = os.read(fd, 65536).decode(errors="replace")
        finally:
            os.close(fd)
        try:
            return Owner(**json.loads(text))
        except (ValueError, TypeError):
            return None


def install_stop_handlers() -> None:
    """The first SIGTERM/SIGINT/SIGHUP raises StopRequested where the program is; later ones are
    ignored so cleanup (killing the benchmark, storing the trial) is not interrupted."""

    def handler(signum: int, _frame) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        raise StopRequested(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, handler)


READY_ENV = "AUTOTUNE_READY_FILE"


def mark_ready() -> None:
    """In a detached run: the study is prepared (lock held, storage, space, nodes and UCX checked),
    so the `start` waiting in the user's terminal may report success."""
    path = os.environ.get(READY_ENV)
    if path:
        Path(path).write_text(str(os.getpid()))


def with_options(argv: list[str], *options: str) -> list[str]:
    """argv with more options, placed before a `--` (what follows it is a program's own argv,
    the application of `--benchmark app`, and must reach it unchanged)."""
    if "--" not in argv:
        return [*argv, *options]
    cut = argv.index("--")
    return [*argv[:cut], *options, *argv[cut:]]


def detach(argv: list[str], lock: StudyLock, wait: float = 600.0) -> Owner:
    """Start `autotune <argv> --foreground` in a new session with output to the study's log, and
    return once it has prepared the study (everything `start` checks is checked); if it exits
    before, raise its own one-line error (exit code kept), so nothing reports success that the
    daemon could not use."""
    log = lock.log
    ready = lock.path.with_suffix(".ready")
    ready.unlink(missing_ok=True)
    with open(log, "ab") as handle:
        command = argv[0] if argv else "start"
        handle.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} autotune {command} (background)\n"
                     .encode())
        offset = handle.tell()
        proc = subprocess.Popen([sys.executable, "-m", "autotune",
                                 *with_options(argv, "--foreground")],
                                stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True,
                                env={**os.environ, "AUTOTUNE_DAEMON": "1", "COLUMNS": "120",
                                     READY_ENV: str(ready)})
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline:
            if ready.exists() and ready.read_text().strip() == str(proc.pid):
                owner = lock.owner()
                if owner and owner.pid == proc.pid:
                    return owner
            if proc.poll() is not None:
                raise _exited_at_once(proc.returncode, log, offset)
            time.sleep(0.1)
    finally:
        ready.unlink(missing_ok=True)
    raise AutotuneError(f"the background run did not get ready within {wait:.0f} s; it goes on "
                        f"(pid {proc.pid}): see {log}")


def _exited_at_once(code: int, log: Path, offset: int) -> AutotuneError:
    """The detached run's own error line (it prints exactly one), else its last lines."""
    with open(log, "rb") as handle:
        handle.seek(offset)
        lines = handle.read(1 << 20).decode(errors="replace").strip().splitlines()
    said = [line for line in lines if line.startswith("autotune: ")]
    if said:
        error = AutotuneError(said[-1].split(": ", 2)[-1] if "error: " in said[-1] else said[-1])
    else:
        tail = "; ".join(lines[-3:]) or "no output"
        error = AutotuneError(f"the background run exited at once (code {code}): {tail}; "
                              f"log {log}")
    error.exit_code = code or 1
    return error


def stop_owner(owner: Owner, timeout: float = 30.0) -> bool:
    """SIGTERM the owner and wait for it to exit; True when it did."""
    if owner.host != socket.gethostname():
        raise AutotuneError(f"the study runs on {owner.host} (pid {owner.pid}); stop it there")
    try:
        os.kill(owner.pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not owner.alive():
            return True
        time.sleep(0.1)
    return False
