"""The single-host launcher: every rank on this machine, argv by MPI family.

- Open MPI: `mpirun -np N`, MCA parameters as --mca, variables as -x;
- MPICH and Cray MPICH under Hydra: `mpiexec -n N -ppn N` (Debian's `mpiexec.mpich`), every
  variable as -genv, no MCA; the ranks import the mpi4py built against MPICH (hydra_argv and
  mpich_env serve the host-list launcher too).

Building argv needs no MPI installed: without the program on PATH the bare name is used; the
session refuses up front (check_launch_tool) and the executor reports a missing program as an
infrastructure failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

from ..errors import EnvironmentProblem
from ._base import Command, LaunchSpec

FAMILIES = ("openmpi", "mpich")  # any other family is launched the Open MPI way, as before


MPI4PY_FOR_MPICH_ENV = "AUTOTUNE_MPI4PY_MPICH"


def launch_program(family: str) -> str:
    """The command that starts ranks for an MPI family: mpirun, or MPICH's Hydra mpiexec, which
    Debian names mpiexec.mpich beside Open MPI (whose mpiexec keeps the plain name)."""
    if family != "mpich":
        return "mpirun"
    return "mpiexec.mpich" if shutil.which("mpiexec.mpich") else "mpiexec"


def mpi4py_for_mpich() -> Path | None:
    """The folder of an mpi4py built against MPICH, for the kernel's ranks under MPICH: the
    environment's own mpi4py is built against Open MPI (one extension module links one MPI),
    so a second build lives in a folder of its own that MPICH's ranks import first.
    AUTOTUNE_MPI4PY_MPICH names it; else `mpi4py-mpich` in the environment (install.sh
    --mpich builds it there). None when there is none."""
    given = os.environ.get(MPI4PY_FOR_MPICH_ENV, "").strip()
    folder = Path(given) if given else Path(sys.prefix) / "mpi4py-mpich"
    return folder if (folder / "mpi4py").is_dir() else None


def mpich_env() -> tuple[tuple[str, str], ...]:
    """The environment MPICH's ranks need: PYTHONPATH with the mpi4py built against MPICH first
    (Hydra passes mpiexec's environment on to every rank, on every host)."""
    folder = mpi4py_for_mpich()
    if folder is None:
        return ()
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return (("PYTHONPATH", path),)


def hydra_argv(program: str, spec: LaunchSpec, hosts: tuple[str, ...] = ()) -> list[str]:
    """Hydra's mpiexec: `-n N -ppn P [-hosts h1,h2]`, every variable as -genv. How Hydra reaches
    the hosts and which interface it uses are the site's own Hydra settings (HYDRA_LAUNCHER_EXEC,
    HYDRA_IFACE, ... in the environment, which mpiexec inherits); MCA parameters do not exist."""
    if spec.mca:
        names = ", ".join(name for name, _ in spec.mca)
        raise EnvironmentProblem(f"MCA parameters ({names}) are Open MPI's; MPICH has none")
    argv = [program, "-n", str(spec.ranks), "-ppn", str(spec.ppn)]
    if hosts:
        argv += ["-hosts", ",".join(hosts)]
    for name, value in spec.env:
        argv += ["-genv", name, value]  # every rank sees it, whatever the launcher's env
    return [*argv, *spec.mpirun_args, *spec.program]


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
    """Runs every rank on this machine; `--nodes` must be 1. Named `local` for Open MPI and
    `mpich` for MPICH (the name is shown and recorded with each trial's node group)."""

    def __init__(self, mpirun: str | None = None, *, family: str = "openmpi",
                 mpiexec: str | None = None) -> None:
        self.family = "mpich" if family == "mpich" else "openmpi"
        self.name = "mpich" if self.family == "mpich" else "local"
        tool = launch_program(self.family)
        given = mpiexec if self.family == "mpich" else mpirun
        self.program = given or shutil.which(tool) or tool

    def hosts(self) -> tuple[str, ...]:
        return (socket.gethostname(),)

    def on_hosts(self, hosts: tuple[str, ...]) -> "LocalLauncher":
        return self  # one host: every group is this machine

    def command(self, spec: LaunchSpec) -> Command:
        if spec.nodes > 1:
            raise EnvironmentProblem(
                f"--nodes {spec.nodes} but the {self.name} launcher has 1 host ({self.hosts()[0]})")
        if self.family == "mpich":
            return Command(argv=tuple(hydra_argv(self.program, spec)), hosts=self.hosts(),
                           env=mpich_env())
        argv = [self.program, *mpirun_base_args(), "-np", str(spec.ranks), *spec_args(spec),
                *spec.program]
        return Command(argv=tuple(argv), hosts=self.hosts())
