"""Which benchmark checks a study: the search benchmark's verification partner (the benchmark
registry names it), found where it is looked for, else the search's own benchmark again, said
to be not independent."""

from __future__ import annotations

from dataclasses import dataclass

from ..benchmarks import REGISTRY as BENCHMARK_KINDS
from ..benchmarks import Benchmark, find_benchmark, kind_of_stored, make_benchmark
from ..storage import StudyConfig


def search_benchmark(config: StudyConfig) -> str:
    """The name of what the search measured with (older studies stored nothing: the default)."""
    return kind_of_stored(config.benchmark)


@dataclass(frozen=True)
class BenchmarkChoice:
    benchmark: Benchmark
    independent: bool  # not the benchmark the search used
    note: str = ""  # what the user should know about the choice


def missing_partner(search: str) -> str:
    """`IMB-MPI1 not found (--imb-dir DIR, or PATH)`: the search benchmark's partner, missing."""
    missing = BENCHMARK_KINDS[BENCHMARK_KINDS[search].partner]
    return f"{missing.label} not found" + (f" ({missing.where})" if missing.where else "")


def choose_benchmark(search: str, requested: str | None = None, located: object = None,
                     *, allow_same: bool = True,
                     collective: str | None = None) -> BenchmarkChoice | None:
    """The benchmark of the check: `requested`, else the first of the search benchmark's
    verification partners found (the registry's; where `located` (options with e.g. imb_dir)
    says, else PATH). Without the
    partner a study is checked with its own benchmark again (not independent, said in the note)
    when `allow_same`, else there is no check (None)."""
    if requested:
        bench = make_benchmark(requested, collective=collective,
                               **BENCHMARK_KINDS[requested].location(located))
        bench.check()
        same = requested == search
        note = (f"the search used {bench.describe()} too: this check is not independent"
                if same else "")
        return BenchmarkChoice(bench, not same, note)
    for partner in BENCHMARK_KINDS[search].partners:
        found = find_benchmark(partner, located, collective)
        if found is not None and found.times(collective or "allreduce"):
            return BenchmarkChoice(found, True)
    if not allow_same:
        return None
    own = make_benchmark(search, collective=collective)
    return BenchmarkChoice(own, False,
                           f"{missing_partner(search)}: checked with "
                           f"{BENCHMARK_KINDS[search].label}, the search's own benchmark, so the "
                           "check is not independent")
