"""Where the benchmark seconds went, and what the same question would have cost the manual way:
the manual staged sweep and the full grid of the same space, priced at this study's own
measured launch time (configurations x launches per configuration x mean launch seconds)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import optuna

from ..storage import BaselineLaunch, StoredConfirmation, StoredRules, StudyConfig, TrialRecord
from ._space import Count, count_full_grid, count_staged, rebuild_space, stage_names

if TYPE_CHECKING:
    from ..export import BestConfig


@dataclass(frozen=True)
class SecondsPart:
    label: str
    seconds: float
    launches: int
    estimated: bool = False  # not stored launch by launch: rounds x launches x mean launch time


@dataclass(frozen=True)
class SecondsData:
    """Benchmark wall seconds by purpose (launch time only: no controller or idle time)."""

    parts: tuple[SecondsPart, ...]
    mean_launch_seconds: float  # over the launches of completed trials
    launches_per_config: int  # a full measurement of one configuration

    @property
    def total(self) -> float:
        return sum(p.seconds for p in self.parts)


@dataclass(frozen=True)
class CostData:
    """What this search spent against what the staged sweep and the full grid would have."""

    nodes: int
    spent_seconds: float
    configs_measured: int  # distinct configurations launched by the search (default included)
    launches_per_config: int  # repetitions x size blocks
    repetitions: int
    mean_launch_seconds: float
    staged: Count
    grid: Count
    stages: tuple[tuple[str, ...], ...]
    exact: bool  # the space was rebuilt from its file (conditions known)
    note: str

    @property
    def spent_node_seconds(self) -> float:
        return self.spent_seconds * self.nodes

    def seconds_of(self, count: Count) -> float:
        return count.configs * self.launches_per_config * self.mean_launch_seconds

    @property
    def staged_seconds(self) -> float:
        return self.seconds_of(self.staged)

    @property
    def grid_seconds(self) -> float:
        return self.seconds_of(self.grid)


def launch_stats(records: Sequence[TrialRecord]) -> tuple[float, int]:
    """(mean seconds per launch, launches of one full measurement) over completed trials."""
    complete = [r for r in records if r.state == "COMPLETE" and r.measuring_launch_count > 0]
    launches = sum(r.measuring_launch_count for r in complete)
    mean = sum(r.measuring_seconds for r in complete) / launches if launches else 0.0
    per_config = (int(statistics.median(r.measuring_launch_count for r in complete))
                  if complete else 0)
    return mean, per_config


def seconds_data(records: Sequence[TrialRecord], baselines: Sequence[BaselineLaunch],
                 confirmation: StoredConfirmation | None, config: StudyConfig,
                 rules: StoredRules | None = None) -> SecondsData:
    mean, per_config = launch_stats(records)
    blocks = max(1, per_config // max(1, config.repetitions))

    def part(label: str, chosen: list[TrialRecord]) -> SecondsPart:
        return SecondsPart(label, sum(r.measuring_seconds for r in chosen),
                           sum(r.measuring_launch_count for r in chosen))

    candidates = [r for r in records if not r.is_default]
    default_trials = [r for r in records if r.is_default]
    parts = [part("full trials", [r for r in candidates if r.state == "COMPLETE"]),
             part("pruned trials", [r for r in candidates if r.state == "PRUNED"])]
    failed = part("failed trials", [r for r in candidates if r.state == "FAIL"])
    if failed.launches:
        parts.append(failed)
    checked = [r for r in candidates if r.check_launches]
    if checked:  # a search timed by IMB: the kernel checked each configuration's results
        parts.append(SecondsPart("result checks", sum(r.check_seconds for r in checked),
                                 sum(len(r.check_launches) for r in checked)))
    default_part = part("default", default_trials)
    parts.append(SecondsPart("default (trial 0 + interleaved)",
                             default_part.seconds + sum(b.seconds for b in baselines),
                             default_part.launches + len(baselines)))
    if confirmation is not None:
        # a round: per size block, one default launch then the candidate's launch
        launches = sum(c.rounds for c in confirmation.candidates) * blocks * 2
        parts.append(SecondsPart("confirmation", launches * mean, launches, estimated=True))
    if rules is not None and rules.seconds:  # the stage's wall time (its launches and little else)
        launches = sum(len(next(iter(v.round_us.values()), [])) for v in rules.variants)
        launches += 3 * max((c.rounds for c in (rules.vs_default,) if c), default=0)
        parts.append(SecondsPart("per-size rules", rules.seconds, launches))
    return SecondsData(parts=tuple(parts), mean_launch_seconds=mean,
                       launches_per_config=per_config)


def cost_data(study: optuna.Study, config: StudyConfig, records: Sequence[TrialRecord],
              seconds: SecondsData, best: BestConfig) -> CostData:
    space = rebuild_space(study, config, records)
    search_best = min((r for r in records if r.state == "COMPLETE" and r.value is not None),
                      key=lambda r: r.value, default=None)
    fixed = dict(search_best.params) if search_best else dict(best.params)
    launched = {tuple(sorted((k, str(v)) for k, v in r.params.items()))
                for r in records if r.launch_count > 0}
    return CostData(nodes=config.nodes, spent_seconds=seconds.total,
                    configs_measured=len(launched),
                    launches_per_config=seconds.launches_per_config,
                    repetitions=config.repetitions,
                    mean_launch_seconds=seconds.mean_launch_seconds,
                    staged=count_staged(space, fixed), grid=count_full_grid(space),
                    stages=stage_names(space), exact=space.exact, note=space.note)


def node_duration(seconds: float, unit: str = "node-") -> str:
    """`3.2 node-hours`: a duration in the unit a person reads at a glance."""
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:,.1f} {unit}days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:,.1f} {unit}hours"
    if seconds >= 120:
        return f"{seconds / 60:,.1f} {unit}minutes"
    return f"{seconds:,.1f} {unit}seconds"
