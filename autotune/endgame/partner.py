"""Which benchmark checks a study: the search benchmark's verification partner (the benchmark
registry names it), found where it is looked for, else the search's own benchmark again, said
to be not independent."""

from __future__ import annotations

from dataclasses import dataclass

from ..benchmarks import REGISTRY as BENCHMARK_KINDS
from ..benchmarks import Benchmark, kind_of_stored, make_benchmark
from ..errors import EnvironmentProblem
from ..storage import StudyConfig


def search_benchmark(config: StudyConfig) -> str:
    """The name of what the search measured with (older studies stored nothing: the default)."""
    return kind_of_stored(config.benchmark)


@dataclass(frozen=True)
class BenchmarkChoice:
    benchmark: Benchmark
    independent: bool  # not the benchmark the search used
    note: str = ""  # what the user should know about the choice


def _found(name: str, imb_dir: str | None, collective: str | None) -> Benchmark | None:
    """The benchmark `name`, checked usable here (IMB from `imb_dir`, else PATH); None when it is
    not there, unless its location was given (a wrong folder is an error, not a fallback)."""
    given = imb_dir if "imb_dir" in BENCHMARK_KINDS[name].options else None
    bench = make_benchmark(name, imb_dir=given, collective=collective)
    try:
        bench.check()
    except EnvironmentProblem:
        if given:
            raise
        return None
    return bench


def choose_benchmark(search: str, requested: str | None = None, imb_dir: str | None = None,
                     *, allow_same: bool = True,
                     collective: str | None = None) -> BenchmarkChoice | None:
    """The benchmark of the check: `requested`, else the search benchmark's verification partner
    (the registry's; IMB via `imb_dir` or PATH). Without the partner a study is checked with its
    own benchmark again (not independent, said in the note) when `allow_same`, else there is no
    check (None)."""
    if requested:
        takes_dir = "imb_dir" in BENCHMARK_KINDS[requested].options
        bench = make_benchmark(requested, imb_dir=imb_dir if takes_dir else None,
                               collective=collective)
        bench.check()
        same = requested == search
        note = (f"the search used {bench.describe()} too: this check is not independent"
                if same else "")
        return BenchmarkChoice(bench, not same, note)
    partner = BENCHMARK_KINDS[search].partner
    found = _found(partner, imb_dir, collective)
    if found is not None:
        return BenchmarkChoice(found, True)
    if not allow_same:
        return None
    own = make_benchmark(search, collective=collective)
    missing = BENCHMARK_KINDS[partner]
    where = f" ({missing.where})" if missing.where else ""
    return BenchmarkChoice(own, False,
                           f"{missing.label} not found{where}: checked with "
                           f"{BENCHMARK_KINDS[search].label}, the search's own benchmark, so the "
                           "check is not independent")
