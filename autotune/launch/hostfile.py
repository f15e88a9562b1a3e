"""mpirun over a list of hosts (a hostfile or a Slurm allocation): the first `--nodes` of them,
`--ppn` ranks each, placed node by node; site settings (remote agent, interfaces) via --mca."""

from __future__ import annotations

import shutil

from ..errors import EnvironmentProblem
from ._base import Command, LaunchSpec
from .local import mpirun_base_args, spec_args


class HostListLauncher:
    def __init__(self, name: str, hosts: list[str], site_mca: tuple[tuple[str, str], ...] = (),
                 mpirun: str | None = None) -> None:
        self.name = name
        self._hosts = tuple(hosts)
        self.site_mca = site_mca
        self.mpirun = mpirun or shutil.which("mpirun") or ""

    def hosts(self) -> tuple[str, ...]:
        return self._hosts

    def command(self, spec: LaunchSpec) -> Command:
        if not self.mpirun:
            raise EnvironmentProblem("mpirun not found on PATH")
        if spec.nodes > len(self._hosts):
            raise EnvironmentProblem(f"--nodes {spec.nodes} but the {self.name} launcher has "
                                     f"{len(self._hosts)} host(s): {', '.join(self._hosts)}")
        hosts = self._hosts[:spec.nodes]
        argv = [self.mpirun, *mpirun_base_args(), "-np", str(spec.ranks),
                "--host", ",".join(f"{h}:{spec.ppn}" for h in hosts)]
        for name, value in self.site_mca:
            argv += ["--mca", name, value]
        argv += [*spec_args(spec), *spec.program]
        return Command(argv=tuple(argv), hosts=hosts)
