"""The kernel times blocking collectives with IMB's loop in C (autotune/benchmarks/_c_loops.py),
built with the MPI's compiler wrapper into a cache, and falls back to its Python loop, saying
why, when it cannot build one. Real mpirun, 2 ranks."""
from __future__ import annotations

import json

import pytest

from autotune.benchmarks import Mpi4pyBenchmark, kernel_overhead, parse_kernel_output
from autotune.errors import BenchmarkOutputError
from autotune.launch import LocalLauncher, run_command
from autotune.measure import MeasurementPlan, Measurer
from autotune.space import LaunchSettings

pytestmark = pytest.mark.mpi


def _launch(collective: str = "allreduce", sizes=(8, 4096)):
    """One real launch: its record and the kernel's raw output."""
    seen = []
    plan = MeasurementPlan(collective=collective, nodes=1, ppn=2, sizes=sizes, repetitions=3,
                           stages=1, time_per_size=0.002)
    measurer = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark(),
                        executor=lambda command, timeout: seen.append(
                            run_command(command, timeout)) or seen[-1])
    record = measurer.run_launch(LaunchSettings(), plan.launches()[0], seed=1)
    return record, seen[0].stdout


def _size_records(stdout: str) -> list[dict]:
    records = (json.loads(line.removeprefix("AUTOTUNE ")) for line in stdout.splitlines()
               if line.startswith("AUTOTUNE "))
    return [r for r in records if r.get("kind") == "size"]


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "alltoall", "bcast", "reduce"])
def test_blocking_collectives_are_timed_in_c_built_once(mpirun, tmp_path, monkeypatch,
                                                         collective):
    monkeypatch.setenv("AUTOTUNE_KERNEL_CACHE", str(tmp_path / "cache"))
    record, stdout = _launch(collective)
    overhead = kernel_overhead(stdout)
    assert overhead is not None and overhead.timer == "c", overhead
    assert all(r["overhead_us"] == 0.0 for r in _size_records(stdout))  # nothing subtracted
    assert record.t_max_us[4096] > 0 and record.t_max_us[8] > 0
    built = sorted((tmp_path / "cache").iterdir())
    assert len(built) == 1 and built[0].suffix == ".so"  # no partial file left behind
    stamp = built[0].stat().st_mtime_ns
    _launch(collective)
    assert sorted((tmp_path / "cache").iterdir()) == built and built[0].stat().st_mtime_ns == stamp


def test_a_wrong_result_is_still_caught_when_timing_in_c(mpirun, tmp_path, monkeypatch):
    from autotune.measure import LaunchFailed

    monkeypatch.setenv("AUTOTUNE_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("AUTOTUNE_TEST_CORRUPT_RANK", "1")
    with pytest.raises(LaunchFailed) as info:
        _launch("allreduce")
    assert info.value.reason == "wrong-result"


@pytest.mark.parametrize("wrapper, says", [("/bin/false", "/bin/false failed"),
                                           ("/no/such/mpicc", "/no/such/mpicc")])
def test_without_a_working_wrapper_the_python_loop_times_and_says_why(
        mpirun, tmp_path, monkeypatch, wrapper, says):
    monkeypatch.setenv("AUTOTUNE_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("AUTOTUNE_MPICC", wrapper)
    record, stdout = _launch()
    overhead = kernel_overhead(stdout)
    assert overhead is not None and overhead.timer == "python" and says in overhead.timer_note
    assert all(r["overhead_us"] == overhead.self_call_us for r in _size_records(stdout))
    assert record.t_max_us[8] > 0
    assert not any((tmp_path / "cache").iterdir())  # a failed build leaves nothing


def test_an_unknown_timer_in_the_output_is_a_bad_output():
    start = 'AUTOTUNE {"kind": "start", "ranks": 2, "hosts": ["a"]}'
    overhead = ('AUTOTUNE {"kind": "overhead", "loop_us": 0.1, "self_call_us": 0.3, '
                '"loop_spread_us": 0, "self_call_spread_us": 0, "timer": "fortran"}')
    with pytest.raises(BenchmarkOutputError, match="timer"):
        parse_kernel_output("\n".join([start, overhead]), (8,), ranks=2)


@pytest.mark.parametrize("collective", ["allreduce", "iallreduce"])
def test_the_kernel_starts_mpi_single_threaded_as_imb_does(mpirun, tmp_path, monkeypatch,
                                                           collective):
    """mpi4py asks for MPI_THREAD_MULTIPLE unless told otherwise, and under it every call paid
    0.2-0.5 us of locking that IMB (MPI_Init) does not."""
    monkeypatch.setenv("AUTOTUNE_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MPI4PY_RC_THREAD_LEVEL", raising=False)
    _, stdout = _launch(collective)
    start = next(json.loads(line.removeprefix("AUTOTUNE ")) for line in stdout.splitlines()
                 if line.startswith("AUTOTUNE ") and '"start"' in line)
    assert start["thread_level"] == "single"
