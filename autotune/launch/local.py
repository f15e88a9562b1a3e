"""Local launcher: `mpirun` on this machine only."""

from __future__ import annotations

import os
import shutil
import socket

from ..errors import EnvironmentProblem
from ._base import Command, LaunchSpec


def mpirun_base_args() -> list[str]:
    """Options every Open MPI launch needs here: root permission is explicit, never implied."""
    args = []
    if os.geteuid() == 0:
        args.append("--allow-run-as-root")
    return args


def spec_args(spec: LaunchSpec) -> list[str]:
    """Translate the configuration part of a spec into mpirun arguments (list, no quoting)."""
    args: list[str] = []
    if spec.oversubscribe:
        args.append("--oversubscribe")
    for name, value in spec.mca:
        args += ["--mca", name, value]
    for name, value in spec.env:
        args += ["-x", f"{name}={value}"]
    args += list(spec.mpirun_args)
    return args


class LocalLauncher:
    """Runs every rank on this machine; `--nodes` must be 1."""

    name = "local"

    def __init__(self, mpirun: str | None = None) -> None:
        self.mpirun = mpirun or shutil.which("mpirun") or ""

    def hosts(self) -> tuple[str, ...]:
        return (socket.gethostname(),)

    def on_hosts(self, hosts: tuple[str, ...]) -> "LocalLauncher":
        return self  # one host: every group is this machine

    def command(self, spec: LaunchSpec) -> Command:
        if not self.mpirun:
            raise EnvironmentProblem("mpirun not found on PATH: install Open MPI "
                                     "(apt-get install openmpi-bin libopenmpi-dev)")
        if spec.nodes > 1:
            raise EnvironmentProblem(
                f"--nodes {spec.nodes} but the local launcher has 1 host ({self.hosts()[0]})")
        argv = [self.mpirun, *mpirun_base_args(), "-np", str(spec.ranks), *spec_args(spec),
                *spec.program]
        return Command(argv=tuple(argv), hosts=self.hosts())
