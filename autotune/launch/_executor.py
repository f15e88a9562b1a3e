"""Run one command in its own session, with a deadline, bounded output capture and a clean
environment; on exit or timeout every process of the session is gone, and so is every process
that left the session but carries the launch's tag (LAUNCH_TAG_VAR)."""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import IO

from ._base import Command, RunResult

MAX_OUTPUT_BYTES = 8 * 1024 * 1024  # more than any healthy benchmark prints
KILL_GRACE_SECONDS = 3.0


def _read_capped(handle) -> tuple[str, bool]:
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(0)
    data = handle.read(MAX_OUTPUT_BYTES)
    return data.decode("utf-8", errors="replace"), size > MAX_OUTPUT_BYTES


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes of a session, read from /proc. Open MPI puts every rank in a
    process group of its own, so the session (mpirun started it, start_new_session) is what holds
    mpirun, its daemons and all the ranks together."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(entry))
    return members


# Every launch's processes carry this variable with a value of their own: a process that left
# the session (setsid, a daemonizing helper) still carries it, so it is found and killed too.
LAUNCH_TAG_VAR = "AUTOTUNE_LAUNCH_TAG"


def tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment holds LAUNCH_TAG_VAR=tag (this user's, from /proc)."""
    needle = f"{LAUNCH_TAG_VAR}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle not in handle.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except (OSError, IndexError):
            continue
        found.append(int(entry))
    return found


def kill_session(proc: subprocess.Popen, tag: str | None = None) -> None:
    """TERM every process of the launch's session, KILL what outlives a grace; return only when
    none is left alive (mpirun exiting is not enough: its ranks may still be running). Then the
    same for processes that left the session but carry the launch's tag, after ORPHAN_GRACE for
    them to end on their own (a daemon of the MPI runtime cleaning up its session directory)."""
    _kill(proc, lambda: session_members(proc.pid))
    if tag and tagged_processes(tag):
        deadline = time.monotonic() + ORPHAN_GRACE_SECONDS
        while time.monotonic() < deadline and tagged_processes(tag):
            time.sleep(0.05)
        _kill(proc, lambda: tagged_processes(tag))


ORPHAN_GRACE_SECONDS = 1.0


def _kill(proc: subprocess.Popen, members_of: Callable[[], list[int]]) -> None:
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
        proc.poll()  # reap mpirun so it does not count as alive
        members = members_of()
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()
            if not members_of():
                break
            time.sleep(0.02)
        else:
            continue
        break
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


# Tuning variables inherited from the user's shell (e.g. after `source best.env`) would silently
# apply to the default and to every candidate: a launch gets only what its configuration sets.
INHERITED_TUNING = ("OMPI_MCA_", "UCX_", "PMIX_MCA_", "MPICH_", "MPIR_CVAR_", "I_MPI_", "HCOLL_",
                    "UCC_", "FI_")


def launch_environment(extra: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """This process's environment without inherited tuning variables, plus the launch's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(INHERITED_TUNING)}
    dropped = sorted(k for k in os.environ if k.startswith(INHERITED_TUNING))
    env.update(extra)
    return env, dropped


_PR_SET_PDEATHSIG = 1


try:  # looked up here: the child of a threaded process must only make the call
    _prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
except OSError:
    _prctl = None


def _die_with_parent() -> None:
    """In the child before exec (only without a setpriv that can): SIGTERM when autotune dies."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _check_program(name: str, path: str | None) -> None:
    """Raise the OSError exec would for a launcher that is missing or not executable, so it is
    reported as a spawn error whatever the locale of setpriv's message."""
    if shutil.which(name, path=path) is not None:
        return
    if os.sep in name and os.path.exists(name):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)


@functools.cache
def _setpriv() -> str | None:
    """util-linux's setpriv, where it can set the parent-death signal (2.33 and later)."""
    path = shutil.which("setpriv")
    if path is None:
        return None
    try:
        probe = subprocess.run([path, "--pdeathsig", "TERM", "--", "true"], capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if probe.returncode == 0 else None


SETPRIV_FAILED = (126, 127)  # setpriv's exit codes when its exec of the program failed


def _spawn(argv: list[str], env: dict[str, str], out: IO[bytes], err: IO[bytes]
           ) -> tuple[subprocess.Popen, bool]:
    """Start argv in a session of its own that gets SIGTERM if autotune dies (even by SIGKILL),
    so mpirun cleans up its ranks instead of running on as an orphan; and whether setpriv runs
    it (then an exec failure is setpriv's exit, not an OSError here).

    The parent-death signal is set by exec'ing through util-linux's setpriv, not by a preexec_fn:
    a preexec_fn makes CPython fork() instead of vfork(), and fork() runs the pthread_atfork
    handlers of the libraries loaded here. OpenBLAS's waits for its thread pool, so a launch
    started while another trial's thread was in a numpy product hung autotune for good
    (`--parallel 2`, caught by py-spy: blas_thread_shutdown_ in Popen against cblas_matrixproduct;
    OpenBLAS issue #2270). argv[0] is passed on as given: Open MPI reads an absolute path to
    mpirun as --prefix. Without a setpriv that can do it, the preexec_fn is the fallback."""
    setpriv = _setpriv()
    if setpriv is None:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                start_new_session=True, preexec_fn=_die_with_parent), False
    _check_program(argv[0], env.get("PATH", os.defpath))
    return subprocess.Popen([setpriv, "--pdeathsig", "TERM", "--", *argv],
                            stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                            start_new_session=True), True


CANCEL_POLL_SECONDS = 0.2


def _wait(proc: subprocess.Popen, timeout: float, cancel: threading.Event | None) -> str:
    """Wait for the process: "" when it exited, else "timeout" or "cancelled"."""
    if cancel is None:
        try:
            proc.wait(timeout=timeout)
            return ""
        except subprocess.TimeoutExpired:
            return "timeout"
    deadline = time.monotonic() + timeout
    while True:
        if cancel.is_set():
            return "cancelled"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        try:
            proc.wait(timeout=min(left, CANCEL_POLL_SECONDS))
            return ""
        except subprocess.TimeoutExpired:
            pass


def run_command(command: Command, timeout: float,
                cancel: threading.Event | None = None) -> RunResult:
    """Start argv (no shell) in a new session; output goes to temp files so a flood cannot block.
    Setting `cancel` (another thread stopping the run) kills the launch like a timeout does."""
    env, dropped = launch_environment(dict(command.env))
    tag = uuid.uuid4().hex
    env[LAUNCH_TAG_VAR] = tag
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.time()
        t0 = time.monotonic()
        try:
            proc, wrapped = _spawn(list(command.argv), env, out, err)
        except OSError as exc:
            return RunResult(argv=command.argv, returncode=None, stdout="", stderr=str(exc),
                             seconds=time.monotonic() - t0, started=started,
                             extra={"spawn_error": exc.strerror or str(exc)})
        ended = "cancelled"
        try:
            ended = _wait(proc, timeout, cancel)
        finally:
            # mpirun may leave daemons or ranks behind even after exiting: clean the session.
            kill_session(proc, tag)
        seconds = time.monotonic() - t0
        stdout, cut_out = _read_capped(out)
        stderr, cut_err = _read_capped(err)
    extra: dict[str, object] = {"inherited_env_dropped": dropped} if dropped else {}
    if ended == "cancelled":
        extra["cancelled"] = True
    returncode = None if ended else proc.returncode
    if wrapped and returncode in SETPRIV_FAILED and stderr.startswith("setpriv: "):
        extra["spawn_error"] = stderr.splitlines()[0]  # e.g. an interpreter a script names
        returncode = None
    return RunResult(argv=command.argv, returncode=returncode,
                     stdout=stdout, stderr=stderr, seconds=seconds, started=started,
                     timed_out=ended == "timeout", output_truncated=cut_out or cut_err, extra=extra)
