"""Real mpirun: a hung job is killed with all its ranks (each rank has its own process group, so
the launch's session is what must be cleaned); inherited tuning variables never reach a launch."""
import os
import signal
import sys
import uuid

import pytest

from autotune.launch import Command, LaunchSpec, LocalLauncher, run_command
from autotune.launch import _executor
from autotune.launch._executor import launch_environment


def processes_with(marker):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z" and int(entry) != os.getpid():
            found.append(int(entry))
    return found


@pytest.mark.mpi
def test_hung_mpi_job_is_killed_with_all_its_ranks(mpirun):
    marker = f"autotune-hang-{uuid.uuid4().hex}"
    program = (sys.executable, "-c", f"import time; time.sleep(600)  # {marker}")
    command = LocalLauncher().command(LaunchSpec(nodes=1, ppn=2, program=program))
    result = run_command(command, timeout=4)
    assert result.timed_out and result.returncode is None
    assert processes_with(marker) == [], "ranks survived the timeout"
    assert processes_with("orted") == []


def test_inherited_tuning_variables_are_dropped(monkeypatch):
    monkeypatch.setenv("OMPI_MCA_pml", "ob1")
    monkeypatch.setenv("UCX_TLS", "tcp")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env, dropped = launch_environment({"UCX_RNDV_THRESH": "8kb"})
    assert "OMPI_MCA_pml" not in env and "UCX_TLS" not in env
    assert env["UCX_RNDV_THRESH"] == "8kb" and env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert {"OMPI_MCA_pml", "UCX_TLS"} <= set(dropped)


@pytest.mark.mpi
def test_ucx_knob_is_live_only_when_pml_ucx_is_forced(mpirun):
    """The knob changes what runs: UCX_TLS=self cannot connect two ranks, so MPI_Init fails under
    forced pml ucx; without forcing, Open MPI 4.1 picks ob1 here and the same variable is dead."""
    from autotune.benchmarks import Mpi4pyBenchmark
    from autotune.errors import EnvironmentProblem
    from autotune.measure import MeasurementPlan, Measurer, check_ucx_live
    from autotune.space import LaunchSettings

    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8,), repetitions=3,
                           stages=1, time_per_size=0.005)
    measurer = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark(), executor=run_command)
    forced = LaunchSettings(mca=(("pml", "ucx"), ("pml_ucx_devices", "any"), ("pml_ucx_tls", "any")))
    assert check_ucx_live(measurer, forced) is True
    with pytest.raises(EnvironmentProblem, match="not using pml ucx"):
        check_ucx_live(measurer, LaunchSettings())


def test_a_grandchild_that_leaves_the_session_is_killed_at_the_launch_end(tmp_path):
    """Fault injection: a fake mpirun whose helper calls setsid and outlives it (issue 13: one
    orphan per trial before). The helper keeps the launch's tag in its environment."""
    marker = f"{uuid.uuid4().int % 10**6}.{os.getpid()}"
    fake = tmp_path / "mpirun"
    fake.write_text(f"#!/bin/sh\nsetsid sleep 3{marker} </dev/null >/dev/null 2>&1 &\n"
                    "sleep 0.3\necho done\n")
    fake.chmod(0o755)
    from autotune.launch import Command

    result = run_command(Command(argv=(str(fake),)), timeout=20)
    assert result.returncode == 0 and "done" in result.stdout
    assert processes_with(f"sleep 3{marker}") == [], "the setsid grandchild survived the launch"


FORKS = []  # CPython runs its before-fork hooks when it fork()s a child (for a preexec_fn)
os.register_at_fork(before=lambda: FORKS.append(1))
PDEATHSIG = ("import ctypes; value = ctypes.c_int(); "
             "ctypes.CDLL(None).prctl(2, ctypes.byref(value)); print(value.value)")  # GET


def test_a_launch_does_not_fork_the_threaded_daemon():
    """A launch is spawned by vfork(), not fork(): fork() runs every loaded library's
    pthread_atfork handlers, and OpenBLAS's hung autotune for good when another trial's thread
    was in a numpy product (--parallel 2)."""
    FORKS.clear()
    result = run_command(Command(argv=("true",)), timeout=30)
    assert result.returncode == 0
    assert FORKS == [], "the launch was started by fork(), not vfork()"


def test_a_launch_gets_sigterm_when_autotune_dies():
    """The launched program (mpirun) has SIGTERM as its parent-death signal, so a killed daemon
    leaves no orphan job behind."""
    result = run_command(Command(argv=(sys.executable, "-c", PDEATHSIG)), timeout=30)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == signal.SIGTERM


def test_without_setpriv_the_signal_is_set_by_a_forked_child(monkeypatch):
    monkeypatch.setattr(_executor, "_setpriv", lambda: None)
    FORKS.clear()
    result = run_command(Command(argv=(sys.executable, "-c", PDEATHSIG)), timeout=30)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == signal.SIGTERM
    assert FORKS, "the fallback forks: the hook that tells fork() from vfork() saw nothing"


def test_the_launcher_sees_its_name_as_given():
    """mpirun named `mpirun` is not run as /usr/bin/mpirun: Open MPI reads an absolute path to
    mpirun as --prefix."""
    result = run_command(Command(argv=("bash", "-c", "echo $0")), timeout=30)
    assert result.stdout.strip() == "bash"


@pytest.mark.parametrize("argv0", ["autotune-no-such-launcher", "/nonexistent/mpirun"])
def test_a_launcher_that_is_not_there_cannot_be_spawned(argv0):
    result = run_command(Command(argv=(argv0, "-n", "2")), timeout=30)
    assert result.returncode is None
    assert result.extra["spawn_error"] == "No such file or directory"


def test_a_launcher_that_is_not_executable_cannot_be_spawned(tmp_path):
    script = tmp_path / "mpirun"
    script.write_text("#!/bin/sh\nexit 0\n")
    result = run_command(Command(argv=(str(script),)), timeout=30)
    assert result.returncode is None
    assert result.extra["spawn_error"] == "Permission denied"


def test_a_launcher_whose_interpreter_is_missing_cannot_be_spawned(tmp_path):
    script = tmp_path / "mpirun"
    script.write_text("#!/nonexistent/interpreter\nexit 0\n")
    script.chmod(0o755)
    result = run_command(Command(argv=(str(script),)), timeout=30)
    assert result.returncode is None
    assert "No such file or directory" in result.extra["spawn_error"]
