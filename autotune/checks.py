"""Checks of a start request against the allocation, shared by `preflight` (before a background
start detaches) and `prepare_session` (with the lock held): one-line errors, nothing started."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import EnvironmentProblem, InputError

if TYPE_CHECKING:
    from .probe import HostInfo
    from .options import StartOptions
    from .space import SearchSpace


def check_site_settings(options: StartOptions, space: SearchSpace) -> None:
    """A site setting on a knob the space tunes would change the reference under the tuner."""
    tuned = {p.name for p in space.parameters}
    clash = sorted(name for name, _ in options.launcher_mca if name in tuned)
    if clash:
        raise InputError(f"--launcher-mca {clash[0]}: the space tunes it (the untuned stack is "
                         "the reference); remove it, or use a space without that knob")


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
