"""Faults injected by a fake mpirun become the right failure, with the process group cleaned up."""
import os
import time
from pathlib import Path

import pytest

from autotune.benchmarks import Mpi4pyBenchmark
from autotune.launch import LocalLauncher
from autotune.measure import LaunchFailed, MeasurementPlan, Measurer
from autotune.space import LaunchSettings

FAKE = str(Path(__file__).with_name("fake_mpirun.py"))


def measurer(timeout_floor=30.0):
    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8, 16), repetitions=3,
                           stages=1, time_per_size=0.01, timeout_floor=timeout_floor)
    return Measurer(plan, LocalLauncher(mpirun=FAKE), Mpi4pyBenchmark())


def run(monkeypatch, mode, **kw):
    monkeypatch.setenv("FAKE_MPIRUN_MODE", mode)
    m = measurer(**kw)
    with pytest.raises(LaunchFailed) as info:
        m.run_launch(LaunchSettings(), m.plan.launches()[0], seed=1)
    return info.value


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_hang_is_a_timeout_and_the_whole_group_is_killed(monkeypatch, tmp_path):
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("FAKE_MPIRUN_PIDFILE", str(pidfile))
    # floor 0 + 2 sizes x (3 * 0.01 + 3 s allowance) = ~6 s deadline
    t0 = time.monotonic()
    failure = run(monkeypatch, "hang", timeout_floor=0.0)
    assert failure.reason == "timeout"
    assert time.monotonic() - t0 < 20
    pids = [int(p) for p in pidfile.read_text().split()]
    assert not any(alive(pid) for pid in pids), "mpirun or its child survived the timeout"


def test_invalid_configuration_is_a_config_failure_with_stderr(monkeypatch):
    failure = run(monkeypatch, "init-error")
    assert failure.reason == "config"
    assert f"{Path(FAKE).name} exited with code 1" in failure.detail  # the launcher, by name
    assert "Destination is unreachable" in failure.stderr_tail
    assert failure.record.returncode == 1 and failure.record.argv[0] == FAKE


@pytest.mark.parametrize("mode, reason", [
    ("segfault", "crash"),
    ("abort", "config"),
    ("infra", "infrastructure"),
])
def test_failure_classes(monkeypatch, mode, reason):
    assert run(monkeypatch, mode).reason == reason


def test_missing_mpirun_is_infrastructure(tmp_path):
    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8,), repetitions=3,
                           stages=1, time_per_size=0.01)
    m = Measurer(plan, LocalLauncher(mpirun=str(tmp_path / "no-mpirun")), Mpi4pyBenchmark())
    with pytest.raises(LaunchFailed) as info:
        m.run_launch(LaunchSettings(), plan.launches()[0], seed=1)
    assert info.value.reason == "infrastructure" and "cannot start" in info.value.detail


@pytest.mark.parametrize("mode, detail", [
    ("garbage", "unparseable record"),
    ("truncated", "output truncated"),
    ("flood", "larger than the capture limit"),
    ("negative", "must be positive"),
])
def test_bad_output_is_a_failed_launch(monkeypatch, mode, detail):
    failure = run(monkeypatch, mode)
    assert failure.reason == "crash"
    assert detail in failure.detail


def test_first_cause_skips_path_noise():
    from autotune.measure import first_cause

    stderr = ("[vm:05495] ../../ompi/mca/pml/ucx/pml_ucx.c:419  Error: ucp_ep_create(proc=0) failed: "
              "Destination is unreachable\n[vm:05494] *** An error occurred in MPI_Init_thread\n")
    assert first_cause(stderr) == "ucp_ep_create(proc=0) failed: Destination is unreachable"
    assert first_cause("Traceback...\nValueError: bad\n") == "ValueError: bad"
    assert first_cause("all good\n") == ""
