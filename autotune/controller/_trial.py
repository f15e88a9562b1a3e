"""One trial: its launches (TrialLaunches), what they produced (TrialMeasurement), and the
record stored for it (trial_record)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import optuna

from .. import objective
from ..baseline import Placement
from ..errors import LaunchFailure
from ..events import Events, TrialOutcome
from ..measure import LaunchFailed, LaunchRecord, MeasurementPlan
from ..probe import HostInfo
from ..space import LaunchSettings
from ..storage import RESULT_CHECK, trial_attrs
from ..strategy import Strategy
from ._defaults import DefaultLaunches, group_broken


@dataclass
class TrialMeasurement:
    """What one trial's measurement produced, complete or not (the controller fills it)."""

    settings: LaunchSettings | None = None
    params: dict[str, Any] = field(default_factory=dict)
    is_default: bool = False
    records: list[LaunchRecord] = field(default_factory=list)
    paired_default: dict[int, list[float]] = field(default_factory=dict)
    baseline_ids: list[int] = field(default_factory=list)
    baseline_launches: int = 0
    pruned: bool = False
    failure: LaunchFailure | None = None
    overhead: float = 0.0
    placed: Placement | None = None
    asked_at: float = 0.0
    first_kernel: float | None = None  # unix time the first benchmark of the trial began

    def saw_kernel(self, record: LaunchRecord) -> None:
        if record.kernel_started is not None and (self.first_kernel is None
                                                  or record.kernel_started < self.first_kernel):
            self.first_kernel = record.kernel_started


def raw_from(records: list[LaunchRecord]) -> dict[int, list[float]]:
    raw: dict[int, list[float]] = {}
    for record in records:
        for size, t_us in record.t_max_us.items():
            raw.setdefault(size, []).append(t_us)
    return dict(sorted(raw.items()))


@dataclass
class TrialLaunches:
    """Runs one trial's launches: launch by launch, with the default launches due first; each
    launch scored against the default launch paired with it and reported; after each, the
    strategy says whether the trial goes on, is pruned, or is measured enough."""

    plan: MeasurementPlan
    launch_order: str
    defaults: DefaultLaunches
    strategy: Strategy
    events: Events
    weights: Mapping[int, float]
    infra_retries: int
    seed_of: Callable[[], int]

    def measure(self, trial: optuna.Trial, measured: TrialMeasurement) -> None:
        assert measured.settings is not None and measured.placed is not None
        placed = measured.placed
        planned_launches = self.plan.launches(self.launch_order)
        for planned in planned_launches:
            default_record = self.defaults.run_due(planned, placed, trial.number)
            if default_record is not None:
                measured.baseline_launches += 1
                measured.saw_kernel(default_record)
            paired = placed.baseline.latest[planned.block]  # the default launch nearest before
            record = self.launch(measured, lambda: placed.measurer.run_launch(
                measured.settings, planned, self.seed_of(), params=measured.params,
                is_default=measured.is_default))
            if record is None:
                return
            measured.saw_kernel(record)
            # where the benchmark does not check results (IMB), the measurer's checker (the
            # kernel) checks the configuration's, once, after its first launch
            if (planned.index == 0 and not measured.is_default and placed.measurer.checker
                    and self.launch(measured, lambda: placed.measurer.check_results(
                        measured.settings, self.seed_of(), params=measured.params)) is None):
                return
            placed.baseline.candidate_launched(planned.block, trial.number)
            self.events.launch_finished(record, len(planned_launches))
            for size in record.t_max_us:
                measured.paired_default.setdefault(size, []).append(paired.t_max_us[size])
            measured.baseline_ids.append(paired.id)
            t0 = time.perf_counter()
            launch_scores = {size: objective.log_ratio(t_us, paired.t_max_us[size])
                             for size, t_us in record.t_max_us.items()}
            score = objective.weighted_score(launch_scores, self.weights)
            trial.report(score, planned.index)
            self.strategy.launch_scored(trial.number, planned.block, score)
            # after the last launch pruning saves nothing: keep the complete measurement
            last = planned.index == len(planned_launches) - 1
            verdict = "continue" if last else self.strategy.after_launch(trial, measured.is_default)
            measured.pruned = verdict == "prune"
            measured.overhead += time.perf_counter() - t0
            if verdict != "continue":
                return

    def launch(self, measured: TrialMeasurement,
               run: Callable[[], LaunchRecord | None]) -> LaunchRecord | None:
        """One launch of the trial, kept in its records, retried while the launcher or a node
        failed (infrastructure, up to infra_retries); None when it failed the trial (any other
        reason: a crash, a wrong result, ...: `measured.failure` says which)."""
        assert measured.placed is not None
        for attempt in range(self.infra_retries + 1):
            try:
                record = run()
            except LaunchFailed as exc:
                measured.records.append(exc.record)
                if (exc.reason != "infrastructure" or attempt == self.infra_retries
                        or group_broken(measured.placed)):
                    measured.failure = exc
                    return None
                continue
            assert record is not None
            measured.records.append(record)
            return record
        return None


@dataclass(frozen=True)
class RunFacts:
    """What every trial of a run records besides its own measurement."""

    run_id: str
    host: HostInfo
    context_values: Mapping[str, Any]
    fingerprint: Mapping[str, Any]
    repetitions: int
    weights: Mapping[int, float]


def trial_record(outcome: TrialOutcome, measured: TrialMeasurement,
                 facts: RunFacts) -> dict[str, Any]:
    """Fill the outcome (state, value, counts) and return the trial's user attributes: what ran
    and what it gave."""
    raw = raw_from([r for r in measured.records if not r.failure])
    outcome.check_launches = sum(r.purpose == RESULT_CHECK for r in measured.records)
    outcome.launches = len(measured.records) - outcome.check_launches
    outcome.bench_seconds = sum(r.seconds for r in measured.records)
    outcome.sizes_measured = len(raw)
    outcome.baseline_launches = measured.baseline_launches
    group = measured.placed.group if measured.placed is not None else None
    common = dict(
        is_default=outcome.is_default, run_id=facts.run_id, host=facts.host.to_dict(),
        context=dict(facts.context_values), fingerprint=dict(facts.fingerprint),
        settings=measured.settings, raw_us=raw, default_us=measured.paired_default,
        baseline_ids=measured.baseline_ids, baseline_launches=measured.baseline_launches,
        launches=[r.to_dict() for r in measured.records], repetitions=facts.repetitions,
        bench_seconds=outcome.bench_seconds, controller_seconds=measured.overhead,
        nodes=group.hosts() if group else None, node_names=group.host_names() if group else None,
        node_group=f"{group.name}:{group.label}" if group else None,
        acquire_seconds=measured.placed.acquire_seconds if group else None,
        # ask -> the first benchmark of this trial running (its paired default launch, often)
        dispatch_seconds=(measured.first_kernel - measured.asked_at
                          if measured.first_kernel is not None else None))
    if measured.failure is not None:
        failure = measured.failure
        outcome.fail_reason = f"{failure.reason}: {failure.detail}"[:300]
        return trial_attrs(**common, failure=failure)
    scores = objective.paired_scores(raw, measured.paired_default)
    if measured.pruned:
        outcome.state = "PRUNED"
        partial = (objective.speedup(objective.weighted_score(scores, facts.weights))
                   if scores else None)
        return trial_attrs(**common, scores=scores, partial_speedup=partial)
    outcome.value = objective.weighted_score(scores, facts.weights)
    outcome.speedup = objective.speedup(outcome.value)
    outcome.state = "COMPLETE"
    return trial_attrs(**common, scores=scores, speedup=outcome.speedup)
