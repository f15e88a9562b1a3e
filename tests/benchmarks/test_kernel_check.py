"""The kernel checks the result of the collective it timed: the parser's side, and real mpirun
runs in which one rank's answer is corrupted on purpose (AUTOTUNE_TEST_CORRUPT_RANK)."""
import json

import pytest

from autotune.benchmarks import (COLLECTIVES, WRONG_RESULT, Mpi4pyBenchmark, WrongResult,
                                 kernel_overhead, parse_kernel_output)
from autotune.errors import BenchmarkOutputError
from autotune.launch import LocalLauncher
from autotune.measure import LaunchFailed, MeasurementPlan, Measurer
from autotune.space import LaunchSettings


def line(**record):
    return "AUTOTUNE " + json.dumps(record)


START = line(kind="start", ranks=2, hosts=["a"], mpi_library="Open MPI v4.1.4")
OVERHEAD = line(kind="overhead", loop_us=0.03, self_call_us=0.32, loop_spread_us=0.0,
                self_call_spread_us=0.02)
WRONG = line(kind="wrong-result", collective="allreduce", size=1024, rank=1, element=0,
             expected=3.0, got=4.0)


def test_wrong_result_record_fails_the_launch_with_its_reason_and_where():
    text = "\n".join([START, OVERHEAD, WRONG])  # the kernel stops there: no done record
    with pytest.raises(WrongResult) as info:
        parse_kernel_output(text, (8, 1024), ranks=2)
    assert info.value.reason == WRONG_RESULT == "wrong-result"
    assert info.value.detail == "allreduce 1024 B: rank 1 element 0 is 4.0, expected 3.0"
    assert not isinstance(info.value, BenchmarkOutputError)  # not a crash


def test_wrong_result_wins_over_other_output():
    size = line(kind="size", size=8, iters=10, t_max_us=1.0, t_min_us=1.0, t_avg_us=1.0)
    with pytest.raises(WrongResult):
        parse_kernel_output("\n".join([START, size, WRONG, line(kind="done")]), (8,), ranks=2)


def test_overhead_record_is_read_and_checked():
    size = line(kind="size", size=8, iters=10, t_max_us=1.0, t_min_us=1.0, t_avg_us=1.0)
    text = "\n".join([START, OVERHEAD, size, line(kind="done")])
    assert parse_kernel_output(text, (8,), ranks=2).timings[8].t_max_us == 1.0
    overhead = kernel_overhead(text)
    assert overhead is not None and overhead.self_call_us == 0.32 and overhead.loop_spread_us == 0
    assert kernel_overhead(START) is None
    bad = line(kind="overhead", loop_us=-1, self_call_us=0.3, loop_spread_us=0,
               self_call_spread_us=0)
    with pytest.raises(BenchmarkOutputError, match="loop_us"):
        parse_kernel_output("\n".join([START, bad, size, line(kind="done")]), (8,), ranks=2)


def _launch(collective, settings, sizes=(8, 1024)):
    plan = MeasurementPlan(collective=collective, nodes=1, ppn=2, sizes=sizes, repetitions=3,
                           stages=1, time_per_size=0.002)
    measurer = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark())
    return measurer.run_launch(settings, plan.launches()[0], seed=3)


@pytest.mark.mpi
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_a_corrupted_rank_is_a_wrong_result_on_a_real_run(mpirun, collective):
    settings = LaunchSettings(env=(("AUTOTUNE_TEST_CORRUPT_RANK", "1"),))
    with pytest.raises(LaunchFailed) as info:
        _launch(collective, settings)
    assert info.value.reason == "wrong-result", info.value
    # the first size checked (seeded order) names the rank whose answer is wrong; for a reduce
    # only the root has a result, so rank 1's corrupted contribution shows up on rank 0
    assert f"{collective} " in info.value.detail and " element 0 " in info.value.detail
    assert ("rank 0" if collective == "reduce" else "rank 1") in info.value.detail
    assert info.value.record.returncode == 0


@pytest.mark.mpi
def test_the_mca_form_reaches_the_kernel_too(mpirun):
    """What a search space can set: an `mpi_` MCA parameter, exported by mpirun to the ranks."""
    settings = LaunchSettings(mca=(("mpi_autotune_test_corrupt_rank", "0"),))
    with pytest.raises(LaunchFailed) as info:
        _launch("allreduce", settings)
    assert info.value.reason == "wrong-result" and "rank 0" in info.value.detail


@pytest.mark.mpi
def test_without_corruption_every_collective_checks_out(mpirun):
    """Odd sizes too: partial elements of a reduction, blocks not a multiple of the pattern."""
    for collective in COLLECTIVES:
        record = _launch(collective, LaunchSettings(), sizes=(1, 7, 8, 1000, 65536))
        assert sorted(record.t_max_us) == [1, 7, 8, 1000, 65536]


@pytest.mark.mpi
def test_a_real_launch_reports_its_per_call_overheads(mpirun):
    from autotune.launch import run_command

    seen = []
    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8,), repetitions=3,
                           stages=1, time_per_size=0.002)
    measurer = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark(),
                        executor=lambda command, timeout: seen.append(
                            run_command(command, timeout)) or seen[-1])
    record = measurer.run_launch(LaunchSettings(), plan.launches()[0], seed=1)
    overhead = kernel_overhead(seen[0].stdout)
    # the empty loop (subtracted) costs less than the same call on COMM_SELF (reported only)
    assert overhead is not None and 0 < overhead.loop_us < overhead.self_call_us
    assert record.t_max_us[8] > 0
