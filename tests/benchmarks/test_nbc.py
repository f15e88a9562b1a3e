"""Non-blocking collectives, IMB-NBC's method: the overlap formula (against IMB's own printed
columns), the kernel's NBC records and their checks, IMB-NBC's tables read through the benchmark
class, and real 2-rank runs of the kernel and of IMB-NBC."""
import json
from pathlib import Path

import pytest

from autotune.benchmarks import (NBC_COLLECTIVES, Mpi4pyBenchmark, NbcTiming, buffer_counts,
                                 make_benchmark, overlap_pct, parse_kernel_output)
from autotune.benchmarks._imb import ImbBenchmark
from autotune.benchmarks._imb_output import parse_imb_output
from autotune.errors import BenchmarkOutputError, EnvironmentProblem, InputError
from autotune.launch import LocalLauncher
from autotune.measure import LaunchFailed, MeasurementPlan, Measurer
from autotune.space import LaunchSettings
from tests import SHARED

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = SHARED / "fixtures" / "imb" / "imb-nbc-iallreduce-np2.txt"
SEED004 = ROOT / "tests" / "data" / "imb-nbc-seed004.txt"
IMB_DIR = (SHARED / "tools" / "imb").resolve()


# ------------------------------------------------------------------ the formula


@pytest.mark.parametrize("t_pure, t_cpu, t_ovrl, expected", [
    (10.0, 10.0, 15.0, 50.0),  # 5 of the 10 us hidden
    (10.0, 5.0, 12.0, 30.0),  # (10 + 5 - 12) / max(10, 5): IMB-NBC divides by the larger
    (5.0, 10.0, 12.0, 30.0),
    (10.0, 10.0, 10.0, 100.0),  # all of it hidden
    (10.0, 10.0, 8.0, 100.0),  # faster than either alone: clamped to 100
    (10.0, 10.0, 20.0, 0.0),  # nothing hidden
    (10.0, 10.0, 25.0, 0.0),  # slower than one after the other: clamped to 0
    (0.0, 0.0, 1.0, 0.0),  # no time at all: no overlap, no division by zero
])
def test_overlap_formula_by_hand(t_pure, t_cpu, t_ovrl, expected):
    assert overlap_pct(t_pure, t_cpu, t_ovrl) == pytest.approx(expected)


def _rounding_bound(t_pure, t_cpu, t_ovrl):
    """How far IMB's printed overlap may be from the formula of its printed, rounded times
    (each time off by up to 0.005 us, the overlap printed to 0.005)."""
    top = max(t_pure, t_cpu)
    return 100 * (0.015 / top + 0.005 * (t_pure + t_cpu + t_ovrl) / top ** 2) + 0.005


def _unclamped_rows(text):
    for table in parse_imb_output(text).tables:
        for row in table.rows:
            if 0 < row.overlap_pct < 100 and min(row.t_pure_us, row.t_cpu_us) > 0.5:
                yield table.processes, row


def test_the_formula_reproduces_imb_nbcs_own_overlap_column():
    """IMB-NBC's printed overlap of every unclamped row (this machine's run and seeds/004's Cray
    tables, 2..512 processes) is the formula of its printed times, up to rounding; the min()
    denominator of IMB's MPI-2 benchmarks would be off by far more on some rows."""
    rows = [r for path in (FIXTURE, SEED004) for r in _unclamped_rows(path.read_text())]
    assert len(rows) > 100
    far_with_min = 0
    for processes, row in rows:
        ours = overlap_pct(row.t_pure_us, row.t_cpu_us, row.t_ovrl_us)
        bound = _rounding_bound(row.t_pure_us, row.t_cpu_us, row.t_ovrl_us)
        assert abs(ours - row.overlap_pct) <= bound, (processes, row)
        with_min = 100 * max(0.0, min(1.0, (row.t_pure_us + row.t_cpu_us - row.t_ovrl_us)
                                      / min(row.t_pure_us, row.t_cpu_us)))
        far_with_min += abs(with_min - row.overlap_pct) > 2 * bound
    assert far_with_min > 20
    # by hand, IMB's 64-byte row here: (1.90 + 1.64 - 2.87) / 1.90 = 35.26 % (printed 35.13)
    assert overlap_pct(1.90, 1.64, 2.87) == pytest.approx(35.263, abs=1e-3)


# ------------------------------------------------------------------ the kernel's records


def line(**record):
    return "AUTOTUNE " + json.dumps(record)


START = line(kind="start", ranks=2, hosts=["a"], mpi_library="Open MPI v4.1.4")


def nbc_size(size, t_pure=2.0, t_ovrl=3.0, t_cpu=2.0, **extra):
    record = dict(kind="size", size=size, iters=50, t_max_us=t_pure, t_min_us=t_pure * 0.9,
                  t_avg_us=t_pure * 0.95, t_pure_us=t_pure, t_ovrl_us=t_ovrl, t_cpu_us=t_cpu,
                  overlap_pct=overlap_pct(t_pure, t_cpu, t_ovrl), cpu_steps=40, rank=1)
    record.update(extra)
    return line(**record)


