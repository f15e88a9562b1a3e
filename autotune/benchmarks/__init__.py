"""Benchmarks that time a collective under a launcher, and the parsers that read their output.

One registry by name (`--benchmark`): the project's mpi4py kernel and IMB (IMB-MPI1, and IMB-NBC
for the non-blocking collectives), and the user's application. `start` picks by itself when not
told (`auto`): IMB where it is found, else the kernel (`auto_benchmark`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..collectives import (ALL_COLLECTIVES, COLLECTIVES, NBC_COLLECTIVES,
                           REDUCTION_ELEMENT_BYTES, REDUCTIONS, Buffers, NbcTiming, SizeTiming,
                           blocking_of, buffer_counts, is_nonblocking, overlap_pct)
from ..optionspec import OptionSpec, value_of
from ._app import APP_RUN, AppBenchmark
from ._base import WRONG_RESULT, Benchmark, BenchmarkOutput, BenchmarkRequest, WrongResult
from ._fidelity import Disagreement
from ._mpi4py import (KernelOverhead, Mpi4pyBenchmark, kernel_overhead, kernel_program,
                      parse_kernel_output)
from ._imb_output import ImbOutputError, ImbRow, ImbTable, MAX_CHARS, parse_imb_output

__all__ = ["ALL_COLLECTIVES", "APP_RUN", "AUTO_BENCHMARK", "AUTO_ORDER", "AppBenchmark", "BENCHMARKS", "COLLECTIVES", "DEFAULT_BENCHMARK", "MAX_CHARS",
           "IMB_DIR", "NBC_COLLECTIVES", "OPTION_FLAGS", "REDUCTION_ELEMENT_BYTES", "REDUCTIONS",
           "REGISTRY", "WRONG_RESULT", "Benchmark", "BenchmarkKind", "BenchmarkOutput",
           "BenchmarkRequest", "Buffers", "Disagreement", "ImbOutputError", "ImbRow", "ImbTable",
           "KernelOverhead", "Mpi4pyBenchmark", "NbcTiming", "SizeTiming", "WrongResult",
           "auto_benchmark", "benchmark_help", "blocking_of", "find_benchmark", "partner_help", "buffer_counts", "configured_benchmark",
           "is_nonblocking", "kernel_overhead",
           "kernel_program", "kind_of_stored", "make_benchmark", "overlap_pct",
           "parse_imb_output", "parse_kernel_output"]


@dataclass(frozen=True)
class BenchmarkKind:
    """A benchmark a user picks by name: how it is made, the options it declares for `start`
    (the CLI builds them from here), and its verification partners, the benchmarks an
    independent check of a search made with it uses (the first found)."""

    name: str
    label: str  # what a message calls it
    summary: str  # for --benchmark's help
    partners: tuple[str, ...]  # in order of preference: the first found checks
    make: Callable[..., Benchmark]  # (collective=, **its options) -> the benchmark
    stored_prefix: str  # how its describe() begins, as a study stores it
    cli_options: tuple[OptionSpec, ...] = ()  # start's options of its own
    internal: frozenset[str] = frozenset()  # keyword options `make` takes that have no flag
    locates: str = ""  # its option saying where it is installed: a check with it uses that too
    where: str = ""  # where it is looked for, when it may be missing

    @property
    def partner(self) -> str:
        """The preferred checking benchmark."""
        return self.partners[0]

    @property
    def options(self) -> frozenset[str]:
        """make_benchmark's keyword options it takes (collective aside)."""
        return frozenset(spec.name for spec in self.cli_options) | self.internal

    def location(self, values: object) -> dict[str, Any]:
        """{locates: the folder `values` gives}, or {} when it gives none."""
        where = value_of(values, self.locates) if self.locates else None
        return {self.locates: where} if where else {}


def _kernel(*, python: str | None = None, **_: Any) -> Benchmark:
    return Mpi4pyBenchmark(python=python)


def _cbench(*, family: str | None = None, **_: Any) -> Benchmark:
    from ._cbench import CBenchmark

    return CBenchmark(family=family)


