"""A background `start` checks its input before it detaches: bad input is one line on stderr, a
non-zero exit, and no daemon (no lock, no log, no process); good input detaches a daemon that
`status` sees and `stop` ends."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from tests.cli import assert_one_line_error

FAST = ["--collective", "allreduce", "--ppn", "2", "--sizes", "8:1k", "--repetitions", "3",
        "--stages", "1", "--time-per-size", "0.003", "--no-check-live", "--confirm", "0"]


def processes_of(home: Path) -> list[str]:
    """Processes (other than zombies) started with this AUTOTUNE_HOME: a daemon would be one."""
    marker = f"AUTOTUNE_HOME={home}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in environ and state != "Z":
            found.append(f"{entry}: {cmd[:120]}")
    return found


def held_locks(home: Path) -> list[str]:
    from autotune.daemon import StudyLock

    run = home / "run"
    return [p.name for p in run.glob("*.lock") if StudyLock(p.stem).owner() is not None] \
        if run.is_dir() else []


@pytest.mark.parametrize("args, text", [
    (["--storage", "bogus://x"], "cannot open storage bogus://x"),
    (["--weights", "/nonexistent.yaml"], "cannot read weights file /nonexistent.yaml"),
    (["--space", "no-such-space"], "unknown search space 'no-such-space'"),
    (["--benchmark", "imb", "--imb-dir", "/nonexistent"], "IMB-MPI1"),
    (["--warm-start", "no-such-warm-start"], "warm-start file 'no-such-warm-start' not found"),
    (["--ppn", "64"], "--ppn 64 exceeds the"),
    (["--nodes", "3"], "--nodes 3 but only 1 host(s)"),
    (["--launcher-mca", "btl_tcp_if_include=a;b"], "invalid name or value"),
    (["--launcher-mca", "pml=ucx"], "--launcher-mca pml: the space tunes it"),
    (["--benchmark", "app", "--metric", "no group", "--", "true"], "needs exactly one group"),
    (["--benchmark", "app", "--", "no-such-program", "x"], "no-such-program: command not found"),
    (["--", "true"], "a program after -- is the benchmark of --benchmark app"),
])
def test_bad_input_is_refused_before_detaching(autotune_cli, tmp_path, monkeypatch, args, text):
    home = tmp_path / "home"
    monkeypatch.setenv("AUTOTUNE_HOME", str(home))
    proc = autotune_cli("start", "--collective", "allreduce", *args, timeout=120)
    assert_one_line_error(proc, text)
    assert "background" not in proc.stdout + proc.stderr
    time.sleep(1.0)  # a detached daemon would have taken its lock by now
    assert held_locks(home) == []
    assert not (home / "run").exists() or not list((home / "run").glob("*.lock"))
    assert not (home / "logs").exists() or not list((home / "logs").iterdir())  # never detached
    assert processes_of(home) == []


@pytest.mark.mpi
def test_good_input_detaches_a_daemon_that_stop_ends(autotune_cli, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("AUTOTUNE_HOME", str(home))
    proc = autotune_cli("start", *FAST, "--trials", "50", "--new-study", check=True, timeout=120)
    first = proc.stdout.splitlines()[0]
    assert " runs in the background: pid " in first, proc.stdout
    name = first.split()[1]
    assert name.startswith("allreduce-1n2p-") and name[-15:-7].isdigit()  # --new-study: timestamp
    try:
        status = json.loads(autotune_cli("status", "--study", name, "--format", "json",
                                         check=True).stdout)
        assert status["alive"] is True and status["study"] == name
        assert len(held_locks(home)) == 1 and processes_of(home)
        stopped = autotune_cli("stop", "--study", name, check=True, timeout=120).stdout
        assert stopped.startswith(f"stopped study {name} (pid ")
    finally:
        autotune_cli("stop", "--study", name, timeout=120)
    deadline = time.monotonic() + 15
    while processes_of(home) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert held_locks(home) == [] and processes_of(home) == []
    assert "not running" in autotune_cli("status", "--study", name, check=True).stdout


@pytest.mark.mpi
def test_a_refusal_after_detaching_is_relayed_as_one_line(autotune_cli, tmp_path, monkeypatch):
    """What only the run itself can find (here: the study exists with other sizes) still ends
    the background `start` with the run's own one-line error and its exit code, not success."""
    home = tmp_path / "home"
    monkeypatch.setenv("AUTOTUNE_HOME", str(home))
    autotune_cli("start", *FAST, "--trials", "1", "--foreground", check=True, timeout=300)
    changed = [a if a != "8:1k" else "8:2k" for a in FAST]
    proc = autotune_cli("start", *changed, "--trials", "1", timeout=300)
    assert_one_line_error(proc, "was created with different sizes")
    assert proc.returncode == 2
    assert held_locks(home) == [] and processes_of(home) == []


def test_more_options_go_before_the_program_of_an_app_benchmark():
    """The background start re-runs its command with --foreground (and --study for
    --new-study): those belong to autotune, never to the program after --."""
    from autotune.daemon import with_options

    assert with_options(["start", "--trials", "3"], "--foreground") == [
        "start", "--trials", "3", "--foreground"]
    assert with_options(["start", "--", "lmp", "-in", "x"], "--study", "s") == [
        "start", "--study", "s", "--", "lmp", "-in", "x"]


@pytest.mark.mpi
def test_an_app_study_detaches_once_with_its_program_intact(autotune_cli, tmp_path, monkeypatch):
    """A metric the untuned stack never prints is relayed from the daemon as one line; the
    program's argv reaches it whole (a --foreground appended after it once made each daemon
    start another in the background)."""
    home = tmp_path / "home"
    monkeypatch.setenv("AUTOTUNE_HOME", str(home))
    app = [sys.executable, str(Path(__file__).resolve().parents[1] / "data" / "fake_app.py")]
    proc = autotune_cli("start", "--collective", "allreduce", "--ppn", "2", "--benchmark", "app",
                        "--metric", r"never printed ([0-9]+)", "--trials", "2", "--new-study",
                        "--", *app, timeout=120)
    assert_one_line_error(proc, "the untuned stack's launch of app: ")
    assert "is not in the output" in proc.stderr
    time.sleep(1.0)
    assert processes_of(home) == [] and held_locks(home) == []