def test_nbc_records_give_imb_nbcs_columns():
    text = "\n".join([START, nbc_size(8), nbc_size(4096, 10.0, 15.0, 12.0), line(kind="done")])
    out = parse_kernel_output(text, (8, 4096), ranks=2, nonblocking=True)
    assert out.timings[8].nbc == NbcTiming(2.0, 3.0, 2.0, 50.0)
    assert out.timings[4096].nbc == NbcTiming(10.0, 15.0, 12.0, pytest.approx(700 / 12))
    assert out.timings[4096].t_max_us == 10.0 and out.timings[4096].t_min_us == 9.0


@pytest.mark.parametrize("record, message", [
    (nbc_size(8, overlap_pct=80.0), "is not IMB's overlap"),  # not the formula of its times
    (nbc_size(8, overlap_pct=150.0), "implausibly large"),
    (nbc_size(8, t_cpu=-1.0), "t_cpu_us"),
    (nbc_size(8, t_ovrl=0.0), "t_ovrl_us"),
    (nbc_size(8, t_pure=float("nan")), "non-finite"),
    (line(kind="size", size=8, iters=5, t_max_us=1.0, t_min_us=1.0, t_avg_us=1.0),
     "lacks t_pure_us, t_ovrl_us, t_cpu_us, overlap_pct"),
])
def test_damaged_nbc_records_are_refused(record, message):
    text = "\n".join([START, record, line(kind="done")])
    with pytest.raises(BenchmarkOutputError, match=message):
        parse_kernel_output(text, (8,), ranks=2, nonblocking=True)


def test_nbc_columns_in_a_blocking_collectives_output_are_refused():
    text = "\n".join([START, nbc_size(8), line(kind="done")])
    with pytest.raises(BenchmarkOutputError, match="t_pure_us in a blocking"):
        parse_kernel_output(text, (8,), ranks=2)


def test_nonblocking_collectives_use_their_blocking_buffers():
    # (the kernel's own choices are proved by the real 2-rank runs of every collective below;
    # importing the kernel here would MPI_Init this pytest process as a singleton, and its orted
    # would outlive the test)
    for collective in NBC_COLLECTIVES:
        assert buffer_counts(collective, 1024, 4) == buffer_counts(collective[1:], 1024, 4)


# ------------------------------------------------------------------ IMB-NBC


def request(sizes, collective="iallreduce", ranks=2):
    from autotune.benchmarks import BenchmarkRequest

    return BenchmarkRequest(collective=collective, sizes=tuple(sizes), ranks=ranks,
                            time_per_size=0.02, seed=1)


def test_imb_runs_imb_nbc_for_a_nonblocking_collective(tmp_path):
    imb = make_benchmark("imb", imb_dir=str(IMB_DIR), collective="iallreduce")
    assert isinstance(imb, ImbBenchmark) and imb.describe() == f"IMB-NBC ({IMB_DIR / 'IMB-NBC'})"
    imb.check()
    argv = imb.program(request([8, 16, 32]))
    assert argv[0] == str(IMB_DIR / "IMB-NBC") and argv[-1] == "Iallreduce"
    assert argv[1:3] == ("-msglog", "3:5")
    # a repetition costs IMB-NBC about 5 calls (alone, overlapped, barriers): fewer of them
    assert int(argv[argv.index("-iter") + 1]) == 2000
    with pytest.raises(InputError, match="IMB-NBC has no benchmark for allreduce"):
        imb.program(request([8], collective="allreduce"))
    with pytest.raises(InputError, match="IMB-MPI1 has no benchmark for iallreduce"):
        make_benchmark("imb", imb_dir=str(IMB_DIR)).program(request([8]))
    with pytest.raises(EnvironmentProblem, match="IMB-NBC not found"):
        ImbBenchmark(str(tmp_path), nbc=True).check()


def test_imb_nbc_fixture_read_through_the_benchmark():
    imb = ImbBenchmark(str(IMB_DIR), nbc=True)
    out = imb.parse(FIXTURE.read_text(), request([4, 64, 262144]))
    assert out.timings[64].nbc == NbcTiming(t_pure_us=1.90, t_ovrl_us=2.87, t_cpu_us=1.64,
                                            overlap_pct=35.13)
    t = out.timings[262144]
    assert (t.t_max_us, t.t_min_us, t.t_avg_us, t.iters) == (71.71, 71.71, 71.71, 160)
    assert t.nbc.overlap_pct == 4.21 and t.nbc.t_ovrl_us == 140.90
    assert out.mpi_library == "IMB-NBC 2021.11"


