"""Benchmarks that time a collective under a launcher, and the parsers that read their output.

One registry by name (`--benchmark`): the project's mpi4py kernel and IMB (IMB-MPI1, and IMB-NBC
for the non-blocking collectives)."""

from __future__ import annotations

from ..collectives import (ALL_COLLECTIVES, COLLECTIVES, NBC_COLLECTIVES,
                           REDUCTION_ELEMENT_BYTES, REDUCTIONS, Buffers, NbcTiming, SizeTiming,
                           blocking_of, buffer_counts, is_nonblocking, overlap_pct)
from ._base import WRONG_RESULT, Benchmark, BenchmarkOutput, BenchmarkRequest, WrongResult
from ._mpi4py import (KernelOverhead, Mpi4pyBenchmark, kernel_overhead, kernel_program,
                      parse_kernel_output)
from ._imb_output import ImbOutputError, ImbRow, ImbTable, MAX_CHARS, parse_imb_output

BENCHMARKS = ("mpi4py", "imb")

__all__ = ["ALL_COLLECTIVES", "BENCHMARKS", "Benchmark", "BenchmarkOutput", "BenchmarkRequest",
           "Buffers", "COLLECTIVES", "ImbOutputError", "ImbRow", "ImbTable", "KernelOverhead",
           "MAX_CHARS", "Mpi4pyBenchmark", "NBC_COLLECTIVES", "NbcTiming", "REDUCTIONS",
           "REDUCTION_ELEMENT_BYTES", "SizeTiming", "WRONG_RESULT", "WrongResult", "blocking_of",
           "buffer_counts", "is_nonblocking", "kernel_overhead", "kernel_program",
           "make_benchmark", "overlap_pct", "parse_imb_output", "parse_kernel_output"]


def make_benchmark(name: str, *, imb_dir: str | None = None, imb_mem_gb: float | None = None,
                   imb_off_cache: str | None = None, numactl: bool = False,
                   python: str | None = None, collective: str | None = None) -> Benchmark:
    """The benchmark called `name`, configured; InputError for an unknown name or option.
    `collective`: IMB runs IMB-NBC for a non-blocking one, IMB-MPI1 otherwise."""
    from ..errors import InputError

    if name == "mpi4py":
        if imb_dir or imb_mem_gb or imb_off_cache or numactl:
            raise InputError("--imb-dir, --imb-mem, --imb-off-cache and --numactl are options of "
                             "--benchmark imb")
        return Mpi4pyBenchmark(python=python)
    if name == "imb":
        from ._imb import ImbBenchmark

        nbc = collective is not None and is_nonblocking(collective)
        return ImbBenchmark(imb_dir=imb_dir, mem_gb=imb_mem_gb, off_cache=imb_off_cache,
                            numactl=numactl, nbc=nbc)
    raise InputError(f"unknown benchmark {name!r} (choose from {', '.join(BENCHMARKS)})")
