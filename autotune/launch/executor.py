"""Run one command in its own process group, with a deadline and bounded output capture."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time

from ._base import Command, RunResult

MAX_OUTPUT_BYTES = 8 * 1024 * 1024  # more than any healthy benchmark prints
KILL_GRACE_SECONDS = 3.0


def _read_capped(handle) -> tuple[str, bool]:
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(0)
    data = handle.read(MAX_OUTPUT_BYTES)
    return data.decode("utf-8", errors="replace"), size > MAX_OUTPUT_BYTES


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of a process group, read from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def kill_group(proc: subprocess.Popen) -> None:
    """TERM the whole process group (mpirun, its daemons, the ranks), KILL what outlives a grace.

    Returns only when no live member is left: the leader exiting is not enough, its ranks may
    still be running.
    """
    pgid = proc.pid
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
        proc.poll()
        if not group_members(pgid):
            break
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            proc.poll()  # reap the leader so it does not count as alive
            if not group_members(pgid):
                break
            time.sleep(0.02)
        else:
            continue
        break
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def run_command(command: Command, timeout: float) -> RunResult:
    """Start argv (no shell) in a new session; output goes to temp files so a flood cannot block."""
    env = dict(os.environ)
    env.update(dict(command.env))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.time()
        t0 = time.monotonic()
        proc = subprocess.Popen(list(command.argv), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, env=env, start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            # mpirun may leave daemons or ranks behind even after exiting: clean the group.
            kill_group(proc)
        seconds = time.monotonic() - t0
        stdout, cut_out = _read_capped(out)
        stderr, cut_err = _read_capped(err)
    return RunResult(argv=command.argv, returncode=None if timed_out else proc.returncode,
                     stdout=stdout, stderr=stderr, seconds=seconds, started=started,
                     timed_out=timed_out, output_truncated=cut_out or cut_err)
