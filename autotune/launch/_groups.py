"""Node groups: the hosts one trial runs on. A trial holds its group for all its launches (the
paired default launches too, so a candidate and its reference always share nodes) and releases it
after. With `--parallel k` the allocation is cut into k disjoint groups, one per running trial.

A pool hands groups out. StaticPool cuts a fixed host list (this machine, a hostfile, a Slurm
allocation); the Ray pool (_ray.py) reserves a placement group per trial instead.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Protocol

from ..errors import InputError, NoNodes
from ._base import Command, LaunchSpec, RunResult
from ._executor import run_command


class NodeGroup(Protocol):
    """The nodes of one running trial; also a Launcher (hosts(), command()) for the Measurer."""

    name: str
    label: str  # short, stable name of the group, e.g. "g1" or a Ray placement group id

    def hosts(self) -> tuple[str, ...]: ...

    def host_names(self) -> tuple[str, ...]:
        """Names the ranks must report (socket.gethostname()) when they land on this group;
        empty when unknown (then the landing is not checked)."""
        ...

    def command(self, spec: LaunchSpec) -> Command: ...

    def run(self, command: Command, timeout: float) -> RunResult: ...


class NodePool(Protocol):
    name: str
    parallel: int

    def hosts(self) -> tuple[str, ...]:
        """Every host the pool may hand out (for notes and the study fingerprint)."""
        ...

    def host_names(self) -> tuple[str, ...]:
        """The same hosts by name (a Ray node's hostname where hosts() has its address)."""
        ...

    def acquire(self, timeout: float | None = None) -> NodeGroup: ...

    def release(self, group: NodeGroup) -> None: ...

    def cancel_all(self) -> None:
        """Kill every running launch: the run is stopping."""
        ...

    def close(self) -> None: ...


class SubsetLauncher(Protocol):
    name: str

    def hosts(self) -> tuple[str, ...]: ...

    def command(self, spec: LaunchSpec) -> Command: ...

    def on_hosts(self, hosts: tuple[str, ...]) -> "SubsetLauncher": ...


@dataclass
class StaticGroup:
    """A fixed slice of the allocation's hosts, run through a host-list launcher."""

    launcher: SubsetLauncher
    label: str
    cancel: threading.Event

    @property
    def name(self) -> str:
        return self.launcher.name

    def hosts(self) -> tuple[str, ...]:
        return self.launcher.hosts()

    def host_names(self) -> tuple[str, ...]:
        return ()

    def command(self, spec: LaunchSpec) -> Command:
        return self.launcher.command(spec)

    def run(self, command: Command, timeout: float) -> RunResult:
        return run_command(command, timeout, cancel=self.cancel)


class StaticPool:
    """k disjoint groups of `nodes` hosts each, cut from the front of the host list in order."""

    def __init__(self, launcher: SubsetLauncher, nodes: int, parallel: int = 1) -> None:
        hosts = launcher.hosts()
        if parallel < 1:
            raise InputError("--parallel must be at least 1")
        if nodes * parallel > len(hosts):
            what = ", ".join(hosts[:6]) + (", ..." if len(hosts) > 6 else "")
            raise InputError(f"--parallel {parallel} with --nodes {nodes} needs {nodes * parallel} "
                             f"hosts; the {launcher.name} launcher has {len(hosts)} ({what})")
        self.name = launcher.name
        self.parallel = parallel
        self._hosts = hosts[:nodes * parallel]  # the rest of the allocation stays unused
        self.cancel = threading.Event()
        self.groups = [StaticGroup(launcher.on_hosts(hosts[i * nodes:(i + 1) * nodes]),
                                   f"g{i + 1}", self.cancel) for i in range(parallel)]
        self._free: queue.Queue[StaticGroup] = queue.Queue()
        for group in self.groups:
            self._free.put(group)

    def hosts(self) -> tuple[str, ...]:
        return self._hosts

    def host_names(self) -> tuple[str, ...]:
        return self._hosts

    def acquire(self, timeout: float | None = None) -> StaticGroup:
        try:
            return self._free.get(timeout=timeout)
        except queue.Empty:
            raise NoNodes(f"no free node group after {timeout:.0f} s") from None

    def release(self, group: NodeGroup) -> None:
        assert isinstance(group, StaticGroup)
        self._free.put(group)

    def cancel_all(self) -> None:
        self.cancel.set()

    def close(self) -> None:
        pass
