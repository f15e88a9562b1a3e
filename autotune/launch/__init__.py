"""Launchers build argv for one kind of allocation; `run_command` executes it. Which launcher a
run uses, and building its node pool, is the registry in _select (BACKENDS).

Modules: _base (Launcher, LaunchSpec, Command, RunResult), _select (registry + auto choice),
_local (this machine: Open MPI or MPICH), _hostlist (hostfile, Slurm: mpirun or srun), _hosts
(host lists), _groups (node groups and pools), _ray (Ray cluster; imported only when used),
_executor (runs argv without a shell, kills the whole session).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._base import Command, Launcher, LaunchSpec, RunResult
from ._executor import run_command
from ._groups import NodeGroup, NodePool, StaticGroup, StaticPool, SubsetLauncher
from ._hostlist import HostListLauncher
from ._hosts import expand_nodelist, read_hostfile, slurm_end_time, slurm_hosts
from ._local import LocalLauncher, mpi4py_for_mpich
from ._select import (BACKENDS, Backend, auto_help, LaunchOptions, backend, check_launch_tool, check_site_mca,
                      make_launcher,
                      make_pool, pick_launcher, ranks_per_node)
from ._replay import ReplayExecutor, space_from_grid

if TYPE_CHECKING:
    from ._ray import RayPool


def __getattr__(name: str):
    if name == "RayPool":  # importing Ray takes seconds: only for a run on a Ray cluster
        from ._ray import RayPool

        return RayPool
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BACKENDS", "Backend", "auto_help", "Command", "HostListLauncher", "LaunchOptions", "LaunchSpec",
           "Launcher", "LocalLauncher", "mpi4py_for_mpich", "NodeGroup", "NodePool", "RayPool", "ReplayExecutor",
           "RunResult", "StaticGroup", "StaticPool", "SubsetLauncher", "backend",
           "check_launch_tool", "check_site_mca", "expand_nodelist", "make_launcher",
           "make_pool", "pick_launcher", "ranks_per_node", "read_hostfile", "run_command",
           "slurm_end_time", "slurm_hosts", "space_from_grid"]
