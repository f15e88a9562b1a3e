"""The interleaved default: a launch of the untuned stack right before candidate launches of
the same size block, on the same nodes, so every candidate launch has a reference measured close
in time (latency levels move between launches and, for minutes, machine-wide)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import objective
from .errors import AutotuneError
from .measure import Measurer
from .storage import BaselineLaunch

if TYPE_CHECKING:
    from .launch import NodeGroup


class InterleavedDefault:
    """The latest launch of the default configuration for each size block of this run."""

    def __init__(self, every: int, weights: dict[int, float]) -> None:
        self.every = every
        self.weights = weights
        self.latest: dict[int, BaselineLaunch] = {}
        self.first: dict[int, BaselineLaunch] = {}
        self.since: dict[int, int] = {}
        self.paired: dict[int, set[int]] = {}  # trials paired with the latest launch of a block

    def due(self, block: int, trial: int | None = None) -> bool:
        """Whether a default launch must come before this candidate launch: none yet, `every`
        candidate launches since the last, or `trial` already paired with it (one default
        launch may serve several configurations, never two launches of one: their errors
        would be one and the same)."""
        return (block not in self.latest or self.since.get(block, 0) >= self.every
                or (trial is not None and trial in self.paired.get(block, ())))

    def drift(self, launch: BaselineLaunch) -> float:
        """Weighted log-ratio of this default launch to the run's first one of its block."""
        first = self.first.get(launch.block, launch)
        return objective.weighted_score(
            {s: objective.log_ratio(t, first.t_max_us[s]) for s, t in launch.t_max_us.items()},
            self.weights)

    def add(self, launch: BaselineLaunch) -> None:
        self.first.setdefault(launch.block, launch)
        self.latest[launch.block] = launch
        self.since[launch.block] = 0
        self.paired[launch.block] = set()

    def candidate_launched(self, block: int, trial: int | None = None) -> None:
        self.since[block] = self.since.get(block, 0) + 1
        if trial is not None:
            self.paired.setdefault(block, set()).add(trial)


@dataclass
class Placement:
    """Where one trial runs: its node group, a measurer bound to it, and the interleaved default
    launches made on those same nodes (a candidate is only ever paired with a default launch on
    its own nodes)."""

    group: NodeGroup
    measurer: Measurer
    baseline: InterleavedDefault
    acquire_seconds: float



class BaselineFailed(AutotuneError):
    """The default configuration itself cannot be measured: there is nothing to score against."""