def _imb(*, imb_dir: str | None = None, imb_mem_gb: float | None = None,
         imb_off_cache: str | None = None, numactl: bool = False,
         collective: str | None = None, **_: Any) -> Benchmark:
    from ._imb import ImbBenchmark

    nbc = collective is not None and is_nonblocking(collective)
    return ImbBenchmark(imb_dir=imb_dir, mem_gb=imb_mem_gb, off_cache=imb_off_cache,
                        numactl=numactl, nbc=nbc)


def _app(*, app_command: tuple[str, ...] = (), metric: str | None = None,
         higher_is_better: bool = False, **_: Any) -> Benchmark:
    from ._app import WALL

    return AppBenchmark(tuple(app_command), metric or WALL, higher_is_better=higher_is_better)


# The registry: a new benchmark is one module and one entry here. The first is the default.
IMB_DIR = OptionSpec("--imb-dir", "directory holding IMB-MPI1 (IMB-NBC beside it)  [default: "
                     "found on PATH]", metavar="DIR")
REGISTRY: dict[str, BenchmarkKind] = {k.name: k for k in (
    BenchmarkKind("mpi4py", "the mpi4py kernel", "the mpi4py kernel shipped with autotune",
                  partners=("imb", "cbench"), make=_kernel, stored_prefix="mpi4py",
                  internal=frozenset({"python"})),
    BenchmarkKind("cbench", "autotune's C benchmark", "autotune's own C program with "
                  "IMB-MPI1's method, built with your MPI's mpicc (blocking collectives)",
                  partners=("imb", "mpi4py"), make=_cbench, stored_prefix="autotune C",
                  where="an MPI compiler wrapper (mpicc) on PATH"),
    BenchmarkKind("imb", "IMB-MPI1", "IMB-MPI1 (Intel MPI Benchmarks; IMB-NBC for a "
                  "non-blocking collective)", partners=("mpi4py",), make=_imb, stored_prefix="IMB",
                  cli_options=(
                      IMB_DIR,
                      OptionSpec("--imb-mem", "IMB -mem: memory per process in GB", kind="float",
                                 metavar="GB", low=0, open_low=True, field="imb_mem_gb"),
                      OptionSpec("--imb-off-cache", "IMB -off_cache CACHE_SIZE[,CACHE_LINE_SIZE] "
                                 "(e.g. -1: IMB's default cache size)", metavar="SPEC"),
                      OptionSpec("--numactl", "run IMB under `numactl -l` (memory on the rank's "
                                 "local NUMA node)", kind="flag", default=False)),
                  locates="imb_dir", where="--imb-dir DIR, or PATH"),
    BenchmarkKind("app", "the application", "your own MPI program, given after -- (scored by "
                  "--metric)", partners=("app",), make=_app, stored_prefix="app:",
                  cli_options=(
                      OptionSpec("--metric", "with --benchmark app: REGEX with one group, the "
                                 "number the program prints (the last match), or `wall` for its "
                                 "wall time  [default: wall]", metavar="REGEX|wall"),
                      OptionSpec("--higher-is-better", "with --benchmark app: the metric is a "
                                 "rate (steps/s, ns/day), not a time", kind="flag",
                                 default=False)),
                  internal=frozenset({"app_command"})),
)}
BENCHMARKS = tuple(REGISTRY)
DEFAULT_BENCHMARK = BENCHMARKS[0]  # what older studies, which stored none, were measured with
# `start`'s default: the first of AUTO_ORDER found here. IMB first because the search's benchmark
# must read a configuration's gain as IMB-MPI1 reads it; then autotune's C benchmark, IMB's
# method in a program of its own, wherever an mpicc builds it (a fresh machine with the MPI's
# development files); the mpi4py kernel last, for the non-blocking collectives and machines
# without a compiler wrapper (docs/evidence/kernel-fidelity.md says how close each reads).
AUTO_BENCHMARK = "auto"
AUTO_ORDER = ("imb", "cbench", "mpi4py")
OPTION_FLAGS = {spec.name: spec.flag for kind in REGISTRY.values() for spec in kind.cli_options}


