"""What a benchmark is: argv that times one collective over some sizes under a launcher, and a
parser that turns its output into per-size timings (t_max over ranks: a collective is as slow as
its slowest rank). The measurer knows no benchmark; a benchmark knows no launcher and no Optuna.

Kept free of mpi4py imports: importing mpi4py.MPI would initialize MPI in the controller.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ..errors import LaunchFailure

COLLECTIVES = ("allreduce", "allgather", "alltoall", "bcast", "reduce")
REDUCTIONS = ("allreduce", "reduce")
REDUCTION_ELEMENT_BYTES = 4  # float32 elements, as IMB's MPI_FLOAT + MPI_SUM
WRONG_RESULT = "wrong-result"


class WrongResult(LaunchFailure):
    """The benchmark checked the collective's result and it was wrong: the configuration is
    broken however fast it is (never proposed again, never exported)."""

    def __init__(self, detail: str, stderr_tail: str = "") -> None:
        super().__init__(WRONG_RESULT, detail, stderr_tail)


@dataclass(frozen=True)
class Buffers:
    """Element counts of a collective's buffers for one message size, as IMB sizes them."""

    send: int
    recv: int
    dtype: str  # numpy dtype: float32 for reductions (MPI_FLOAT + MPI_SUM), uint8 otherwise


def buffer_counts(collective: str, size: int, nranks: int) -> Buffers:
    """`size` bytes per rank; allgather receives one block from every rank; alltoall sends and
    receives one `size` block per peer; reductions work on whole float32 elements."""
    if collective in REDUCTIONS:
        count = size // REDUCTION_ELEMENT_BYTES
        return Buffers(count, count, "float32")
    if collective == "allgather":
        return Buffers(size, size * nranks, "uint8")
    if collective == "alltoall":
        return Buffers(size * nranks, size * nranks, "uint8")
    if collective == "bcast":
        return Buffers(size, size, "uint8")
    raise ValueError(f"unknown collective {collective}")


@dataclass(frozen=True)
class BenchmarkRequest:
    """What one launch measures."""

    collective: str
    sizes: tuple[int, ...]
    ranks: int
    time_per_size: float  # seconds of timed loop per size
    seed: int  # size order, where the benchmark can shuffle


@dataclass(frozen=True)
class SizeTiming:
    size: int
    iters: int
    t_max_us: float  # the collective is as slow as its slowest rank: this is what we score
    t_min_us: float
    t_avg_us: float


@dataclass(frozen=True)
class BenchmarkOutput:
    ranks: int
    timings: dict[int, SizeTiming]
    hosts: tuple[str, ...] = ()  # where the ranks ran, when the benchmark says (else unchecked)
    mpi_library: str = ""
    started: float | None = None  # unix time the timed part began, when the benchmark says


class Benchmark(ABC):
    """One way of timing a collective; `name` is what users pick with --benchmark."""

    name: str = ""

    @abstractmethod
    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        """The benchmark's own argv for one launch (the launcher puts mpirun in front)."""

    @abstractmethod
    def parse(self, stdout: str, request: BenchmarkRequest) -> BenchmarkOutput:
        """Every requested size exactly once with sane numbers, else BenchmarkOutputError."""

    def check(self) -> None:
        """Raise EnvironmentProblem when this benchmark cannot run here (before anything starts)."""

    def describe(self) -> str:
        return self.name
