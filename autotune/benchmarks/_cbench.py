"""autotune's C benchmark (cbench.c) as a benchmark: IMB-MPI1's method in a program of its own,
built with the MPI's compiler wrapper, so that a machine without IMB reads a configuration's
gain as IMB does (docs/evidence/kernel-fidelity.md). It checks each size's result like the
mpi4py kernel, prints the kernel's records (parsed by the same reader), and says where its ranks
ran. Blocking collectives only: the non-blocking ones keep the kernel (IMB-NBC's method).

The program is built once per wrapper and source into the kernel's cache (`_build`: ~/.cache,
shared with the nodes where the home is), by `check()` before a study starts, so that a build
failure is one line at the start, not a failed trial."""

from __future__ import annotations

from pathlib import Path

from ..collectives import COLLECTIVES
from ..errors import EnvironmentProblem, InputError
from . import _build
from ._base import Benchmark, BenchmarkOutput, BenchmarkRequest
from ._fidelity import Disagreement, disagreement
from ._imb import iterations
from ._mpi4py import parse_kernel_output

SOURCE = Path(__file__).with_name("cbench.c")
# where fidelity.json holds no term for this benchmark at all: the kernel's old constant
CBENCH_FALLBACK = 0.03
FLAGS = ("-O2",)


# the library name that picks a family's compiler wrapper where several MPIs are installed
FAMILY_LIBRARY = {"openmpi": "Open MPI", "mpich": "MPICH"}


def build_cbench(family: str | None = None) -> Path:
    """The program built for the MPI `family` (its compiler wrapper first), from the cache or
    built now; EnvironmentProblem when it cannot be."""
    try:
        return _build.build(SOURCE, "cbench", FLAGS,
                            _build.wrappers(FAMILY_LIBRARY.get(family or "", "")))
    except _build.BuildFailed as exc:
        raise EnvironmentProblem(f"cannot build autotune's C benchmark: {exc}") from None
    except OSError as exc:  # a missing source file in a broken install
        raise EnvironmentProblem(f"cannot build autotune's C benchmark: {exc}") from None


class CBenchmark(Benchmark):
    """cbench.c: IMB-MPI1's method (MPI_Alloc_mem buffers grown in ascending sizes, IMB's
    repetitions, warm-up and per-call timing with a barrier after each call), the result of
    each size checked, MPI started single-threaded."""

    name = "cbench"
    method = "cbench 1 (IMB-MPI1's method, its own program)"
    checks_results = True

    def __init__(self, program: str | None = None, family: str | None = None) -> None:
        self.executable = program  # built on first use (check) unless given
        self.family = family  # the MPI whose wrapper builds it (None: mpicc on PATH)

    def check(self) -> None:
        if self.executable is None:
            self.executable = str(build_cbench(self.family))
        elif not Path(self.executable).is_file():
            raise EnvironmentProblem(f"autotune's C benchmark not found: {self.executable}")

    def disagreement(self, collective: str) -> Disagreement:
        return disagreement("cbench", collective, CBENCH_FALLBACK)

    def times(self, collective: str) -> bool:
        return collective in COLLECTIVES

    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        if not self.times(request.collective):
            raise InputError(f"autotune's C benchmark times the blocking collectives, not "
                             f"{request.collective} (use --benchmark mpi4py or imb)")
        if self.executable is None:
            self.check()
        iters, limit = iterations(request.time_per_size)
        return (str(self.executable), "--collective", request.collective,
                "--sizes", ",".join(str(s) for s in request.sizes), "--iter", str(iters),
                "--time", f"{limit:g}", "--seed", str(int(request.seed)))

    def parse(self, stdout: str, request: BenchmarkRequest) -> BenchmarkOutput:
        return parse_kernel_output(stdout, request.sizes, request.ranks)

    def describe(self) -> str:
        return "autotune C benchmark"
