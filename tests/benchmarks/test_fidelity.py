"""Each benchmark's measured disagreement with IMB-MPI1, per collective (benchmarks/_fidelity.py,
fidelity.json): a claim carries the term measured for its collective, or says it had none."""
from __future__ import annotations

import pytest

from autotune.benchmarks import AppBenchmark, Mpi4pyBenchmark
from autotune.benchmarks._cbench import CBenchmark
from autotune.benchmarks._fidelity import DATA, Disagreement, _table
from autotune.benchmarks._imb import ImbBenchmark
from autotune.claims import interval_text
from autotune.replay import GridRecordings


def test_the_shipped_table_is_measured_for_the_collectives_it_names():
    table = _table()
    assert DATA.is_file() and {"cbench", "mpi4py"} <= set(table)
    for bench, collectives in table.items():
        assert "allreduce" in collectives, bench
        for collective, term in collectives.items():
            assert 0 <= term.systematic < 0.2, (bench, collective)
            assert term.measured and "bench_agreement.py" in term.measured
            assert term.per_size and all(v >= 0 for v in term.per_size.values())


def test_a_collective_without_a_measurement_says_so_and_takes_the_largest():
    kernel = Mpi4pyBenchmark()
    measured = kernel.disagreement("allreduce")
    assert measured.measured.startswith("measured for allreduce")
    stand_in = kernel.disagreement("reduce")
    assert stand_in.stand_in and stand_in.measured.startswith("not measured for reduce")
    largest = max(t.systematic for t in _table()["mpi4py"].values())
    assert stand_in.systematic == pytest.approx(largest)
    text = interval_text(0.95, 3, 1.1, 1.3, stand_in.systematic, stand_in.measured)
    assert "stand-in" in text and "not measured for reduce" in text
    assert "stand-in" not in interval_text(0.95, 3, 1.1, 1.3, measured.systematic,
                                           measured.measured)


def test_imb_an_application_and_a_replay_carry_none():
    for bench in (ImbBenchmark("/nowhere"), AppBenchmark(("true",), "wall"), GridRecordings()):
        assert bench.disagreement("allreduce").systematic == 0
    assert CBenchmark().disagreement("allreduce").systematic >= 0


def test_a_band_is_as_uncertain_as_its_sizes():
    term = Disagreement(0.01, {8: 0.05, 16: 0.03})
    assert term.size_term([8, 16]) == pytest.approx(0.04)
    assert term.size_term([8, 1 << 20]) == pytest.approx(0.03)  # an unmeasured size: the weighted
    assert term.size_term([]) == 0.01
