"""Real studies through the Ray launcher on a 5-node Ray cluster (head + 4 MPI nodes, each a
network-namespace host of its own): trials land on the nodes they reserved, two run at once on
disjoint nodes, a node killed mid-trial fails only its trial, a lost head stops the run cleanly."""
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from autotune.storage import open_storage
from tests import raybed

pytestmark = [pytest.mark.mpi, pytest.mark.multihost, pytest.mark.ray]
STUDY = "allreduce-2n1p-openmpi-ucx+openmpi-tuned"


@pytest.fixture
def cluster(tmp_path):
    """A fresh cluster per test: some tests kill parts of it."""
    try:
        bed = raybed.create(tmp_path / "bed", workers=4)
    except RuntimeError as exc:
        if "namespaces need root" in str(exc) or "cannot create a bridge" in str(exc):
            pytest.skip(f"multi-host test bed unavailable here: {exc}")
        raise
    yield bed
    raybed.destroy(bed)


def start_args(cluster, *extra, trials="3"):
    return ["start", "--collective", "allreduce", "--nodes", "2", "--ppn", "1", "--trials", trials,
            "--sizes", "8:64", "--repetitions", "3", "--stages", "1", "--time-per-size", "0.003",
            "--confirm", "0", "--no-check-live", "--seed", "1", "--launcher", "ray",
            "--ray-address", cluster.address, *cluster.bed.launcher_args(), *extra, "--foreground"]


def load(tmp_path):
    """The study, read the way `autotune status` reads it: never creating the database, and
    waiting on the daemon's init lock while the daemon creates its tables."""
    store = open_storage(f"sqlite:///{tmp_path / 'home' / 'autotune.db'}", create=False)
    return optuna.load_study(study_name=STUDY, storage=store)


def node_name(cluster, address):
    return cluster.namespaces[cluster.bed.hosts.index(address)]


def test_trials_land_on_the_nodes_they_reserved(cluster, autotune_cli, tmp_path):
    proc = autotune_cli(*start_args(cluster), check=True)
    assert "launcher: ray (--launcher; Ray cluster at" in proc.stderr
    assert "4 node(s) with resource 'mpi_node'" in proc.stderr
    # MPI, UCX and cores were probed on an MPI node (its own host name), not on this machine
    assert re.search(r"nodes probed on (\S+): Open MPI", proc.stderr).group(1) in cluster.namespaces
    study = load(tmp_path)
    # the fingerprint names every node trials may use, by address and by host name
    fingerprint = study.user_attrs["autotune.fingerprint"]
    assert sorted(fingerprint["node_names"]) == sorted(cluster.namespaces)
    assert sorted(fingerprint["hosts"]) == sorted(cluster.bed.hosts)
    # every trial that launched (complete, or stopped early by the race), not only complete ones
    done = [t for t in study.trials if t.user_attrs.get("launches")]
    assert len(done) >= 2
    for trial in done:
        reserved = trial.user_attrs["nodes"]
        assert len(set(reserved)) == 2  # strictly spread: two distinct nodes
        assert trial.user_attrs["node_names"] == [node_name(cluster, a) for a in reserved]
        assert trial.user_attrs["node_group"].startswith("ray:")
        for launch in trial.user_attrs["launches"]:
            argv = launch["argv"]
            assert argv[argv.index("--host") + 1] == ",".join(f"{a}:1" for a in reserved)
            # the ranks themselves report where they ran: exactly the reserved nodes
            assert sorted(launch["hosts"]) == sorted(trial.user_attrs["node_names"])
        assert trial.user_attrs["dispatch_seconds"] > 0


def overlapping(a, b):
    return a.datetime_start < b.datetime_complete and b.datetime_start < a.datetime_complete


def test_parallel_trials_run_at_once_on_disjoint_nodes(cluster, autotune_cli, tmp_path):
    proc = autotune_cli(*start_args(cluster, "--parallel", "2", trials="4"), check=True)
    assert "2 trials at once on disjoint node groups" in proc.stderr
    trials = [t for t in load(tmp_path).trials if t.state != TrialState.WAITING]
    assert len(trials) == 4
    # (a configuration may fail on its own, e.g. shared-memory-only UCX_TLS across nodes)
    failed = {t.number: t.user_attrs.get("fail_reason") for t in trials if t.state == TrialState.FAIL}
    assert set(failed.values()) <= {"config"}, failed
    pairs = [(a, b) for i, a in enumerate(trials) for b in trials[i + 1:] if overlapping(a, b)]
    assert pairs, "no two trials ran at the same time"
    for a, b in pairs:
        assert not set(a.user_attrs["nodes"]) & set(b.user_attrs["nodes"])
    assert len({h for t in trials for h in t.user_attrs["nodes"]}) == 4


def running_trials(tmp_path):
    try:
        return [t for t in load(tmp_path).trials if t.state == TrialState.RUNNING]
    except Exception:  # noqa: BLE001 - the study may not exist yet
        return []


