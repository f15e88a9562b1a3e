"""Replay: serve launches from a recorded grid instead of running them, so any strategy can be
compared on the same real measurements many times, for free. The controller, strategy, pruner and
confirmation run unchanged on top; only the executor (and the space, read from the grid) differ.

A default launch draws one pass of the grid (seeded); the candidate launches paired with it are
served from the same pass, since a pass is the unit of time-correlated noise. A candidate the
current pass lacks (a grid recorded with a default every few configurations: each group is a
pass) is served from one of its own passes, at the level of the current default: its times are
multiplied, size by size, by the current default's over the default of its own pass, so the
controller's ratio to the current default is the ratio it had to the default measured next to
it. A configuration the grid lacks fails like a configuration MPI refuses: never launched again,
never counted as cost.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from ..space import UNSET, Parameter, SearchSpace
from ..storage import Config, Grid, config_key
from ._base import Command, RunResult

PREFIX = "AUTOTUNE "  # the mpi4py kernel's record format, read by its own parser
NOT_IN_GRID = "replay: configuration not in the grid (MPI_Init failed, as for a refused config)"


@dataclass
class ReplayCost:
    launches: int = 0  # served launches, candidate and default
    default_launches: int = 0
    size_launches: int = 0  # sizes measured, summed over launches


class ReplayExecutor:
    """Executor (command, timeout) -> RunResult over a grid; counts what a real run would cost."""

    def __init__(self, grid: Grid, seed: int) -> None:
        self.grid = grid
        self.rng = random.Random(seed)
        self.current: int | None = None  # the pass of the latest default launch
        self.cost = ReplayCost()

    def __call__(self, command: Command, timeout: float) -> RunResult:
        spec = command.spec
        assert spec is not None, "replay needs the launch's configuration (Command.spec)"
        config = config_key(dict(spec.params))
        sizes = spec.sizes
        passes = [p for p, measured in self.grid.t_us.get(config, {}).items()
                  if all(s in measured for s in sizes)]
        if not passes:
            return RunResult(argv=command.argv, returncode=1, stdout="", stderr=NOT_IN_GRID,
                             seconds=0.0, started=0.0)
        scale: dict[int, float] = {}
        if spec.is_default or self.current is None:
            self.current = self.rng.choice(sorted(passes))
            pass_ = self.current
        elif self.current in passes:
            pass_ = self.current
        else:  # another pass's launch, at the current default's level
            pass_ = self.rng.choice(sorted(passes))
            default = self.grid.t_us.get(self.grid.default, {})
            here, there = default.get(self.current, {}), default.get(pass_, {})
            scale = {s: here[s] / there[s] for s in sizes if s in here and s in there}
        measured = {s: t * scale.get(s, 1.0) for s, t in self.grid.t_us[config][pass_].items()}
        self.cost.launches += 1
        self.cost.default_launches += int(spec.is_default)
        self.cost.size_launches += len(sizes)
        started = self.grid.started.get((config, pass_), 0.0)
        lines = [PREFIX + json.dumps({"kind": "start", "time": started, "ranks": spec.ranks,
                                      "hosts": list(command.hosts) or ["replay"],
                                      "mpi_library": "replay"})]
        for size in sizes:
            t = measured[size]
            lines.append(PREFIX + json.dumps({"kind": "size", "size": size, "iters": 1,
                                              "t_max_us": t, "t_min_us": t, "t_avg_us": t}))
        lines.append(PREFIX + json.dumps({"kind": "done", "sizes": len(sizes)}))
        return RunResult(argv=command.argv, returncode=0, stdout="\n".join(lines) + "\n",
                         stderr="", seconds=0.0, started=started)


def space_from_grid(grid: Grid, name: str = "replay") -> SearchSpace:
    """The space of a replay: one knob per grid column, its choices the values measured ("unset"
    where rows leave it empty, the default). A knob set only under some values of an earlier
    knob (UCX_* only under pml=ucx) is asked for only then, as in the shipped spaces."""
    choices = grid.choices()
    params = []
    for i, knob in enumerate(grid.knobs):
        params.append(Parameter(name=knob, apply="env" if knob.isupper() else "mca",
                                type="categorical", default=UNSET, choices=choices[knob],
                                when=_condition(grid, knob, grid.knobs[:i], choices)))
    return SearchSpace(name=name, description=f"replayed grid of {len(grid.t_us)} configurations",
                       stack="any", fixed=(), parameters=tuple(params))


def _condition(grid: Grid, knob: str, earlier: tuple[str, ...],
               choices: dict[str, tuple[str, ...]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    for parent in earlier:
        under = {dict(c).get(parent, UNSET) for c in grid.t_us if knob in dict(c)}
        if under and set(under) < set(choices[parent]):
            return ((parent, tuple(v for v in choices[parent] if v in under)),)
    return ()


def configs_of(grid: Grid) -> list[Config]:
    return sorted(grid.t_us)
