"""What a launcher is: it turns a LaunchSpec into argv + env; an executor runs that argv.

The launcher knows nothing about Optuna; the controller knows nothing about which launcher runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one benchmark job, with no shell involved."""

    nodes: int
    ppn: int
    program: tuple[str, ...]  # the benchmark's own argv (python -m ... or IMB-MPI1 ...)
    env: tuple[tuple[str, str], ...] = ()  # variables every rank must see (UCX_*, ...)
    mca: tuple[tuple[str, str], ...] = ()  # Open MPI MCA parameters
    mpirun_args: tuple[str, ...] = ()  # mapping/binding options from the configuration
    oversubscribe: bool = False
    # The configuration as data, carried down to where argv is built, so an executor that does
    # not run mpirun (a recorded grid, a test) can serve the launch without parsing argv.
    params: tuple[tuple[str, object], ...] = ()
    is_default: bool = False  # the reference launch: the untuned stack
    collective: str = ""
    sizes: tuple[int, ...] = ()

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn


@dataclass(frozen=True)
class Command:
    """The exact command a launcher built: recorded with each trial so it can be rerun."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()  # added to the launcher process's environment
    hosts: tuple[str, ...] = ()
    spec: LaunchSpec | None = None  # what it was built from (configuration, sizes, default or not)


@dataclass(frozen=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: int | None  # None when killed on timeout
    stdout: str
    stderr: str
    seconds: float
    started: float  # unix time
    timed_out: bool = False
    output_truncated: bool = False
    extra: dict[str, object] = field(default_factory=dict)

    def stderr_tail(self, head: int = 10, tail: int = 15) -> str:
        """First and last lines of stderr: MPI puts the cause first and the abort trail last."""
        lines = self.stderr.strip().splitlines()
        if len(lines) <= head + tail:
            return "\n".join(lines)
        return "\n".join([*lines[:head], f"... ({len(lines) - head - tail} lines) ...", *lines[-tail:]])


class Launcher(Protocol):
    """Builds commands for one kind of allocation (this machine, a hostfile, Slurm, Ray)."""

    name: str

    def hosts(self) -> tuple[str, ...]:
        """Hosts this launcher can place ranks on."""
        ...

    def command(self, spec: LaunchSpec) -> Command:
        """The argv and environment that run `spec`; never a shell string."""
        ...
