"""Checks of a start request against the allocation, shared by `preflight` (before a background
start detaches) and `prepare_session` (with the lock held): one-line errors, nothing started;
what the nodes are (probe_nodes), and what a user should know about the space before the study
(nbc_notes, and the trial the UCX liveness check launches)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .benchmarks import is_nonblocking
from .errors import EnvironmentProblem, InputError
from .launch import LaunchSpec, mpi4py_for_mpich
from .measure import classify_failure
from .probe import Capabilities, HostInfo, parse_node_probe
from .space import SearchSpace, TrialContext, load_space

if TYPE_CHECKING:
    from .launch import NodePool
    from .options import StartOptions


def check_site_settings(options: StartOptions, space: SearchSpace) -> None:
    """A site setting on a knob the space tunes would change the reference under the tuner."""
    tuned = {p.name for p in space.parameters}
    clash = sorted(name for name, _ in options.launcher_mca if name in tuned)
    if clash:
        raise InputError(f"--launcher-mca {clash[0]}: the space tunes it (the untuned stack is "
                         "the reference); remove it, or use a space without that knob")


def check_kernel_mpi(benchmark_name: str, caps: Capabilities) -> None:
    """The kernel under MPICH needs an mpi4py built against MPICH: the environment's links Open
    MPI, and its ranks would each start alone (or crash) under MPICH's mpiexec."""
    if benchmark_name == "mpi4py" and caps.mpi_family == "mpich" and mpi4py_for_mpich() is None:
        raise EnvironmentProblem(
            f"the mpi4py kernel under {caps.mpi} needs mpi4py built against MPICH: bash "
            "scripts/install.sh --mpich builds it in .venv/mpi4py-mpich, or build it yourself "
            "(MPI4PY_BUILD_MPICC=mpicc.mpich pip install --no-binary mpi4py --no-cache-dir "
            "--target DIR mpi4py) and set AUTOTUNE_MPI4PY_MPICH=DIR")


def check_host_count(options: StartOptions, hosts: tuple[str, ...]) -> None:
    if options.nodes > len(hosts):
        raise EnvironmentProblem(f"--nodes {options.nodes} but only {len(hosts)} host(s) "
                                 f"are available ({', '.join(hosts)}); use --hostfile, a Slurm "
                                 "allocation or a Ray cluster")


def check_cores(options: StartOptions, ppn: int, host: HostInfo) -> None:
    if ppn > host.cores and not options.oversubscribe:
        raise EnvironmentProblem(f"--ppn {ppn} exceeds the {host.cores} usable cores of "
                                 f"{host.host}; oversubscribed ranks give meaningless timings "
                                 "(--oversubscribe to do it anyway)")


NODE_PROBE_TIMEOUT = 180.0


def probe_nodes(pool: NodePool, family: str | None = None) -> tuple[Capabilities, HostInfo]:
    """MPI, UCX, NUMA layout, CPU and cores as the nodes see them, probed on the first node of a
    group (`python -m autotune.probe`, unbound, through the same launcher as the trials): the
    machine running autotune may be a login node or a laptop with nothing in common with them.
    The nodes of an allocation are taken to be alike. `family` is the MPI the study runs (the
    nodes may have both)."""
    group = pool.acquire()
    try:
        which = ("--family", family) if family else ()
        spec = LaunchSpec(nodes=1, ppn=1, program=(sys.executable, "-m", "autotune.probe", *which),
                          mpirun_args=("--bind-to", "none"))
        result = group.run(group.command(spec), NODE_PROBE_TIMEOUT)
    finally:
        pool.release(group)
    where = group.hosts()[0]
    failure = classify_failure(result)
    if failure is not None:
        tail = f"\n{failure.stderr_tail}" if failure.stderr_tail else ""
        hint = {"infrastructure": "is it up, and reachable from here?",
                "timeout": "it did not answer in time"}.get(
            failure.reason, f"is autotune installed there, at {sys.executable}?")
        raise EnvironmentProblem(f"cannot probe node {where} ({failure}): {hint}{tail}")
    try:
        return parse_node_probe(result.stdout)
    except ValueError as exc:
        raise EnvironmentProblem(f"cannot probe node {where}: {exc}") from None


def nbc_notes(collective: str, space: SearchSpace, ctx: TrialContext,
              caps: Capabilities) -> list[str]:
    """What a user tuning a non-blocking collective on Open MPI should know about the space:
    its algorithms are libnbc's (coll_tuned has none), in the openmpi-libnbc space."""
    if not is_nonblocking(collective) or caps.mpi_family != "openmpi" or any(
            p.name.startswith("coll_libnbc_") for p in space.for_context(ctx)):
        return []
    if not load_space("openmpi-libnbc").for_context(ctx):  # ialltoall: no libnbc knob in 4.1
        return []
    return [f"{collective} runs in Open MPI's coll_libnbc, whose algorithms this space does not "
            "search (coll_tuned's do not apply to non-blocking collectives): add them with "
            "--space openmpi-ucx+openmpi-libnbc (docs/nbc.md)"]


def ucx_trial_params(space: SearchSpace, ctx: TrialContext,
                     default_params: dict[str, Any]) -> dict[str, Any] | None:
    """The default configuration as a trial that runs pml ucx would (the default itself where
    pml ucx is in force without a setting), or None when the space searches no UCX knob: the
    UCX liveness check is about trials that run pml ucx, not about the untuned stack."""
    params = dict(default_params)
    pml = next((p for p in space.for_context(ctx) if p.name == "pml"), None)
    if pml is not None and "ucx" in pml.choices:
        params["pml"] = "ucx"
    active = [p for p in space.for_context(ctx) if p.name.startswith("UCX_") and p.active(params)]
    if not active:
        return None
    for p in active:
        params.setdefault(p.name, p.default)
    return params
