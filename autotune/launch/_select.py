"""Which launcher a run uses, and building it: one registry of backends by name.

Each backend says when `--launcher auto` picks it (an option given, an environment variable set,
or nothing else found) and why, which program must be on PATH to start ranks, and how to build
its node pool. `auto` takes an option the user gave before what the environment says, then this
machine: an option names the nodes explicitly, the environment only hints at them.

The options are read duck-typed (session.StartOptions, or anything with the same attributes).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..errors import EnvironmentProblem, InputError
from ..optionspec import OptionSpec, value_of
from ..probe import usable_cores
from ._groups import NodePool, StaticPool, SubsetLauncher
from ._hostlist import HostListLauncher
from ._hosts import read_hostfile, slurm_hosts
from ._local import LocalLauncher, launch_program

SITE_VALUE_RE = re.compile(r"[A-Za-z0-9_.,:/+*=@][A-Za-z0-9_.,:/+*=@-]{0,255}")
MCA_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,127}")
RESOURCE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
OPEN_MPI_HINT = "install Open MPI (apt-get install openmpi-bin libopenmpi-dev ucx-utils)"


class LaunchOptions(Protocol):
    """What the launcher choice reads from the start options."""

    launcher: str  # auto | a backend name
    nodes: int
    ppn: int | None
    parallel: int
    hostfile: str | None
    launcher_mca: tuple[tuple[str, str], ...]
    launch_with: str
    ray_address: str | None
    ray_resource: str
    ray_head_grace: float


class MpiFamily(Protocol):
    mpi_family: str  # "openmpi", "mpich", ... (probe.Capabilities)


@dataclass(frozen=True)
class Backend:
    """One way to place ranks: a fixed host list (`launcher`) or a pool of its own (`pool`)."""

    name: str
    # (program, install hint) that starts ranks, by MPI family; None: nothing to check here
    tool: Callable[[LaunchOptions, str], tuple[str, str] | None]
    launcher: Callable[[LaunchOptions, str], SubsetLauncher] | None = None
    # (options, why) -> (pool, note), for a backend that reserves nodes itself
    pool: Callable[[LaunchOptions, str], tuple[NodePool, str]] | None = None
    option: str = ""  # an option that picks it under auto ("--X given") and is for it only
    env: str = ""  # an environment variable that picks it under auto ("X is set")
    fallback: str = ""  # why auto picks it when nothing else is found
    ppn_from_here: bool = False  # this machine is one of the nodes: its cores are the --ppn
    methods: tuple[str, ...] = ("mpirun",)  # --launch-with values it accepts
    cli_options: tuple[OptionSpec, ...] = ()  # start's options of its own (`option` among them)

    @property
    def flag(self) -> str:
        return next(s.flag for s in self.cli_options if s.name == self.option)


def _mpi_tool(options: LaunchOptions, family: str) -> tuple[str, str]:
    """The program that starts ranks of this MPI family here: mpirun, or MPICH's mpiexec."""
    if family == "mpich":
        return launch_program(family), "install MPICH (scripts/install.sh --mpich on Debian)"
    return "mpirun", OPEN_MPI_HINT


def _slurm_tool(options: LaunchOptions, family: str) -> tuple[str, str]:
    if options.launch_with == "srun":
        return "srun", "--launch-with srun runs inside a Slurm allocation"
    return _mpi_tool(options, family)


def _local(options: LaunchOptions, family: str) -> SubsetLauncher:
    return LocalLauncher(family=family)


def _hostfile(options: LaunchOptions, family: str) -> SubsetLauncher:
    if not options.hostfile:
        raise InputError("--launcher hostfile needs --hostfile FILE")
    return HostListLauncher("hostfile", read_hostfile(options.hostfile), options.launcher_mca,
                            family=family)


def _slurm(options: LaunchOptions, family: str) -> SubsetLauncher:
    nodelist = os.environ.get("SLURM_JOB_NODELIST")
    if not nodelist:
        raise InputError("--launcher slurm outside a Slurm allocation (no SLURM_JOB_NODELIST)")
    return HostListLauncher("slurm", slurm_hosts(nodelist), options.launcher_mca,
                            method=options.launch_with, family=family)


def _ray_pool(options: LaunchOptions, why: str) -> tuple[NodePool, str]:
    if not RESOURCE_RE.fullmatch(options.ray_resource):
        raise InputError(f"--ray-resource {options.ray_resource!r}: not a resource name")
    from ._ray import RayPool  # imports Ray: only when a run uses it

    pool = RayPool(options.ray_address, options.nodes, options.parallel,
                   resource=options.ray_resource, site_mca=options.launcher_mca,
                   head_grace=options.ray_head_grace)
    return pool, f"launcher: ray ({why}; {pool.describe()})"


# In precedence order: where two environment variables are set, the first backend wins (inside a
# Slurm job the allocation is what counts, even with RAY_ADDRESS exported).
RAY_OPTIONS = (
    OptionSpec("--ray-address", "Ray cluster to run trials on (default: RAY_ADDRESS)",
               metavar="HOST:PORT"),
    OptionSpec("--ray-resource", "custom Ray resource that marks the MPI nodes",
               default="mpi_node", show_default=True),
    OptionSpec("--ray-head-grace", "seconds the Ray head may be unreachable before the run stops "
               "(study kept)", kind="float", default=30.0, low=1, show_default=True),
)
HOSTFILE = OptionSpec("--hostfile", "hostfile of the nodes to use, Open MPI's (host slots=N) or "
                      "MPICH's (host:N) form (the first --nodes of them)", kind="file")
