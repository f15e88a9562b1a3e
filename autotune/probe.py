"""What this machine runs: MPI and UCX versions, CPU, cores. Called explicitly, never at import."""

from __future__ import annotations

import os
import platform
import re
import shutil
import socket
import subprocess
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class HostInfo:
    host: str
    cpu_model: str
    cores: int  # cores this process may use (affinity), what ranks can be bound to
    mpi: str  # e.g. "Open MPI 4.1.4"
    ucx: str  # e.g. "1.13.1", "" when ucx_info is absent
    python: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _output(argv: list[str]) -> str:
    if not shutil.which(argv[0]):
        return ""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def mpi_version() -> str:
    text = _output(["ompi_info", "--version"])
    match = re.search(r"Open MPI v?(\d+\.\d+[\w.]*)", text)
    if match:
        return f"Open MPI {match.group(1)}"
    text = _output(["mpirun", "--version"])
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first or "unknown"


def ucx_version() -> str:
    match = re.search(r"Version\s+(\d+\.\d+[\w.]*)", _output(["ucx_info", "-v"]))
    return match.group(1) if match else ""


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def probe_host() -> HostInfo:
    return HostInfo(host=socket.gethostname(), cpu_model=cpu_model(), cores=usable_cores(),
                    mpi=mpi_version(), ucx=ucx_version(), python=platform.python_version())
