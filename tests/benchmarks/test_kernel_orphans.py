"""A rank never outlives its launcher: mpirun killed at any point of a launch (while the ranks
start, or in their timed loop) takes its ranks with it. A rank caught in PMIx_Init when its
launcher died waited for ever (seen once after SIGKILL of the daemon's process group; not
reproduced on purpose), so the kernel asks Linux to kill it with its parent."""
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.mpi


def ranks_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().decode(errors="replace")
            state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmd and "mpi4py_kernel" in cmd and state != "Z":
            found.append(int(entry))
    return found


def left_after_grace(seed: str, grace: float = 10.0) -> list[int]:
    """The kernel processes of `seed` still alive after `grace` seconds; killed, so that a failed
    test leaves nothing running."""
    deadline = time.monotonic() + grace
    while ranks_with(seed) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = ranks_with(seed)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


@pytest.mark.parametrize("delay", [0.15, 0.3, 0.5, 0.8, 3.0])
def test_killing_mpirun_ends_its_ranks(mpirun, delay):
    seed = str(int(time.time() * 1000) % 10**9)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.Popen([mpirun, "-np", "2", "--oversubscribe", sys.executable, "-m",
                             "autotune.benchmarks.mpi4py_kernel", "--collective", "allreduce",
                             "--sizes", "8,1024", "--time-per-size", "5", "--seed", seed],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    time.sleep(delay)
    proc.kill()  # mpirun alone, not its process group
    proc.wait(timeout=10)
    assert left_after_grace(seed) == [], f"ranks outlived mpirun killed after {delay} s"


def test_a_kernel_dies_with_its_parent_whatever_the_parent_is():
    """The kernel's own guard, apart from what Open MPI does: a singleton kernel (no mpirun; it
    would run for a minute) started by a plain process ends when that process is killed."""
    seed = str(int(time.time() * 1000) % 10**9)
    kernel = [sys.executable, "-m", "autotune.benchmarks.mpi4py_kernel", "--collective",
              "allreduce", "--sizes", "8,1024", "--time-per-size", "30", "--max-iters",
              "1000000000", "--seed", seed]
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               f"subprocess.Popen({kernel!r}); time.sleep(300)"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    deadline = time.monotonic() + 30
    while not ranks_with(seed) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ranks_with(seed), "the kernel did not start"
    time.sleep(2.0)  # in MPI_Init or its timed loop
    parent.kill()
    parent.wait(timeout=10)
    assert left_after_grace(seed) == [], "the kernel outlived its parent"