BACKENDS: dict[str, Backend] = {b.name: b for b in (
    Backend("slurm", _slurm_tool, launcher=_slurm, env="SLURM_JOB_NODELIST", ppn_from_here=True,
            methods=("mpirun", "srun")),
    Backend("ray", lambda options, family: None, pool=_ray_pool, option="ray_address",
            env="RAY_ADDRESS", cli_options=RAY_OPTIONS),
    Backend("hostfile", _mpi_tool, launcher=_hostfile, option="hostfile",
            cli_options=(HOSTFILE,)),
    Backend("local", _mpi_tool, launcher=_local, fallback="no allocation found",
            ppn_from_here=True),
)}


def auto_help() -> str:
    """What `--launcher auto` picks, in its order (pick_launcher), for the option's help."""
    given = [f"{b.name} when {b.flag} is given" for b in BACKENDS.values() if b.option]
    found = [f"{b.name} when {b.env} is set" for b in BACKENDS.values() if b.env]
    last = next(b for b in BACKENDS.values() if b.fallback)
    return ", else ".join([*given, *found, f"{last.name} ({last.fallback})"])


def backend(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise InputError(f"unknown launcher {name!r} (use auto, {', '.join(BACKENDS)})") from None


def pick_launcher(options: LaunchOptions) -> tuple[str, str]:
    """(launcher name, why): --launcher, else the options given, else what the environment says
    (a Slurm allocation, RAY_ADDRESS), else this machine. Options that contradict it are refused
    rather than silently ignored."""
    given = [b for b in BACKENDS.values() if b.option and value_of(options, b.option)]
    if len(given) > 1:
        raise InputError(f"{' and '.join(b.flag for b in given)} name two different sets of "
                         "nodes: give one")
    if options.launcher != "auto":
        backend(options.launcher)
        for other in given:
            if other.name != options.launcher:
                raise InputError(f"{other.flag} is for --launcher {other.name}, not {options.launcher}")
        return options.launcher, "--launcher"
    if given:
        return given[0].name, f"{given[0].flag} given"
    for candidate in BACKENDS.values():
        if candidate.env and os.environ.get(candidate.env):
            return candidate.name, f"{candidate.env} is set"
    fallback = next(b for b in BACKENDS.values() if b.fallback)
    return fallback.name, fallback.fallback


def check_launch_tool(options: LaunchOptions, caps: MpiFamily, choice: str) -> None:
    """The command the chosen launcher starts ranks with must exist here (Ray: on the nodes)."""
    needed = backend(choice).tool(options, caps.mpi_family)
    if needed and not shutil.which(needed[0]):
        raise EnvironmentProblem(f"{needed[0]} not found on PATH: {needed[1]}")


def make_launcher(options: LaunchOptions, caps: MpiFamily, choice: str, why: str
                  ) -> tuple[SubsetLauncher, str]:
    """A launcher over a fixed host list, and a line saying what was picked and why."""
    chosen = backend(choice)
    if chosen.launcher is None:
        raise ValueError(f"the {choice} launcher has no fixed host list")
    launcher = chosen.launcher(options, caps.mpi_family)
    hosts = launcher.hosts()
    shown = ", ".join(hosts[:4]) + (f", ... ({len(hosts)} hosts)" if len(hosts) > 4 else "")
    method = f", {options.launch_with}" if len(chosen.methods) > 1 else ""
    return launcher, f"launcher: {launcher.name} ({why}; hosts {shown}{method})"


def check_site_mca(options: LaunchOptions) -> None:
    """--launcher-mca NAME=VALUE: names and values that cannot smuggle anything into argv."""
    for name, value in options.launcher_mca:
        if not MCA_NAME_RE.fullmatch(name) or not SITE_VALUE_RE.fullmatch(value):
            raise InputError(f"--launcher-mca {name}={value}: invalid name or value")


def make_pool(options: LaunchOptions, caps: MpiFamily, choice: str, why: str
              ) -> tuple[NodePool, str]:
    """The node pool trials run on (one group per running trial), and a line saying what was
    picked and why."""
    check_site_mca(options)
    chosen = backend(choice)
    if options.launch_with not in chosen.methods:
        able = [b.name for b in BACKENDS.values() if options.launch_with in b.methods]
        if not able:
            known = dict.fromkeys(m for b in BACKENDS.values() for m in b.methods)
            raise InputError(f"--launch-with {options.launch_with}: unknown launch method "
                             f"(use {' or '.join(known)})")
        raise InputError(f"--launch-with {options.launch_with} needs the {' or '.join(able)} "
                         f"launcher (this is {choice})")
    if chosen.pool is not None:
        return chosen.pool(options, why)
    launcher, note = make_launcher(options, caps, choice, why)
    return StaticPool(launcher, options.nodes, options.parallel), note


def ranks_per_node(options: LaunchOptions) -> int:
    """--ppn, else this machine's usable cores where this machine is one of the nodes (local, or
    the first node of a Slurm job). A hostfile or a Ray cluster may be reached from a login node
    or a laptop, whose cores say nothing about the nodes: there --ppn is required."""
    if options.ppn:
        return options.ppn
    choice, _ = pick_launcher(options)
    if not backend(choice).ppn_from_here:
        raise InputError(f"--ppn is required with the {choice} launcher: the ranks per node of the "
                         "nodes trials run on (this machine may not be one of them)")
    return usable_cores()