def start_background(cluster, tmp_path, *extra, trials):
    exe = shutil.which("autotune", path=str(Path(sys.executable).parent))
    env = dict(os.environ, AUTOTUNE_HOME=str(tmp_path / "home"), COLUMNS="200")
    args = start_args(cluster, *extra, trials=trials)
    args[args.index("--time-per-size") + 1] = "0.05"  # launches long enough to die in
    args += ["--benchmark", "mpi4py"]  # the kernel fills its time per size (cbench, like IMB,
    # runs far fewer repetitions of these small sizes: launches too short to be killed in)
    return subprocess.Popen([exe, *args], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)


def wait_running(tmp_path, count, proc, timeout=120):
    end = time.time() + timeout
    while time.time() < end and proc.poll() is None:
        if len(running_trials(tmp_path)) >= count:
            return
        time.sleep(0.3)
    raise AssertionError(f"never {count} trials running: {proc.poll()} {proc.stderr.read() if proc.poll() is not None else ''}")


def test_killing_a_node_mid_trial_fails_only_that_trial(cluster, tmp_path):
    proc = start_background(cluster, tmp_path, "--parallel", "2", trials="5")
    wait_running(tmp_path, 2, proc)
    time.sleep(2.0)  # inside their launches
    wait_running(tmp_path, 2, proc)  # again: one may have ended in the sleep, its next not begun
    during = {t.number for t in running_trials(tmp_path)}
    killed = cluster.kill_node(3)
    _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr
    trials = {t.number: t for t in load(tmp_path).trials}
    on_killed = [n for n in during if killed in trials[n].user_attrs.get("nodes", [])]
    others = [n for n in during if n not in on_killed]
    assert len(on_killed) == 1 and len(others) == 1, (during, killed)
    lost = trials[on_killed[0]]
    assert lost.state == TrialState.FAIL
    assert lost.user_attrs["fail_reason"] == "infrastructure", lost.user_attrs.get("fail_detail")
    # the trial on the other nodes ran to its own end (which may be MPI refusing its config)
    assert trials[others[0]].user_attrs.get("fail_reason") in (None, "config")
    assert trials[others[0]].user_attrs["launch_count"] >= 1
    # the study went on without the dead node; nothing after it failed or used it
    later = [t for t in trials.values() if t.number > max(during) and t.state != TrialState.WAITING]
    assert later and all(t.user_attrs.get("fail_reason") in (None, "config") for t in later)
    assert all(killed not in t.user_attrs["nodes"] for t in later)
    # each launch counted once: launch indices never repeat within a trial
    for t in trials.values():
        indices = [launch["index"] for launch in t.user_attrs.get("launches", []) if not launch["failure"]]
        assert len(indices) == len(set(indices))


def test_losing_the_head_stops_the_run_and_keeps_the_study(cluster, tmp_path):
    proc = start_background(cluster, tmp_path, "--ray-head-grace", "5", trials="50")
    wait_running(tmp_path, 1, proc)
    time.sleep(1.0)
    wait_running(tmp_path, 1, proc)  # again: the kill must find a trial to interrupt
    complete_before = sum(t.state == TrialState.COMPLETE for t in load(tmp_path).trials)
    t0 = time.time()
    cluster.kill_head()
    _, stderr = proc.communicate(timeout=180)
    assert time.time() - t0 < 90
    assert proc.returncode == 1, stderr
    assert "the Ray head" in stderr and "unreachable" in stderr and "study is intact" in stderr, \
        stderr[-4000:]
    trials = load(tmp_path).trials
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    interrupted = [t for t in trials if t.user_attrs.get("fail_reason") == "interrupted"]
    assert len(interrupted) == 1
    queued = [t for t in trials if t.state == TrialState.WAITING]
    # queued with its parameters: it runs again on the next start
    assert [t.user_attrs["requeued_from"] for t in queued] == [interrupted[0].number]
    assert queued[0].system_attrs["fixed_params"] == interrupted[0].params
    assert sum(t.state == TrialState.COMPLETE for t in trials) >= complete_before


def test_a_node_with_more_than_one_mpi_node_is_refused(autotune_cli, tmp_path):
    """Such a node could hold bundles of two trials at once: refused before anything runs."""
    import tempfile

    port = raybed._free_port("127.0.0.1")
    root = tempfile.mkdtemp(prefix="atr", dir="/tmp")
    head = subprocess.Popen([raybed.RAY, "start", "--head", "--block", "--node-ip-address=127.0.0.1",
                             f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                             "--object-store-memory=80000000", f"--temp-dir={root}",
                             '--resources={"mpi_node": 2}'],
                            env=dict(os.environ, **raybed.QUIET), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(60):  # until the head answers
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
                break
            except OSError:
                time.sleep(1.0)
        proc = autotune_cli("start", "--collective", "allreduce", "--ppn", "1", "--trials", "1",
                            "--ray-address", f"127.0.0.1:{port}", "--foreground", timeout=180)
        assert proc.returncode == 1, proc.stderr
        assert "Ray nodes must carry exactly 1 'mpi_node'" in proc.stderr and "(2)" in proc.stderr
    finally:
        raybed._kill_session(head.pid)
        shutil.rmtree(root, ignore_errors=True)
