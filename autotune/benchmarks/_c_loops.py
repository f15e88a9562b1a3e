"""IMB's timed loops in C for the mpi4py kernel (timed_loops.c), run inside its MPI processes.

Timed from Python, every call of a collective also pays the interpreter's work around it
(0.1-0.6 us per call on the project's VM, depending on the hour), which the kernel's subtraction
of a COMM_SELF call does not remove: small-size ratios were squeezed towards 1, and the kernel's
weighted speedups agreed with IMB-MPI1's within 3 pp for 13 of 32 configurations, where a second
IMB agreed for 30 (docs/evidence/kernel-fidelity.md). The same loop in C, called once per batch from the
same process, reads what IMB reads.

The loops are built with the running MPI's own compiler wrapper, once per node, library and
source, into the cache of `_build`. A build is used only
if it reports the library the process runs. Every rank uses the C loops or none does: the Python
loop is the fallback, and the launch's records say which timed it and why."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mpi4py import MPI

from . import _build

SOURCE = Path(__file__).with_name("timed_loops.c")
C_TIMER, PYTHON_TIMER = "c", "python"
_SIGNATURE = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
              ctypes.c_int, ctypes.c_int]

TimedLoop = Callable[[int], float]


class Unavailable(Exception):
    """Why the C loops cannot time this launch (the reason goes in the launch's record)."""


def build(library: str) -> Path:
    """The shared object for this library, from the cache or built now."""
    try:
        return _build.build(SOURCE, "timed_loops", ("-O2", "-shared", "-fPIC"),
                            _build.wrappers(library), key_extra=library, ask_wrapper=False)
    except _build.BuildFailed as exc:
        raise Unavailable(str(exc)) from None


def load(path: Path, library: str) -> ctypes.CDLL:
    """The built loops, if built against the library this process runs."""
    lib = ctypes.CDLL(str(path))
    lib.timed_loops_library.restype = ctypes.c_int
    lib.timed_loops_library.argtypes = [ctypes.c_char_p, ctypes.c_int]
    text = ctypes.create_string_buffer(MPI.MAX_LIBRARY_VERSION_STRING)
    lib.timed_loops_library(text, len(text))
    built_for = text.value.decode(errors="replace").strip("\0 \n")
    if built_for != library.strip("\0 \n"):
        raise Unavailable(f"built for another MPI ({built_for.splitlines()[0][:80]})")
    for name in ("allreduce", "reduce", "allgather", "alltoall", "bcast"):
        function = getattr(lib, f"timed_{name}")
        function.restype = ctypes.c_double
        function.argtypes = _SIGNATURE
    return lib


@dataclass(frozen=True)
class CLoops:
    """The C loops of this launch (None of them when `lib` is None: `note` says why)."""

    lib: ctypes.CDLL | None
    note: str = ""

    @property
    def timer(self) -> str:
        return C_TIMER if self.lib is not None else PYTHON_TIMER

    @classmethod
    def prepare(cls, comm: MPI.Comm) -> CLoops:
        """Build on one rank per node, load on every rank; all ranks agree on using them."""
        library = MPI.Get_library_version()
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        lib, note = None, ""
        try:
            path = None
            if node.Get_rank() == 0:
                try:
                    path = build(library)
                except Unavailable as exc:
                    note = str(exc)
                except OSError as exc:  # a full or read-only cache, a missing source file
                    note = f"cannot build the C loops: {exc}"[:300]
            path = node.bcast(str(path) if path else None, root=0)
            note = node.bcast(note, root=0)
            if path:
                try:
                    lib = load(Path(path), library)
                except (OSError, Unavailable, AttributeError) as exc:
                    note = str(exc)[:300]
        finally:
            node.Free()
        notes = comm.allgather(note if lib is None else "")
        if all(not n for n in notes):
            return cls(lib)
        return cls(None, next(n for n in notes if n))

    def timed(self, comm: MPI.Comm, collective: str, send: np.ndarray,
              recv: np.ndarray) -> TimedLoop | None:
        """IMB's loop of a blocking collective on these buffers, or None without the C loops."""
        if self.lib is None:
            return None
        kind = MPI.FLOAT if send.dtype == np.float32 else MPI.BYTE
        count = send.size // comm.Get_size() if collective == "alltoall" else send.size
        function = getattr(self.lib, f"timed_{collective}")
        args = (comm.py2f(), send.ctypes.data, recv.ctypes.data, count, kind.py2f(),
                MPI.SUM.py2f())
        return lambda n: function(*args, n)
