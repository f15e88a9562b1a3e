"""Benchmarks that time a collective under a launcher, and the parsers that read their output.

One registry by name (`--benchmark`): the project's mpi4py kernel and IMB (IMB-MPI1, and IMB-NBC
for the non-blocking collectives)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..collectives import (ALL_COLLECTIVES, COLLECTIVES, NBC_COLLECTIVES,
                           REDUCTION_ELEMENT_BYTES, REDUCTIONS, Buffers, NbcTiming, SizeTiming,
                           blocking_of, buffer_counts, is_nonblocking, overlap_pct)
from ._base import WRONG_RESULT, Benchmark, BenchmarkOutput, BenchmarkRequest, WrongResult
from ._mpi4py import (KernelOverhead, Mpi4pyBenchmark, kernel_overhead, kernel_program,
                      parse_kernel_output)
from ._imb_output import ImbOutputError, ImbRow, ImbTable, MAX_CHARS, parse_imb_output

__all__ = ["ALL_COLLECTIVES", "BENCHMARKS", "COLLECTIVES", "DEFAULT_BENCHMARK", "MAX_CHARS",
           "NBC_COLLECTIVES", "OPTION_FLAGS", "REDUCTION_ELEMENT_BYTES", "REDUCTIONS",
           "REGISTRY", "WRONG_RESULT", "Benchmark", "BenchmarkKind", "BenchmarkOutput",
           "BenchmarkRequest", "Buffers", "ImbOutputError", "ImbRow", "ImbTable",
           "KernelOverhead", "Mpi4pyBenchmark", "NbcTiming", "SizeTiming", "WrongResult",
           "benchmark_help", "blocking_of", "buffer_counts", "is_nonblocking", "kernel_overhead",
           "kernel_program", "kind_of_stored", "make_benchmark", "overlap_pct",
           "parse_imb_output", "parse_kernel_output"]


@dataclass(frozen=True)
class BenchmarkKind:
    """A benchmark a user picks by name: how it is made, the options it takes (start's
    --imb-* options are IMB's), and its verification partner, the benchmark an independent check
    of a search made with it uses."""

    name: str
    label: str  # what a message calls it
    summary: str  # for --benchmark's help
    partner: str
    options: frozenset[str]  # make_benchmark's keyword options it takes (collective aside)
    make: Callable[..., Benchmark]
    stored_prefix: str  # how its describe() begins, as a study stores it
    where: str = ""  # where it is looked for, when it may be missing


def _kernel(*, python: str | None = None, **_: Any) -> Benchmark:
    return Mpi4pyBenchmark(python=python)


def _imb(*, imb_dir: str | None = None, imb_mem_gb: float | None = None,
         imb_off_cache: str | None = None, numactl: bool = False,
         collective: str | None = None, **_: Any) -> Benchmark:
    from ._imb import ImbBenchmark

    nbc = collective is not None and is_nonblocking(collective)
    return ImbBenchmark(imb_dir=imb_dir, mem_gb=imb_mem_gb, off_cache=imb_off_cache,
                        numactl=numactl, nbc=nbc)


# The registry: a new benchmark is one module and one entry here. The first is the default.
REGISTRY: dict[str, BenchmarkKind] = {k.name: k for k in (
    BenchmarkKind("mpi4py", "the mpi4py kernel", "the mpi4py kernel shipped with autotune",
                  partner="imb",
                  options=frozenset({"python"}), make=_kernel, stored_prefix="mpi4py"),
    BenchmarkKind("imb", "IMB-MPI1", "IMB-MPI1 (Intel MPI Benchmarks; IMB-NBC for a "
                  "non-blocking collective)", partner="mpi4py",
                  options=frozenset({"imb_dir", "imb_mem_gb", "imb_off_cache", "numactl"}),
                  make=_imb, stored_prefix="IMB", where="--imb-dir DIR, or PATH"),
)}
BENCHMARKS = tuple(REGISTRY)
DEFAULT_BENCHMARK = BENCHMARKS[0]
OPTION_FLAGS = {"imb_dir": "--imb-dir", "imb_mem_gb": "--imb-mem",
                "imb_off_cache": "--imb-off-cache", "numactl": "--numactl", "python": "--python"}


def benchmark_help() -> str:
    """Every benchmark with its one phrase, for --benchmark."""
    return "; ".join(f"{name}: {kind.summary}" for name, kind in REGISTRY.items())


def kind_of_stored(described: str) -> str:
    """The benchmark a study's stored description names (older studies stored none: the
    default)."""
    return next((k.name for k in REGISTRY.values()
                 if described and described.startswith(k.stored_prefix)), DEFAULT_BENCHMARK)


def make_benchmark(name: str, *, collective: str | None = None, **options: Any) -> Benchmark:
    """The benchmark called `name`, configured with the options it takes (given options it does
    not take are an InputError); `collective`: IMB runs IMB-NBC for a non-blocking one."""
    from ..errors import InputError

    kind = REGISTRY.get(name)
    if kind is None:
        raise InputError(f"unknown benchmark {name!r} (choose from {', '.join(REGISTRY)})")
    foreign = sorted(k for k, v in options.items() if v and k not in kind.options)
    if foreign:
        owners = sorted({n for n, other in REGISTRY.items()
                         for k in foreign if k in other.options})
        raise InputError(f"{', '.join(OPTION_FLAGS.get(k, k) for k in foreign)}: options of "
                         f"--benchmark {' or '.join(owners)}, not of --benchmark {name}")
    return kind.make(collective=collective, **{k: v for k, v in options.items()
                                               if k in kind.options})
