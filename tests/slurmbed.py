"""A private Slurm cluster on this machine (launchers/private-slurm.sh: Debian's slurmctld, slurmd
and munged, everything in one folder; one node, or one per host of the multi-host bed), for the
tests and the dispatch benchmark."""

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


def bed_nodes(bed) -> dict[str, str]:
    """The script's environment for one Slurm node per host of a multi-host bed (tests/multihost.py):
    nodes n1, n2, ... at the bed's addresses, in its namespaces, the controller on its bridge."""
    nodes = " ".join(f"n{i}={addr}@{bed.tag}h{i}" for i, addr in enumerate(bed.hosts, 1))
    return {"PRIVATE_SLURM_NODES": nodes, "PRIVATE_SLURM_CONTROLLER": bed.gateway}


@contextlib.contextmanager
def private_cluster(where: Path, nodes: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """Start the cluster in `where` (one node, or `nodes`: bed_nodes); yield an environment that
    reaches it (SLURM_CONF); stop it after, leaving no daemon, job or folder behind."""
    if not shutil.which("slurmctld", path="/usr/sbin:/usr/bin"):
        raise SlurmMissing("slurm-wlm is not installed: bash scripts/install.sh --test installs it")
    started = subprocess.run([str(SCRIPT), "start", str(where)], capture_output=True, text=True,
                             timeout=120, env=dict(os.environ, **(nodes or {})))
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
