"""A private Slurm cluster on this machine (launchers/private-slurm.sh: Debian's slurmctld, slurmd
and munged, one node, everything in one folder), for the tests and the dispatch benchmark."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "launchers" / "private-slurm.sh"


class SlurmMissing(RuntimeError):
    pass


def ours(pattern: str) -> list[str]:
    """`pgrep -af pattern`, without the pgrep itself."""
    out = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


@contextlib.contextmanager
def private_cluster(where: Path) -> Iterator[dict[str, str]]:
    """Start the cluster in `where`; yield an environment that reaches it (SLURM_CONF); stop it
    after, leaving no daemon, job or folder behind."""
    if not shutil.which("slurmctld", path="/usr/sbin:/usr/bin"):
        raise SlurmMissing("slurm-wlm is not installed: bash scripts/install.sh --test installs it")
    started = subprocess.run([str(SCRIPT), "start", str(where)], capture_output=True, text=True,
                             timeout=120)
    if started.returncode:
        raise RuntimeError(f"private Slurm cluster did not start: {started.stderr.strip()}")
    try:
        yield dict(os.environ, SLURM_CONF=str(where / "slurm.conf"))
    finally:
        stopped = subprocess.run([str(SCRIPT), "stop", str(where)], capture_output=True,
                                 text=True, timeout=120)
        if stopped.returncode:
            raise RuntimeError(f"private Slurm cluster did not stop: {stopped.stderr.strip()}")


def steps_launched(where: Path) -> int:
    """Job steps slurmd started (srun's launches), from its log."""
    return sum(log.read_text().count("launch task StepId=")
               for log in (where / "log").glob("slurmd-*.log"))
