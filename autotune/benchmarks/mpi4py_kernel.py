"""IMB-like timing of one collective; runs under mpirun, one process per rank.

Method (per message size, sizes in a seeded random order shared by all ranks): buffers are
allocated and touched (no page faults left for the timed loop), one call is discarded (setup
cost), one call is checked, a short estimate fixes a repetition count fitted to the time budget
and agreed by all ranks, a warm-up runs, a barrier, then the timed loop; the time per call is
reduced over ranks (max, min, avg). Rank 0 prints one JSON line per record, prefixed with
``AUTOTUNE ``. Any exception on any rank aborts the whole job, so a failing configuration never
hangs.

The timed loop times each call alone and runs a barrier after it, outside the timed part, as
IMB-MPI1 does (IMB_allreduce & co. with its default -sync 1). Calls run back to back instead
let one rank start the next call while the other still finishes the last one: an algorithm
whose ranks finish at different times (recursive doubling's local reduction) then read up to a
quarter faster at 256 KiB-1 MiB than IMB reads it, and the search favoured it for that.

Correct answers. Once per size, outside the timed loop, the buffers hold known rank-dependent
values and the result of one call is compared with what it must be (reductions of small
integers in float32 are exact); ranks agree on the verdict, and on a mismatch rank 0 prints a
``wrong-result`` record naming the collective, size and first bad rank and element, and the job
stops and exits 0: the parser turns the record into a failed launch (reason ``wrong-result``).

Fidelity (docs/evidence/kernel-fidelity.md). A blocking collective is timed by IMB's loop in C
(`_c_loops`, built with the MPI's compiler wrapper and cached), called once per batch: no
interpreter work between calls (``overhead`` record: ``timer`` "c"). Without a wrapper, or when
the build fails, the loop runs in Python (``timer`` "python", ``timer_note`` says why), which
reads small-size ratios squeezed towards 1. MPI starts with a single thread, as IMB's MPI_Init
does (mpi4py asks for MPI_THREAD_MULTIPLE by default, whose locking cost 0.2-0.5 us a call here;
the start record's ``thread_level`` says which level ran). The Python loop does no Python work
per call beyond the call and two clock reads: the bound method and the buffer specifications
are prepared once and held in fast locals (`timed`). What Python adds to each call is measured
once per launch with the same timed loop around the same call on MPI.COMM_SELF with empty
buffers (mpi4py's argument processing, the clock reads, MPI's entry checks and its return for
a count of 0: about 0.3 us here) and subtracted from every time per call (``overhead`` record, `self_call_us`; `loop_us`
is the same loop around a no-op function, for comparison). Without it, a configuration 20%
faster in IMB at 8 B read about 12% faster in the kernel. Large sizes: buffers are touched before use, the warm-up is a
quarter of the repetitions (at least 10 calls, at most all of them), and buffers are reused as IMB does without
-off_cache; their launch-to-launch spread is larger than the spread inside one launch, so more
launches help there, not more repetitions.

Non-blocking collectives (iallreduce, iallgather, ialltoall, ibcast, ireduce), IMB-NBC's method
(seeds/004; IMB_ibcast / IMB_ibcast_pure / IMB_cpu_exploit), with a barrier after every
repetition (outside the timed part). t_ovrl is the mean time of start, the CPU load, wait, and
t_CPU the mean time of the load inside that loop; t_pure is the same loop with a load of 0 steps
(start + wait), so that Python's own per-repetition costs (clock reads, the call of the load)
cancel in the overlap. The CPU load is a busy loop of pure Python arithmetic (no MPI call, no
allocation, the GIL held), calibrated once per launch and fitted per message size to take about
the slowest rank's t_pure. The record carries IMB's columns of the rank with the largest t_ovrl
and IMB's overlap of them (collectives.overlap_pct), plus t_max/t_min/t_avg over ranks of
t_pure. The result of one start + wait per size is checked as for the blocking collective. With
no asynchronous progress (Open MPI's libnbc has no progress thread) a collective advances only
inside MPI calls, so the load hides little of it.

Test only: AUTOTUNE_TEST_CORRUPT_RANK=<rank> (or the MCA parameter
``mpi_autotune_test_corrupt_rank``, which mpirun exports to every rank as
OMPI_MCA_mpi_autotune_test_corrupt_rank; a search space may set MCA parameters of the ``mpi_``
family but no AUTOTUNE_* variable) makes that rank corrupt its result of the checked call, so
tests can plant a wrong answer on a real run. It never touches the timed loop.
AUTOTUNE_TEST_POISON_RECORD=1 (or the MCA parameter ``mpi_autotune_test_poison_record``) makes
rank 0 print one poisoned record (a size record whose iters is a 400-digit integer) before its
done record, so tests can plant a malformed record in a real run's output.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass


def die_with_launcher() -> None:
    """Have Linux kill this rank when its launcher (mpirun, orted, slurmstepd) dies. A rank whose
    launcher is killed while it starts waits in PMIx_Init for ever (Open MPI 4.1.4: seen after a
    SIGKILL of the daemon's process group), holding the GIL, so no thread of ours could notice."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the launcher died before the request: nothing would signal us
        os._exit(1)


if __name__ == "__main__":  # before MPI starts (at import of mpi4py's MPI); not in a test process
    die_with_launcher()

import mpi4py  # noqa: E402
import numpy as np  # noqa: E402

# Initialise MPI as IMB does (MPI_Init: a single thread), not at mpi4py's default
# MPI_THREAD_MULTIPLE: under it Open MPI makes its progress and request paths (and UCX's worker)
# thread-safe, which added 0.2-0.5 us to each call at small sizes here and squeezed small-size
# ratios towards 1 (docs/evidence/kernel-fidelity.md). MPI4PY_RC_THREAD_LEVEL in the environment still
# overrides it (mpi4py's rule); the start record says which level the run had.
mpi4py.rc.thread_level = "single"
from mpi4py import MPI  # noqa: E402

from autotune.collectives import (ALL_COLLECTIVES, blocking_of, buffer_counts, is_nonblocking,
                                  overlap_pct)
from autotune.benchmarks._c_loops import CLoops
from autotune.benchmarks._mpi4py import PREFIX

THREAD_LEVELS = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
                 MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
CORRUPT_VARIABLES = ("AUTOTUNE_TEST_CORRUPT_RANK", "OMPI_MCA_mpi_autotune_test_corrupt_rank")
POISON_VARIABLES = ("AUTOTUNE_TEST_POISON_RECORD", "OMPI_MCA_mpi_autotune_test_poison_record")
WARMUP_FRACTION = 0.25  # of the repetitions, at least MIN_WARMUP calls, at most the repetitions
MIN_WARMUP = 10
OVERHEAD_CALLS = 20_000
OVERHEAD_BATCHES = 5
BYTE_PERIOD = 251  # byte patterns repeat every 251 elements (prime: no alignment with blocks)
CPU_CALIBRATION_STEPS = 200_000  # about 5-10 ms of the CPU load, timed 3 times per launch
LOAD_FIT_RUNS = 5  # timed runs of the load per correction of its length (the median counts)
NBC_COST_PER_REP = 5  # an NBC repetition: start+wait, start+load+wait, 2 barriers (~5 calls)

Loop = Callable[[int], None]
TimedLoop = Callable[[int], float]  # n calls, each timed alone; returns the sum of their times


def repeat(f: Callable[..., object], args: tuple) -> Loop:
    """A function running `f(*args)` n times with no per-call Python work beyond the call: no
    attribute lookup, no list building, no *args unpacking (arguments sit in fast locals)."""
    if len(args) == 2:
        def loop2(n: int, f=f, a=args[0], b=args[1]) -> None:
            for _ in range(n):
                f(a, b)
        return loop2
    if len(args) == 3:
        def loop3(n: int, f=f, a=args[0], b=args[1], c=args[2]) -> None:
            for _ in range(n):
                f(a, b, c)
        return loop3
    if len(args) == 4:
        def loop4(n: int, f=f, a=args[0], b=args[1], c=args[2], d=args[3]) -> None:
            for _ in range(n):
                f(a, b, c, d)
        return loop4
    raise ValueError(f"no loop for {len(args)} arguments")


def _noop0() -> None:
    pass


def timed(f: Callable[..., object], args: tuple, barrier: Callable[[], object] = _noop0,
          wtime: Callable[[], float] = MPI.Wtime) -> TimedLoop:
    """A function running `f(*args)` n times, each call timed alone and followed by an untimed
    `barrier()` (IMB's way), returning the sum of the calls' times. Arguments sit in fast
    locals, as in `repeat`."""
    if len(args) == 2:
        def timed2(n: int, f=f, a=args[0], b=args[1], sync=barrier, clock=wtime) -> float:
            total = 0.0
            for _ in range(n):
                t0 = clock()
                f(a, b)
                total += clock() - t0
                sync()
            return total
        return timed2
    if len(args) == 3:
        def timed3(n: int, f=f, a=args[0], b=args[1], c=args[2], sync=barrier,
                   clock=wtime) -> float:
            total = 0.0
            for _ in range(n):
                t0 = clock()
                f(a, b, c)
                total += clock() - t0
                sync()
            return total
        return timed3
    if len(args) == 4:
        def timed4(n: int, f=f, a=args[0], b=args[1], c=args[2], d=args[3], sync=barrier,
                   clock=wtime) -> float:
            total = 0.0
            for _ in range(n):
                t0 = clock()
                f(a, b, c, d)
                total += clock() - t0
                sync()
            return total
        return timed4
    raise ValueError(f"no loop for {len(args)} arguments")


def repeat_wait(start: Callable[..., MPI.Request], args: tuple) -> Loop:
    """A function running `start(*args).Wait()` n times: a non-blocking collective alone."""
    def loop(n: int, start=start, args=args) -> None:
        for _ in range(n):
            start(*args).Wait()
    return loop


def call_args(comm: MPI.Comm, collective: str, send: np.ndarray,
              recv: np.ndarray) -> tuple[Callable[..., object], tuple]:
    """The bound method and its positional arguments for one call of the collective (for a
    non-blocking one, the method that starts it and returns its request)."""
    kind = MPI.FLOAT if send.dtype == np.float32 else MPI.BYTE
    s, r = [send, kind], [recv, kind]
    nb = is_nonblocking(collective)
    base = blocking_of(collective)
    if base == "allreduce":
        return (comm.Iallreduce if nb else comm.Allreduce), (s, r, MPI.SUM)
    if base == "reduce":
        return (comm.Ireduce if nb else comm.Reduce), (s, r, MPI.SUM, 0)
    if base == "allgather":
        return (comm.Iallgather if nb else comm.Allgather), (s, r)
    if base == "alltoall":
        return (comm.Ialltoall if nb else comm.Alltoall), (s, r)
    return (comm.Ibcast if nb else comm.Bcast), (s, 0)


@dataclass
class Collective:
    """One collective on the buffers of one message size, ready to run in a tight loop. `name`
    is the blocking collective whose result it computes (what the check verifies); a
    non-blocking one also keeps how to start it (`start`, `args`) for the overlapped loop."""

    name: str
    comm: MPI.Comm
    size: int
    send: np.ndarray
    recv: np.ndarray
    loop: Loop
    collective: str = ""  # as asked for: iallreduce for a non-blocking allreduce
    timed: TimedLoop | None = None  # a blocking collective's IMB-style timed loop
    start: Callable[..., MPI.Request] | None = None
    args: tuple = ()

    @classmethod
    def make(cls, comm: MPI.Comm, collective: str, size: int,
             loops: CLoops | None = None) -> Collective:
        counts = buffer_counts(collective, size, comm.Get_size())
        send = np.ones(counts.send, dtype=counts.dtype)
        recv = np.zeros(counts.recv, dtype=counts.dtype)
        recv.fill(0)  # touch every page now: no first-touch faults inside the timed loop
        base = blocking_of(collective)
        if base == "bcast":
            recv = send  # one buffer: the root's is sent, the others' receive
        f, args = call_args(comm, collective, send, recv)
        if is_nonblocking(collective):
            return cls(base, comm, size, send, recv, repeat_wait(f, args), collective,
                       start=f, args=args)
        in_c = loops.timed(comm, base, send, recv) if loops is not None else None
        return cls(base, comm, size, send, recv, repeat(f, args), collective,
                   timed=in_c or timed(f, args, comm.Barrier))


# ---- correctness --------------------------------------------------------------------------

def byte_pattern(src: int, dst: int, count: int) -> np.ndarray:
    """What rank `src` sends to rank `dst` (dst 0 for a block meant for every rank)."""
    offset = (37 * src + 101 * dst + 11) % BYTE_PERIOD  # 4-byte temporaries, not 8: large buffers
    return ((np.arange(count, dtype=np.uint32) + offset) % BYTE_PERIOD).astype(np.uint8)


def reduction_input(rank: int, count: int) -> np.ndarray:
    """Small integers (exact in float32 for any summation order up to ~200k ranks)."""
    return ((rank % 64) + 1 + np.arange(count, dtype=np.int32) % 16).astype(np.float32)


def reduction_expected(nranks: int, count: int) -> np.ndarray:
    base = sum((r % 64) + 1 for r in range(nranks))
    return (base + nranks * (np.arange(count, dtype=np.int32) % 16)).astype(np.float32)


def fill_and_expect(c: Collective) -> np.ndarray | None:
    """Put the known inputs in the send buffer and a value that must be overwritten in the
    result buffer; return what this rank's result must be (None: this rank has no result)."""
    rank, n = c.comm.Get_rank(), c.comm.Get_size()
    if c.name in ("allreduce", "reduce"):
        count = c.send.size
        c.send[:] = reduction_input(rank, count)
        c.recv.fill(np.nan)
        if c.name == "reduce" and rank != 0:
            return None
        return reduction_expected(n, count)
    if c.name == "allgather":
        c.send[:] = byte_pattern(rank, 0, c.send.size)
        expected = np.concatenate([byte_pattern(src, 0, c.send.size) for src in range(n)])
    elif c.name == "alltoall":
        block = c.send.size // n
        c.send[:] = np.concatenate([byte_pattern(rank, dst, block) for dst in range(n)])
        expected = np.concatenate([byte_pattern(src, rank, block) for src in range(n)])
    else:  # bcast: the root's pattern everywhere
        expected = byte_pattern(0, 0, c.send.size)
        if rank == 0:
            c.send[:] = expected
    if c.name != "bcast" or rank != 0:
        c.recv[:] = ~expected  # differs from the expected value in every element
    return expected


def corrupt_rank() -> int | None:
    """The rank told to corrupt its result (test only), if any."""
    for name in CORRUPT_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value:
            return int(value)
    return None


def corrupt(c: Collective, expected: np.ndarray | None) -> None:
    """Test only: make this rank's answer wrong (its result, or for a reduce's non-root rank its
    contribution, before the call)."""
    target = c.recv if expected is not None else c.send
    if target.size == 0:
        return
    target[0] = ~target[0] if target.dtype == np.uint8 else target[0] + 1


def first_mismatch(got: np.ndarray, expected: np.ndarray | None) -> tuple[int, float, float]:
    """(element, expected, got) of the first wrong element, element -1 when all are right."""
    if expected is None or got.size == 0:
        return -1, 0.0, 0.0
    bad = np.flatnonzero(got != expected)
    if bad.size == 0:
        return -1, 0.0, 0.0
    i = int(bad[0])
    return i, float(expected[i]), float(got[i])


def check(c: Collective, corrupt_on: int | None) -> dict | None:
    """Run one call on known inputs and verify every rank's result; every rank returns the same
    verdict: None when right, else the first bad rank's report."""
    rank = c.comm.Get_rank()
    expected = fill_and_expect(c)
    planted = corrupt_on == rank
    if planted and expected is None:
        corrupt(c, expected)
    c.comm.Barrier()
    c.loop(1)
    if planted and expected is not None:
        corrupt(c, expected)
    verdicts = c.comm.allgather(first_mismatch(c.recv, expected))
    for bad_rank, (element, want, got) in enumerate(verdicts):
        if element >= 0:
            return {"kind": "wrong-result", "collective": c.collective or c.name,
                    "size": c.size, "rank": bad_rank, "element": element, "expected": want,
                    "got": got}
    return None


# ---- timing -------------------------------------------------------------------------------

def time_size(c: Collective, budget: float, min_iters: int, max_iters: int,
              call_overhead: float = 0.0) -> tuple[float, float, float, int]:
    """Return (t_max, t_min, t_avg) seconds per call over ranks, less what Python adds to a
    call (`call_overhead`, seconds), and the repetition count."""
    comm, timed_loop = c.comm, c.timed
    assert timed_loop is not None
    comm.Barrier()
    start = MPI.Wtime()
    timed_loop(3)  # with the barriers: what a repetition costs in wall time
    estimate = comm.allreduce((MPI.Wtime() - start) / 3, op=MPI.MAX)
    iters = int(min(max_iters, max(min_iters, budget / max(estimate, 1e-7))))
    timed_loop(min(iters, max(MIN_WARMUP, int(WARMUP_FRACTION * iters))))  # within the budget
    comm.Barrier()
    per_call = timed_loop(iters) / iters
    if per_call > 2 * call_overhead:  # always, for a real call; never a negative time
        per_call -= call_overhead
    t_max = comm.reduce(per_call, op=MPI.MAX, root=0)
    t_min = comm.reduce(per_call, op=MPI.MIN, root=0)
    t_sum = comm.reduce(per_call, op=MPI.SUM, root=0)
    if comm.Get_rank() == 0:
        return t_max, t_min, t_sum / comm.Get_size(), iters
    return 0.0, 0.0, 0.0, iters


# ---- non-blocking collectives: IMB-NBC's t_pure, t_CPU, t_ovrl --------------------------

def busy(steps: int) -> float:
    """The CPU load: pure arithmetic in a Python loop, no MPI call, no allocation (returns its
    result so nothing can skip it)."""
    x = 1.0
    for _ in range(steps):
        x = x * 0.999999 + 1e-6
    return x


@dataclass(frozen=True)
class CpuLoad:
    """The load calibrated on this rank: seconds per step (the fastest of 3 timed runs)."""

    seconds_per_step: float

    @classmethod
    def calibrate(cls, steps: int = CPU_CALIBRATION_STEPS) -> CpuLoad:
        busy(steps // 10)
        times = []
        for _ in range(3):
            start = MPI.Wtime()
            busy(steps)
            times.append(MPI.Wtime() - start)
        return cls(max(min(times), 1e-9) / steps)

    def steps_for(self, seconds: float) -> int:
        """Steps that take about `seconds`: from the calibration, then corrected twice by timing
        the load itself at that length (short loads cost more per step than the calibration's
        long one, and the machine's speed drifts)."""
        steps = max(1, round(seconds / self.seconds_per_step))
        for _ in range(2):
            took = []
            for _ in range(LOAD_FIT_RUNS):
                start = MPI.Wtime()
                busy(steps)
                took.append(MPI.Wtime() - start)
            steps = max(1, round(steps * seconds / max(sorted(took)[LOAD_FIT_RUNS // 2], 1e-9)))
        return steps


@dataclass(frozen=True)
class NbcResult:
    """One rank's means (seconds) of one size, and the repetition count."""

    t_pure: float
    t_ovrl: float
    t_cpu: float
    iters: int
    steps: int


def time_nbc_size(c: Collective, budget: float, min_iters: int, max_iters: int,
                  load: CpuLoad) -> NbcResult:
    """This rank's t_pure, t_ovrl and t_CPU of one size, IMB-NBC's way: the pure loop, then a
    load sized to the slowest rank's t_pure, then the overlapped loop, a barrier after every
    repetition (untimed); as many repetitions in both loops."""
    comm, loop, barrier, wtime = c.comm, c.loop, c.comm.Barrier, MPI.Wtime
    barrier()
    t0 = wtime()
    loop(3)
    estimate = comm.allreduce((wtime() - t0) / 3, op=MPI.MAX)
    iters = int(min(max_iters, max(min_iters,
                                   budget / max(NBC_COST_PER_REP * estimate, 1e-7))))
    loop(min(iters, max(MIN_WARMUP, int(WARMUP_FRACTION * iters))))  # warm-up, within budget
    t_pure, _ = overlapped(c, iters, 0)
    steps = load.steps_for(comm.allreduce(t_pure, op=MPI.MAX))
    busy(steps)  # IMB's initializing call of the load
    t_ovrl, t_cpu = overlapped(c, iters, steps)
    return NbcResult(t_pure, t_ovrl, t_cpu, iters, steps)


def overlapped(c: Collective, iters: int, steps: int) -> tuple[float, float]:
    """Mean seconds of (start, the load of `steps`, wait) and of the load inside it, a barrier
    after every repetition. t_pure is this loop with 0 steps: both loops then pay the same
    Python costs per repetition (the clock reads, the call of the load), which cancel in the
    overlap instead of reading as 0.2-0.3 us of computation that nothing hid."""
    start_op, args, barrier, wtime = c.start, c.args, c.comm.Barrier, MPI.Wtime
    assert start_op is not None
    total = load = 0.0
    barrier()
    for _ in range(iters):
        t0 = wtime()
        request = start_op(*args)
        t1 = wtime()
        busy(steps)
        load += wtime() - t1
        request.Wait()
        total += wtime() - t0
        barrier()
    return total / iters, load / iters


def nbc_record(comm: MPI.Comm, size: int, mine: NbcResult) -> dict | None:
    """Rank 0's size record (None elsewhere): IMB's columns of the rank with the largest t_ovrl,
    its overlap, and t_max/t_min/t_avg over ranks of t_pure."""
    everyone = comm.gather((mine.t_pure, mine.t_ovrl, mine.t_cpu), root=0)  # plain floats
    if comm.Get_rank() != 0:
        return None
    assert everyone is not None
    slowest = max(range(len(everyone)), key=lambda rank: everyone[rank][1])
    pure = [times[0] for times in everyone]
    t_pure, t_ovrl, t_cpu = (t * 1e6 for t in everyone[slowest])
    return {"kind": "size", "size": size, "iters": mine.iters,
            "t_max_us": max(pure) * 1e6, "t_min_us": min(pure) * 1e6,
            "t_avg_us": sum(pure) / len(pure) * 1e6,
            "t_pure_us": t_pure, "t_ovrl_us": t_ovrl, "t_cpu_us": t_cpu,
            "overlap_pct": overlap_pct(t_pure, t_cpu, t_ovrl), "cpu_steps": mine.steps,
            "rank": slowest}


def _noop2(a: object, b: object) -> None:
    pass


def _noop3(a: object, b: object, c: object) -> None:
    pass


def _noop4(a: object, b: object, c: object, d: object) -> None:
    pass


NOOPS = {2: _noop2, 3: _noop3, 4: _noop4}


def per_call(comm: MPI.Comm, loop: TimedLoop, calls: int = OVERHEAD_CALLS) -> list[float]:
    """Seconds per call of a timed loop, in batches (the slowest rank's time of each batch)."""
    times = []
    for _ in range(OVERHEAD_BATCHES):
        comm.Barrier()
        times.append(comm.allreduce(loop(calls) / calls, op=MPI.MAX))
    return times


def overheads(comm: MPI.Comm, collective: str) -> dict:
    """What Python adds to a call, in us (median and spread of the batches), measured with the
    timed loop of the blocking collective: around a no-op of the same arity (`loop`), and around
    the same call on MPI.COMM_SELF with empty buffers (`self_call`: argument processing, clock
    reads, MPI's entry and its return for a count of 0; subtracted from every time per call)."""
    collective = blocking_of(collective)  # a non-blocking collective: its blocking one's costs
    dtype = np.float32 if collective in ("allreduce", "reduce") else np.uint8
    send, recv = np.zeros(0, dtype=dtype), np.zeros(0, dtype=dtype)
    f, args = call_args(MPI.COMM_SELF, collective, send, recv if collective != "bcast" else send)
    record: dict = {"kind": "overhead"}
    for name, loop in (("loop", timed(NOOPS[len(args)], args)), ("self_call", timed(f, args))):
        loop(100)
        times = per_call(comm, loop, OVERHEAD_CALLS if name == "loop" else OVERHEAD_CALLS // 4)
        record[f"{name}_us"] = float(np.median(times)) * 1e6
        record[f"{name}_spread_us"] = (max(times) - min(times)) * 1e6
    return record


# ---- the run ------------------------------------------------------------------------------

def emit(record: dict) -> None:
    sys.stdout.write(PREFIX + json.dumps(record) + "\n")
    sys.stdout.flush()


def start_record(comm: MPI.Comm, collective: str) -> dict:
    hosts = comm.gather(socket.gethostname(), root=0)
    return {"kind": "start", "time": time.time(), "ranks": comm.Get_size(),
            "collective": collective, "hosts": list(dict.fromkeys(hosts or [])),
            "rank_hosts": hosts, "thread_level": THREAD_LEVELS.get(MPI.Query_thread(), "unknown"),
            "mpi_library": MPI.Get_library_version().replace("\x00", "").splitlines()[0].strip()}


def run(args: argparse.Namespace) -> None:
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    start = start_record(comm, args.collective)
    if rank == 0:
        emit(start)
    overhead = overheads(comm, args.collective)
    loops = None if is_nonblocking(args.collective) else CLoops.prepare(comm)
    overhead["timer"] = loops.timer if loops is not None else "python"
    if loops is not None and loops.note:
        overhead["timer_note"] = loops.note
    if rank == 0:
        emit(overhead)
    # what Python adds to a call timed from Python; nothing when the loop runs in C
    subtracted_us = overhead["self_call_us"] if overhead["timer"] == "python" else 0.0
    load = CpuLoad.calibrate() if is_nonblocking(args.collective) else None
    corrupt_on = corrupt_rank()
    sizes = list(args.sizes)
    random.Random(args.seed).shuffle(sizes)  # same seed on every rank: same order
    for size in sizes:
        c = Collective.make(comm, args.collective, size, loops)
        c.loop(1)  # first call: connection setup, registration; discarded
        wrong = check(c, corrupt_on)
        if wrong is not None:
            if rank == 0:
                emit(wrong)
            return  # every rank got the same verdict: stop together, exit 0
        if load is not None:
            record = nbc_record(comm, size, time_nbc_size(c, args.time_per_size, args.min_iters,
                                                          args.max_iters, load))
            del c
            if record is not None:
                emit(record)
            continue
        t_max, t_min, t_avg, iters = time_size(c, args.time_per_size, args.min_iters,
                                               args.max_iters, subtracted_us * 1e-6)
        del c
        if rank == 0:
            emit({"kind": "size", "size": size, "iters": iters, "t_max_us": t_max * 1e6,
                  "t_min_us": t_min * 1e6, "t_avg_us": t_avg * 1e6,
                  "overhead_us": subtracted_us})
    comm.Barrier()
    if rank == 0 and any(os.environ.get(name, "").strip() == "1" for name in POISON_VARIABLES):
        emit({"kind": "size", "size": sizes[0], "iters": 10**400, "t_max_us": 1.0,
              "t_min_us": 1.0, "t_avg_us": 1.0})  # test only: a poisoned record
    if rank == 0:
        emit({"kind": "done", "sizes": len(sizes)})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collective", choices=ALL_COLLECTIVES, required=True)
    parser.add_argument("--sizes", required=True,
                        type=lambda text: [int(s) for s in text.split(",")])
    parser.add_argument("--time-per-size", type=float, default=0.02,
                        help="seconds of timed loop per message size")
    parser.add_argument("--min-iters", type=int, default=5)
    parser.add_argument("--max-iters", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        run(args)
    except Exception:  # one failing rank must take the whole job down, never hang it
        sys.stderr.write(f"autotune kernel rank {MPI.COMM_WORLD.Get_rank()} failed:\n"
                         + traceback.format_exc())
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(3)


if __name__ == "__main__":
    main()
