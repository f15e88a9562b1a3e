"""Benchmarks are picked by name from one registry: a new one is its module plus one entry, and
it is made, named in messages and checked by its verification partner from that entry."""
import pytest

from autotune.benchmarks import (REGISTRY, BenchmarkKind, Mpi4pyBenchmark, kind_of_stored,
                                 make_benchmark)
from autotune.errors import InputError
from autotune.endgame.partner import choose_benchmark


def test_a_registered_benchmark_is_made_by_name_and_checked_by_its_partner(monkeypatch):
    made = []

    def make(**options):
        made.append(options)
        return Mpi4pyBenchmark()

    monkeypatch.setitem(REGISTRY, "other", BenchmarkKind(
        "other", "the other benchmark", "another benchmark", partners=("mpi4py",),
        internal=frozenset({"python"}), make=make, stored_prefix="Other"))
    make_benchmark("other", python="/usr/bin/python3", collective="allreduce")
    assert made == [{"collective": "allreduce", "family": None, "python": "/usr/bin/python3"}]
    assert kind_of_stored("Other 1.0 (/opt/other)") == "other"
    choice = choose_benchmark("other")  # its partner, the kernel, is always there
    assert choice.benchmark.name == "mpi4py" and choice.independent
    with pytest.raises(InputError, match="--imb-dir: options of --benchmark imb, not of "
                                         "--benchmark other"):
        make_benchmark("other", imb_dir="/opt/imb")


def test_an_unknown_benchmark_names_the_registered_ones():
    with pytest.raises(InputError, match="unknown benchmark 'nope' \\(choose from mpi4py, cbench, imb, app\\)"):
        make_benchmark("nope")
    assert kind_of_stored("") == "mpi4py"  # an older study stored none: the default