def partner_help() -> str:
    """Which benchmark checks which, and where the checking one is found, for --verify's help."""
    parts = []
    for kind in REGISTRY.values():
        found = [REGISTRY[name] for name in kind.partners]
        parts.append(" or ".join(p.label + (f" ({p.where})" if p.where else "") for p in found)
                     + f" after {kind.label}")
    return "; ".join(parts)


def benchmark_help(only: Iterable[str] | None = None) -> str:
    """Every benchmark and auto (or those named in `only`) with its one phrase, for
    --benchmark."""
    names = set((AUTO_BENCHMARK, *REGISTRY) if only is None else only)
    auto = ([f"{AUTO_BENCHMARK}: the first of " + ", ".join(
        f"{name} ({REGISTRY[name].where})" if REGISTRY[name].where else name
        for name in AUTO_ORDER) + " found here"]
            if AUTO_BENCHMARK in names else [])
    return "; ".join(auto + [f"{name}: {kind.summary}" for name, kind in REGISTRY.items()
                             if name in names])


def find_benchmark(name: str, located: object, collective: str | None,
                   family: str | None = None) -> Benchmark | None:
    """The benchmark `name`, checked usable here (from where `located` says it is installed,
    e.g. --imb-dir, else PATH); None when it is not there, unless its location was given (a
    wrong folder is an error, not a fallback)."""
    from ..errors import EnvironmentProblem

    given = REGISTRY[name].location(located)
    bench = make_benchmark(name, collective=collective, family=family, **given)
    try:
        bench.check()
    except EnvironmentProblem:
        if given:
            raise
        return None
    return bench


def auto_benchmark(located: object, collective: str, family: str | None = None) -> str:
    """`--benchmark auto`: the first of AUTO_ORDER that is installed here (IMB: --imb-dir or
    PATH; autotune's C benchmark: an mpicc of the MPI `family`) and times `collective`."""
    for name in AUTO_ORDER[:-1]:
        bench = find_benchmark(name, located, collective, family)
        if bench is not None and bench.times(collective):
            return name
    return AUTO_ORDER[-1]


def kind_of_stored(described: str) -> str:
    """The benchmark a study's stored description names (older studies stored none: the
    default)."""
    return next((k.name for k in REGISTRY.values()
                 if described and described.startswith(k.stored_prefix)), DEFAULT_BENCHMARK)


def make_benchmark(name: str, *, collective: str | None = None, family: str | None = None,
                   **options: Any) -> Benchmark:
    """The benchmark called `name`, configured with the options it takes (given options it does
    not take are an InputError); `collective`: IMB runs IMB-NBC for a non-blocking one."""
    from ..errors import InputError

    kind = REGISTRY.get(name)
    if kind is None:
        raise InputError(f"unknown benchmark {name!r} (choose from {', '.join(REGISTRY)})")
    foreign = sorted(k for k, v in options.items() if v and k not in kind.options)
    if "app_command" in foreign:
        raise InputError(f"a program after -- is the benchmark of --benchmark app, not of "
                         f"--benchmark {name}")
    if foreign:
        owners = sorted({n for n, other in REGISTRY.items()
                         for k in foreign if k in other.options})
        raise InputError(f"{', '.join(OPTION_FLAGS.get(k, k) for k in foreign)}: options of "
                         f"--benchmark {' or '.join(owners)}, not of --benchmark {name}")
    return kind.make(collective=collective, family=family, **{k: v for k, v in options.items()
                                               if k in kind.options})


def configured_benchmark(name: str, values: object, *, collective: str | None = None,
                         family: str | None = None) -> Benchmark:
    """The benchmark `name` made with what `values` (StartOptions) holds for the options every
    benchmark declares: another benchmark's option set is an InputError, except where that one
    is installed (--imb-dir with the kernel: the independent check's IMB)."""
    given: dict[str, Any] = {}
    for kind in REGISTRY.values():
        for spec in kind.cli_options:
            value = value_of(values, spec.name)
            if value and (kind.name == name or spec.name != kind.locates):
                given[spec.name] = value
        for option in kind.internal:  # given without a flag (the app's command after --)
            if value_of(values, option):
                given[option] = value_of(values, option)
    return make_benchmark(name, collective=collective, family=family, **given)
