"""MPICH (and Cray MPICH under Hydra): `mpiexec` with -genv for every variable; no MCA params."""

from __future__ import annotations

import shutil
import socket

from ..errors import EnvironmentProblem
from ._base import Command, LaunchSpec


class MpichLauncher:
    name = "mpich"

    def __init__(self, mpiexec: str | None = None) -> None:
        self.mpiexec = mpiexec or shutil.which("mpiexec") or "mpiexec"

    def hosts(self) -> tuple[str, ...]:
        return (socket.gethostname(),)

    def on_hosts(self, hosts: tuple[str, ...]) -> "MpichLauncher":
        return self  # this machine only

    def command(self, spec: LaunchSpec) -> Command:
        if spec.mca:
            names = ", ".join(name for name, _ in spec.mca)
            raise EnvironmentProblem(f"MCA parameters ({names}) are Open MPI's; MPICH has none")
        if spec.nodes > 1:
            raise EnvironmentProblem(f"--nodes {spec.nodes}: the MPICH launcher runs on this host only")
        argv = [self.mpiexec, "-n", str(spec.ranks), "-ppn", str(spec.ppn)]
        for name, value in spec.env:
            argv += ["-genv", name, value]  # every rank sees it, whatever the launcher's env
        argv += [*spec.mpirun_args, *spec.program]
        return Command(argv=tuple(argv), hosts=self.hosts())