def test_seed004_tables_read_through_the_benchmark_at_each_process_count():
    imb = ImbBenchmark(str(IMB_DIR), nbc=True)
    text = SEED004.read_text()
    four = imb.parse(text, request([4, 131072, 4194304], ranks=4))
    assert four.timings[131072].nbc == NbcTiming(203.18, 320.20, 216.79, 46.02)
    assert four.timings[4194304].t_max_us == 8468.91
    big = imb.parse(text, request([1024], ranks=512))
    assert big.timings[1024].nbc == NbcTiming(253.45, 323.16, 263.74, 73.57)
    with pytest.raises(BenchmarkOutputError, match="no result for 0"):
        imb.parse(text.replace("\n0 1000 1.90 1.00 0.76 0.00", ""), request([0, 4]))


def test_imb_nbc_rows_without_the_overlap_columns_are_refused():
    imb = ImbBenchmark(str(IMB_DIR), nbc=True)
    mpi1 = (SHARED / "fixtures" / "imb" / "imb-mpi1-allreduce-np2.txt").read_text()
    with pytest.raises(BenchmarkOutputError, match="no positive t_ovrl/t_pure"):
        imb.parse(mpi1.replace("Benchmarking Allreduce", "Benchmarking Iallreduce"),
                  request([8]))


# ------------------------------------------------------------------ real runs, 2 ranks


def _plan(collective, sizes, objective="latency", time_per_size=0.005):
    return MeasurementPlan(collective=collective, nodes=1, ppn=2, sizes=tuple(sizes),
                           repetitions=3, stages=1, time_per_size=time_per_size,
                           objective=objective)


@pytest.mark.mpi
def test_real_kernel_iallreduce_scores_the_exposed_share(mpirun):
    sizes = (8, 4096, 262144)
    plan = _plan("iallreduce", sizes, objective="overlap")
    record = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark()).run_launch(
        LaunchSettings(), plan.launches()[0], seed=5)
    assert sorted(record.nbc) == sorted(record.t_max_us) == list(sizes)
    for size, nbc in record.nbc.items():
        assert nbc.t_pure_us > 0 and nbc.t_ovrl_us > 0 and nbc.t_cpu_us > 0
        assert nbc.overlap_pct == pytest.approx(
            overlap_pct(nbc.t_pure_us, nbc.t_cpu_us, nbc.t_ovrl_us))
        assert record.t_max_us[size] == pytest.approx(2 - nbc.overlap_pct / 100)
        assert 1.0 <= record.t_max_us[size] <= 2.0
    # the buffers really have those sizes; the overlapped loop runs the load besides
    assert record.nbc[262144].t_pure_us > record.nbc[8].t_pure_us
    assert record.nbc[262144].t_ovrl_us > record.nbc[262144].t_pure_us
    stored = record.to_dict()["nbc"]
    assert set(stored) == {"8", "4096", "262144"} and set(stored["8"]) == {
        "t_pure_us", "t_ovrl_us", "t_cpu_us", "overlap_pct"}


@pytest.mark.mpi
@pytest.mark.parametrize("collective", NBC_COLLECTIVES)
def test_real_kernel_runs_and_checks_every_nonblocking_collective(mpirun, collective):
    plan = _plan(collective, (7, 1000), time_per_size=0.002)
    record = Measurer(plan, LocalLauncher(), Mpi4pyBenchmark()).run_launch(
        LaunchSettings(), plan.launches()[0], seed=2)
    assert sorted(record.nbc) == sorted(record.t_max_us) == [7, 1000]
    # latency: t_max over ranks of t_pure, at least the t_pure of the rank IMB's columns are of
    assert all(record.t_max_us[s] >= record.nbc[s].t_pure_us > 0 for s in (7, 1000))


@pytest.mark.mpi
def test_real_kernel_nonblocking_result_is_checked(mpirun):
    plan = _plan("iallreduce", (8, 1024), time_per_size=0.002)
    settings = LaunchSettings(env=(("AUTOTUNE_TEST_CORRUPT_RANK", "1"),))
    with pytest.raises(LaunchFailed) as info:
        Measurer(plan, LocalLauncher(), Mpi4pyBenchmark()).run_launch(
            settings, plan.launches()[0], seed=3)
    assert info.value.reason == "wrong-result"
    assert info.value.detail.startswith("iallreduce ") and "rank 1 element 0" in info.value.detail


@pytest.mark.mpi
def test_real_imb_nbc_iallreduce_through_the_benchmark_class(mpirun):
    sizes = (8, 1024, 65536)
    plan = _plan("iallreduce", sizes, objective="t_ovrl", time_per_size=0.002)
    imb = make_benchmark("imb", imb_dir=str(IMB_DIR), collective="iallreduce")
    record = Measurer(plan, LocalLauncher(), imb).run_launch(LaunchSettings(),
                                                             plan.launches()[0], seed=1)
    assert str(IMB_DIR / "IMB-NBC") in record.argv and record.argv[-1] == "Iallreduce"
    assert sorted(record.nbc) == list(sizes)
    for size, nbc in record.nbc.items():
        assert record.t_max_us[size] == nbc.t_ovrl_us > 0  # --objective t_ovrl
        assert 0.0 <= nbc.overlap_pct <= 100.0 and nbc.t_pure_us > 0
    assert record.nbc[65536].t_pure_us > record.nbc[8].t_pure_us
