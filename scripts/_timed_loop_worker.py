"""Runs under mpirun for scripts/bench_timer.py: times allreduce per size with the C loop of
autotune/benchmarks/timed_loops.c (loaded with ctypes) from inside a Python process, as the
mpi4py kernel would, and prints one line `TIMED {size: t_max_us}` on rank 0."""

import ctypes
import json
import sys

import mpi4py
import numpy as np

mpi4py.rc.thread_level = "single"  # as the kernel (and IMB's MPI_Init) start MPI
from mpi4py import MPI  # noqa: E402


def main(library: str, sizes: list[int], time_per_size: float) -> None:
    loop = ctypes.CDLL(library).timed_allreduce
    loop.restype = ctypes.c_double
    loop.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                     ctypes.c_int, ctypes.c_int]
    comm = MPI.COMM_WORLD
    times = {}
    for size in sizes:
        count = max(1, size // 4)
        send, recv = np.ones(count, np.float32), np.zeros(count, np.float32)
        args = (comm.py2f(), send.ctypes.data, recv.ctypes.data, count, MPI.FLOAT.py2f(),
                MPI.SUM.py2f())
        loop(*args, 3)  # first calls: cold
        comm.Barrier()
        start = MPI.Wtime()
        loop(*args, 3)
        estimate = comm.allreduce((MPI.Wtime() - start) / 3, op=MPI.MAX)
        iters = int(min(20000, max(5, time_per_size / max(estimate, 1e-7))))
        loop(*args, max(10, iters // 4))  # warm-up, as the kernel's
        comm.Barrier()
        t_max = comm.reduce(loop(*args, iters) / iters, op=MPI.MAX, root=0)
        times[size] = t_max * 1e6 if comm.rank == 0 else 0.0
    if comm.rank == 0:
        print("TIMED " + json.dumps(times), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2].split(",")], float(sys.argv[3]))
