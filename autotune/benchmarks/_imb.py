"""IMB-MPI1 as a benchmark, run the way seeds/000 runs it where that applies:
`[numactl -l] IMB-MPI1 -msglog A:B | -msglen FILE -npmin NP -iter N -time T [-mem G]
[-off_cache C] <Collective>`, scored on IMB's t_max per size exactly as the kernel's.

A non-blocking collective (iallreduce, ...) runs IMB-NBC, from the same folder, the same way:
`IMB-NBC ... Iallreduce`; its table's t_ovrl, t_pure, t_CPU and overlap columns are kept per size
(t_pure stands as t_max, t_min and t_avg: IMB-NBC prints the columns of one rank, the one with
the largest t_ovrl).

IMB is the site's (a module, a path, --imb-dir); autotune never ships it. IMB does not say
where its ranks ran nor shuffle its sizes: a launch's landing is then not checked, and sizes run
in ascending order (launch-to-launch interleaving with the default is what handles drift).
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
from pathlib import Path

from ..errors import BenchmarkOutputError, EnvironmentProblem, InputError
from ..files import autotune_home
from ..collectives import NbcTiming, SizeTiming, is_nonblocking
from ._base import Benchmark, BenchmarkOutput, BenchmarkRequest, check_timing
from ._imb_output import ImbRow, parse_imb_output

IMB_NAMES = {"allreduce": "Allreduce", "allgather": "Allgather", "alltoall": "Alltoall",
             "bcast": "Bcast", "reduce": "Reduce",
             # IMB-NBC
             "iallreduce": "Iallreduce", "iallgather": "Iallgather", "ialltoall": "Ialltoall",
             "ibcast": "Ibcast", "ireduce": "Ireduce"}
# -iter caps the repetitions of a size; IMB cuts them further above 64 KiB by volume on its own.
# -time is NOT a time per size: IMB aims each sample at up to -time seconds and stops the whole
# run ("time-out.") once the total exceeds -time x sizes. Measured here (allreduce, 2 ranks):
# -time at the time per size (0.02 s) timed out at 4 KiB in most runs, and -iter_policy off
# ignores the volume cut (10000 repetitions at 64 KiB). So the repetitions are fitted to the
# time per size (about 2 us a call at small sizes: 0.02 s -> 10,000), and -time is only a
# generous safety bound; the launch's own deadline still applies.
SECONDS_PER_CALL = 2e-6
# IMB-NBC runs every repetition twice (the _pure loop, then the overlapped one with its CPU load)
# with a barrier after each: about 5 calls' time per repetition
NBC_CALLS_PER_REPETITION = 5
ITER_RANGE = (100, 100_000)
MIN_TIME_LIMIT = 1.0
OFF_CACHE_RE = r"-?\d{1,6}(,\d{1,4})?"


def iterations(time_per_size: float, nbc: bool = False) -> tuple[int, float]:
    """IMB's -iter (the most repetitions of a size) and -time (seconds) for a time per size:
    the repetitions fitted to it at SECONDS_PER_CALL, -time a generous bound (see above). The C
    benchmark takes the same two, so that both run as many repetitions of every size."""
    per_repetition = SECONDS_PER_CALL * (NBC_CALLS_PER_REPETITION if nbc else 1)
    iters = min(ITER_RANGE[1], max(ITER_RANGE[0], round(time_per_size / per_repetition)))
    return iters, max(MIN_TIME_LIMIT, 10 * time_per_size)


def _msglog(sizes: tuple[int, ...]) -> tuple[int, int] | None:
    """(a, b) when the sizes are exactly 2^a..2^b, every power in between (IMB's -msglog)."""
    if not sizes or any(s <= 0 or s & (s - 1) for s in sizes):
        return None
    logs = sorted(int(math.log2(s)) for s in sizes)
    return (logs[0], logs[-1]) if logs == list(range(logs[0], logs[-1] + 1)) else None


class ImbBenchmark(Benchmark):
    name = "imb"

    def __init__(self, imb_dir: str | None = None, *, mem_gb: float | None = None,
                 off_cache: str | None = None, numactl: bool = False,
                 msglen_dir: Path | None = None, nbc: bool = False) -> None:
        import re

        if mem_gb is not None and not (math.isfinite(mem_gb) and 0 < mem_gb <= 4096):
            raise InputError(f"--imb-mem {mem_gb}: give GB per process, e.g. 2.3")
        if off_cache is not None and not re.fullmatch(OFF_CACHE_RE, off_cache):
            raise InputError(f"--imb-off-cache {off_cache!r}: give CACHE_MB[,LINE_BYTES], "
                             "e.g. 39,64 (or -1 for IMB's default)")
        self.imb_dir = imb_dir
        self.mem_gb = mem_gb
        self.off_cache = off_cache
        self.numactl = numactl
        self._msglen_dir = msglen_dir
        self.nbc = nbc  # IMB-NBC, for the non-blocking collectives
        self.program_name = "IMB-NBC" if nbc else "IMB-MPI1"
        self.executable = self._find()

    def _find(self) -> str:
        if self.imb_dir:
            return str(Path(self.imb_dir).expanduser().resolve() / self.program_name)
        return shutil.which(self.program_name) or self.program_name

    def check(self) -> None:
        path, name = Path(self.executable), self.program_name
        if not path.is_absolute():
            raise EnvironmentProblem(f"{name} not found on PATH: give --imb-dir DIR (the folder "
                                     f"holding {name}; the same path on every node)")
        if not path.is_file() or not os.access(path, os.X_OK):
            raise EnvironmentProblem(f"{name} not found or not executable: {path}")
        if self.numactl and not shutil.which("numactl"):
            raise EnvironmentProblem("--numactl: numactl not found on PATH "
                                     "(apt-get install numactl)")

    def describe(self) -> str:
        return f"{self.program_name} ({self.executable})"

    def times(self, collective: str) -> bool:
        return collective in IMB_NAMES and is_nonblocking(collective) == self.nbc

    def program(self, request: BenchmarkRequest) -> tuple[str, ...]:
        if not self.times(request.collective):
            raise InputError(f"{self.program_name} has no benchmark for {request.collective}")
        argv = ["numactl", "-l"] if self.numactl else []
        argv.append(self.executable)
        span = _msglog(request.sizes)
        if span is not None:
            argv += ["-msglog", f"{span[0]}:{span[1]}"]
        else:
            argv += ["-msglen", str(self._msglen_file(request.sizes))]
        iters, limit = iterations(request.time_per_size, self.nbc)
        argv += ["-npmin", str(request.ranks), "-iter", str(iters), "-time", f"{limit:g}"]
        if self.mem_gb is not None:
            argv += ["-mem", f"{self.mem_gb:g}"]
        if self.off_cache is not None:
            argv += ["-off_cache", self.off_cache]
        argv.append(IMB_NAMES[request.collective])
        return tuple(argv)

    def _msglen_file(self, sizes: tuple[int, ...]) -> Path:
        """IMB reads arbitrary sizes from a file (-msglen); one file per size list, under
        AUTOTUNE_HOME (shared with the nodes where the home is)."""
        folder = self._msglen_dir or autotune_home() / "imb"
        text = "".join(f"{s}\n" for s in sorted(sizes))
        path = folder / f"msglen-{hashlib.sha256(text.encode()).hexdigest()[:12]}.txt"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
        except OSError as exc:  # the launch cannot be built: the machine's fault, not the config's
            raise EnvironmentProblem(f"cannot write IMB's size list {path}: "
                                     f"{exc.strerror or exc}") from None
        return path

    def parse(self, stdout: str, request: BenchmarkRequest) -> BenchmarkOutput:
        """IMB's table of this collective at the launch's rank count; every requested size once.
        IMB-NBC's table: t_pure is the time of the collective alone, the other columns go
        with it (SizeTiming.nbc)."""
        output = parse_imb_output(stdout)  # ImbOutputError is a BenchmarkOutputError
        table = output.table(IMB_NAMES[request.collective], request.ranks)
        rows = {row.bytes: row for row in table.rows}
        timings = {}
        for size in request.sizes:
            row = rows.get(size)
            if row is None:
                raise BenchmarkOutputError(f"IMB output truncated: no result for {size} B "
                                           f"({len(timings)}/{len(request.sizes)} sizes)")
            if row.failure:
                raise BenchmarkOutputError(f"IMB: {size} B: {row.failure}")
            if self.nbc:
                timings[size] = check_timing(self._nbc_timing(row, size))
                continue
            values = (row.t_max_us, row.t_min_us, row.t_avg_us)
            if any(v is None or not math.isfinite(v) or v <= 0 for v in values):
                raise BenchmarkOutputError(f"IMB: {size} B: no positive t_min/t_max/t_avg")
            timings[size] = check_timing(SizeTiming(  # the kernel's plausibility bounds too
                size=size, iters=max(1, row.repetitions), t_max_us=row.t_max_us,
                t_min_us=row.t_min_us, t_avg_us=row.t_avg_us))
        name = self.program_name
        return BenchmarkOutput(ranks=request.ranks, timings=timings, mpi_library=name + " "
                               + output.version if output.version else name)

    @staticmethod
    def _nbc_timing(row: ImbRow, size: int) -> SizeTiming:
        """One IMB-NBC row: its four columns, IMB's own overlap as printed."""
        values = (row.t_pure_us, row.t_ovrl_us, row.t_cpu_us, row.overlap_pct)
        if any(v is None for v in values) or not row.t_pure_us > 0 or not row.t_ovrl_us > 0:
            raise BenchmarkOutputError(f"IMB-NBC: {size} B: no positive t_ovrl/t_pure, or no "
                                       "t_CPU/overlap column")
        return SizeTiming(size=size, iters=max(1, row.repetitions), t_max_us=row.t_pure_us,
                          t_min_us=row.t_pure_us, t_avg_us=row.t_pure_us,
                          nbc=NbcTiming(t_pure_us=row.t_pure_us, t_ovrl_us=row.t_ovrl_us,
                                        t_cpu_us=row.t_cpu_us, overlap_pct=row.overlap_pct))
