"""IMB-like timing of one collective; runs under mpirun, one process per rank.

Method (per message size, sizes in a seeded random order shared by all ranks): one call discarded
(setup cost), a short estimate, a repetition count fitted to a time budget and agreed by all
ranks, a warm-up, a barrier, the timed loop; the time per call is reduced over ranks (max, min,
avg). Rank 0 prints one JSON line per record, prefixed with ``AUTOTUNE ``. Any exception on any
rank aborts the whole job, so a failing configuration never hangs.
"""

from __future__ import annotations

import argparse
import json
import random
import time
import socket
import sys
import traceback
from collections.abc import Callable

import numpy as np
from mpi4py import MPI

from autotune.benchmarks._base import COLLECTIVES, buffer_counts
from autotune.benchmarks._mpi4py import PREFIX


def make_call(comm: MPI.Comm, collective: str, size: int) -> Callable[[], None]:
    """One call of the collective on buffers sized by `buffer_counts` (IMB's conventions)."""
    counts = buffer_counts(collective, size, comm.Get_size())
    send = np.ones(counts.send, dtype=counts.dtype)
    recv = np.empty(counts.recv, dtype=counts.dtype)
    kind = MPI.FLOAT if counts.dtype == "float32" else MPI.BYTE
    if collective == "allreduce":
        return lambda: comm.Allreduce([send, kind], [recv, kind], op=MPI.SUM)
    if collective == "reduce":
        return lambda: comm.Reduce([send, kind], [recv, kind], op=MPI.SUM, root=0)
    if collective == "allgather":
        return lambda: comm.Allgather([send, kind], [recv, kind])
    if collective == "alltoall":
        return lambda: comm.Alltoall([send, kind], [recv, kind])
    return lambda: comm.Bcast([send, kind], root=0)


def time_size(comm: MPI.Comm, call: Callable[[], None], budget: float,
              min_iters: int, max_iters: int) -> tuple[float, float, float, int]:
    """Return (t_max, t_min, t_avg) seconds per call over ranks and the repetition count."""
    call()  # first call: connection setup, registration; discarded
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(3):
        call()
    estimate = comm.allreduce((MPI.Wtime() - start) / 3, op=MPI.MAX)
    iters = int(min(max_iters, max(min_iters, budget / max(estimate, 1e-7))))
    for _ in range(min(10, iters)):
        call()
    comm.Barrier()
    start = MPI.Wtime()
    for _ in range(iters):
        call()
    per_call = (MPI.Wtime() - start) / iters
    t_max = comm.reduce(per_call, op=MPI.MAX, root=0)
    t_min = comm.reduce(per_call, op=MPI.MIN, root=0)
    t_sum = comm.reduce(per_call, op=MPI.SUM, root=0)
    if comm.Get_rank() == 0:
        return t_max, t_min, t_sum / comm.Get_size(), iters
    return 0.0, 0.0, 0.0, iters


def emit(record: dict) -> None:
    sys.stdout.write(PREFIX + json.dumps(record) + "\n")
    sys.stdout.flush()


def run(args: argparse.Namespace) -> None:
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    hosts = comm.gather(socket.gethostname(), root=0)
    if rank == 0:
        emit({"kind": "start", "time": time.time(), "ranks": comm.Get_size(),
              "collective": args.collective,
              "hosts": list(dict.fromkeys(hosts)), "rank_hosts": hosts,
              "mpi_library": MPI.Get_library_version().replace("\x00", "").splitlines()[0].strip()})
    sizes = list(args.sizes)
    random.Random(args.seed).shuffle(sizes)  # same seed on every rank: same order
    for size in sizes:
        call = make_call(comm, args.collective, size)
        t_max, t_min, t_avg, iters = time_size(comm, call, args.time_per_size,
                                               args.min_iters, args.max_iters)
        del call
        if rank == 0:
            emit({"kind": "size", "size": size, "iters": iters, "t_max_us": t_max * 1e6,
                  "t_min_us": t_min * 1e6, "t_avg_us": t_avg * 1e6})
    comm.Barrier()
    if rank == 0:
        emit({"kind": "done", "sizes": len(sizes)})


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collective", choices=COLLECTIVES, required=True)
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
