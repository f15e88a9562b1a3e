"""What the collectives are and what one size of one measures: their names (the non-blocking
ones timed IMB-NBC's way), their buffers as IMB sizes them, IMB-NBC's overlap, and the per-size
timing record. At the bottom of the package: benchmarks produce these records, the objective
scores them, storage keeps them, and none of those needs the others for it."""

from __future__ import annotations

from dataclasses import dataclass

COLLECTIVES = ("allreduce", "allgather", "alltoall", "bcast", "reduce")
# the non-blocking ones: MPI_I<name>, timed with a CPU load in between (IMB-NBC's method)
NBC_COLLECTIVES = ("iallreduce", "iallgather", "ialltoall", "ibcast", "ireduce")
ALL_COLLECTIVES = COLLECTIVES + NBC_COLLECTIVES
REDUCTIONS = ("allreduce", "reduce", "iallreduce", "ireduce")
REDUCTION_ELEMENT_BYTES = 4  # float32 elements, as IMB's MPI_FLOAT + MPI_SUM


def is_nonblocking(collective: str) -> bool:
    return collective in NBC_COLLECTIVES


def blocking_of(collective: str) -> str:
    """The blocking collective with the same buffers and result: iallreduce -> allreduce."""
    return collective[1:] if collective in NBC_COLLECTIVES else collective


def overlap_pct(t_pure_us: float, t_cpu_us: float, t_ovrl_us: float) -> float:
    """IMB-NBC's overlap in percent (IMB_output.c, the NBC branch of IMB_display_times):
    100 * max(0, min(1, (t_pure + t_CPU - t_ovrl) / max(t_pure, t_CPU))). 100: the collective
    was entirely hidden behind the computation; 0: none of it was (t_ovrl = t_pure + t_CPU).
    IMB divides by max() here; only its MPI-2 non-blocking benchmarks (IMB-EXT) divide by
    min(). Checked against IMB's own printed columns in tests/benchmarks."""
    denominator = max(t_pure_us, t_cpu_us)
    if not denominator > 0:
        return 0.0
    return 100.0 * max(0.0, min(1.0, (t_pure_us + t_cpu_us - t_ovrl_us) / denominator))


@dataclass(frozen=True)
class NbcTiming:
    """One size of a non-blocking collective, IMB-NBC's columns (us, and percent): all four of
    the rank whose t_ovrl is the largest, as IMB reports them."""

    t_pure_us: float  # start + wait, nothing in between
    t_ovrl_us: float  # start, the CPU load, wait
    t_cpu_us: float  # the CPU load alone (measured inside the overlapped loop, as IMB does)
    overlap_pct: float  # overlap_pct(t_pure, t_CPU, t_ovrl)


@dataclass(frozen=True)
class Buffers:
    """Element counts of a collective's buffers for one message size, as IMB sizes them."""

    send: int
    recv: int
    dtype: str  # numpy dtype: float32 for reductions (MPI_FLOAT + MPI_SUM), uint8 otherwise


def buffer_counts(collective: str, size: int, nranks: int) -> Buffers:
    """`size` bytes per rank; allgather receives one block from every rank; alltoall sends and
    receives one `size` block per peer; reductions work on whole float32 elements. A
    non-blocking collective has the buffers of its blocking one."""
    collective = blocking_of(collective)
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
class SizeTiming:
    size: int
    iters: int
    t_max_us: float  # the collective is as slow as its slowest rank: this is what we score
    t_min_us: float
    t_avg_us: float
    nbc: NbcTiming | None = None  # a non-blocking collective's IMB-NBC columns
