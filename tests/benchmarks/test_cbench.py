"""autotune's C benchmark (autotune/benchmarks/cbench.c, _cbench.py): IMB-MPI1's method in a
program of its own, built with the MPI's compiler wrapper, checking each size's result. Real
mpirun, 2 ranks."""
from __future__ import annotations

import json
import subprocess
import time

import pytest

from autotune.benchmarks import BenchmarkRequest, auto_benchmark, make_benchmark
from autotune.benchmarks._cbench import CBenchmark, build_cbench
from autotune.errors import EnvironmentProblem, InputError
from autotune.launch import LocalLauncher, run_command
from autotune.measure import LaunchFailed, MeasurementPlan, Measurer
from autotune.space import LaunchSettings

pytestmark = pytest.mark.mpi

SIZES = (8, 64, 4096, 65536, 1 << 20)


def _launch(collective="allreduce", sizes=SIZES, time_per_size=0.002, settings=None):
    """One real launch: its record and the program's raw output."""
    seen = []
    plan = MeasurementPlan(collective=collective, nodes=1, ppn=2, sizes=sizes, repetitions=1,
                           stages=1, time_per_size=time_per_size)
    bench = CBenchmark()
    bench.check()
    measurer = Measurer(plan, LocalLauncher(), bench,
                        executor=lambda command, timeout: seen.append(
                            run_command(command, timeout)) or seen[-1])
    record = measurer.run_launch(settings or LaunchSettings(), plan.launches()[0], seed=3)
    return record, seen[0].stdout


def _sizes(stdout: str) -> list[dict]:
    records = (json.loads(line.removeprefix("AUTOTUNE ")) for line in stdout.splitlines()
               if line.startswith("AUTOTUNE "))
    return [r for r in records if r.get("kind") == "size"]


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_KERNEL_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "alltoall", "bcast", "reduce"])
def test_every_blocking_collective_is_timed_and_checked(mpirun, collective):
    record, stdout = _launch(collective)
    assert set(record.t_max_us) == set(SIZES) and all(t > 0 for t in record.t_max_us.values())
    assert record.hosts  # the program says where its ranks ran: the landing is checked
    sizes = [r["size"] for r in _sizes(stdout)]
    assert sizes == sorted(SIZES)  # IMB's order: ascending


def test_its_start_is_stamped_to_the_microsecond(mpirun):
    """The controller takes the start from its own clock to tell how long a trial waited: a start
    in whole seconds once came out before the trial was asked."""
    before = time.time()
    record, _ = _launch(sizes=(8,))
    assert before <= record.kernel_started <= time.time()


def test_repetitions_follow_imbs_policy(mpirun):
    """-iter caps every size, 40 MiB in all caps a large one, and no size runs more repetitions
    than the one before it (IMB's dynamic policy)."""
    _, stdout = _launch(time_per_size=0.02)
    iters = {r["size"]: r["iters"] for r in _sizes(stdout)}
    assert iters[1 << 20] <= 40 and iters[65536] <= 640
    assert all(iters[a] >= iters[b] for a, b in zip(sorted(iters), sorted(iters)[1:]))
    assert iters[8] <= 10_000  # -iter: 0.02 s at 2 us a call


def test_a_wrong_result_fails_the_launch(mpirun, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_TEST_CORRUPT_RANK", "1")
    for collective, seen_by in (("allreduce", 1), ("alltoall", 1), ("reduce", 0)):
        with pytest.raises(LaunchFailed) as info:
            _launch(collective, sizes=(64, 4096))
        assert info.value.reason == "wrong-result", collective
        # a reduce's rank 1 corrupts its contribution: the root's result shows it
        assert f"{collective} 64 B: rank {seen_by}" in info.value.detail


def test_it_is_built_once_per_source_and_wrapper(mpirun, tmp_path):
    first = build_cbench()
    stamp = first.stat().st_mtime_ns
    assert build_cbench() == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.name]  # nothing partial


def test_no_wrapper_is_one_line_before_anything_starts(monkeypatch):
    monkeypatch.setenv("AUTOTUNE_MPICC", "/bin/false")
    with pytest.raises(EnvironmentProblem, match="cannot build autotune's C benchmark"):
        CBenchmark().check()


def test_auto_takes_it_where_imb_is_missing_and_the_kernel_for_nonblocking(mpirun, monkeypatch,
                                                                          tmp_path):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no IMB on PATH
    assert auto_benchmark(None, "allreduce") == "cbench"
    assert auto_benchmark(None, "iallreduce") == "mpi4py"
    monkeypatch.setenv("AUTOTUNE_MPICC", "/bin/false")  # no wrapper builds it
    assert auto_benchmark(None, "allreduce") == "mpi4py"


def test_nonblocking_collectives_and_bad_arguments_are_refused(mpirun):
    bench = make_benchmark("cbench")
    bench.check()
    with pytest.raises(InputError, match="blocking collectives"):
        bench.program(BenchmarkRequest("iallreduce", (8,), 2, 0.01, 0))
    proc = subprocess.run([bench.executable, "--collective", "allreduce", "--sizes", "8,x"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "--sizes: x is not an integer" in proc.stderr


def test_a_pml_ucx_configuration_runs_and_is_read(mpirun):
    settings = LaunchSettings(mca=(("pml", "ucx"), ("pml_ucx_devices", "any"),
                                   ("pml_ucx_tls", "any")))
    record, _ = _launch(sizes=(8, 4096), settings=settings)
    assert record.t_max_us[8] > 0
