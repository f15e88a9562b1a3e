"""The study loop: ask -> measure launch by launch -> report/prune -> score -> tell.

Noise handling: every trial is scored against a baseline (the default configuration measured with
the same plan) taken within `baseline_interval` seconds before it, because latency levels move
between launches and over minutes. Each baseline's drift against the run's first one is stored.
The controller is the single writer of the study; it knows neither mpirun nor the benchmark.
"""

from __future__ import annotations

import math
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna
from optuna.trial import TrialState

from . import objective
from .errors import AutotuneError, LaunchFailure
from .measure import LaunchFailed, LaunchRecord, MeasurementPlan, Measurer
from .probe import HostInfo
from .space import LaunchSettings, SearchSpace
from .storage import Baseline, StudyConfig, load_baselines, save_baseline


@dataclass
class TrialOutcome:
    number: int
    state: str  # COMPLETE, PRUNED or FAIL
    params: dict[str, Any]
    is_default: bool
    value: float | None = None
    speedup: float | None = None
    sizes_measured: int = 0
    launches: int = 0
    bench_seconds: float = 0.0
    controller_seconds: float = 0.0  # ask, suggest, report, prune checks, attrs and tell
    wall_seconds: float = 0.0
    baseline_id: int | None = None
    fail_reason: str = ""


@dataclass
class RunSummary:
    outcomes: list[TrialOutcome] = field(default_factory=list)
    baselines: list[Baseline] = field(default_factory=list)
    interrupted: bool = False


class Events(Protocol):
    """What a progress display hears; every method is optional in practice (see NullEvents)."""

    def trial_started(self, number: int, params: dict[str, Any], is_default: bool) -> None: ...
    def trial_finished(self, outcome: TrialOutcome, best: TrialOutcome | None) -> None: ...
    def baseline_started(self, baseline_id: int) -> None: ...
    def baseline_finished(self, baseline: Baseline) -> None: ...
    def launch_finished(self, record: LaunchRecord, total: int) -> None: ...


class NullEvents:
    def trial_started(self, number, params, is_default): pass
    def trial_finished(self, outcome, best): pass
    def baseline_started(self, baseline_id): pass
    def baseline_finished(self, baseline): pass
    def launch_finished(self, record, total): pass


def make_sampler(seed: int | None) -> optuna.samplers.BaseSampler:
    return optuna.samplers.TPESampler(multivariate=True, group=True, constant_liar=True, seed=seed)


def make_pruner(plan: MeasurementPlan, prune_after_launches: int,
                p_threshold: float) -> optuna.pruners.BasePruner:
    """Wilcoxon signed-rank test of this trial's (size, rep) scores against the best trial's.

    Pruning waits for `prune_after_launches` launches: one launch shares one latency level, so its
    sizes are not independent evidence; two launches already span two levels.
    """
    first_block = len(plan.blocks()[0])
    return optuna.pruners.WilcoxonPruner(p_threshold=p_threshold,
                                         n_startup_steps=max(2, first_block * prune_after_launches))


class Controller:
    def __init__(self, study: optuna.Study, space: SearchSpace, config: StudyConfig,
                 measurer: Measurer, host: HostInfo, *, baseline_interval: float = 120.0,
                 prune: bool = True, seed: int | None = None, events: Events | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.study = study
        self.space = space
        self.config = config
        self.measurer = measurer
        self.plan = measurer.plan
        self.host = host
        self.baseline_interval = baseline_interval
        self.prune = prune
        self.events = events or NullEvents()
        self.clock = clock
        self.rng = random.Random(seed)
        self.run_id = uuid.uuid4().hex[:12]
        self.baseline: Baseline | None = None
        self.first_baseline: Baseline | None = None
        self.stop_requested = False

    # ------------------------------------------------------------------ setup

    def enqueue_default(self) -> bool:
        """Queue the default configuration as a trial unless the study already has it."""
        for trial in self.study.get_trials(deepcopy=False):
            if trial.user_attrs.get("is_default") and trial.state in (
                    TrialState.COMPLETE, TrialState.WAITING, TrialState.RUNNING):
                return False
        self.study.enqueue_trial(self.space.defaults(self.config.collective),
                                 user_attrs={"is_default": True})
        return True

    # ------------------------------------------------------------------ loop

    def run(self, n_trials: int) -> RunSummary:
        summary = RunSummary()
        self.enqueue_default()
        try:
            for _ in range(n_trials):
                if self.stop_requested:
                    break
                if self._baseline_stale():
                    summary.baselines.append(self.measure_baseline())
                summary.outcomes.append(self.run_trial())
        except KeyboardInterrupt:
            summary.interrupted = True
        return summary

    def _baseline_stale(self) -> bool:
        return self.baseline is None or self.clock() - self.baseline.finished > self.baseline_interval

    def _seed(self) -> int:
        return self.rng.randrange(2**31)

    def measure_baseline(self) -> Baseline:
        """Measure the default configuration with the full plan; retry once if a launch fails."""
        existing = load_baselines(self.study)
        baseline_id = (existing[-1].id + 1) if existing else 1
        self.events.baseline_started(baseline_id)
        settings = self.space.settings(self.space.defaults(self.config.collective),
                                       self.config.collective)
        started = self.clock()
        for attempt in range(2):
            records: list[LaunchRecord] = []
            try:
                for planned in self.plan.launches():
                    records.append(self.measurer.run_launch(settings, planned, self._seed()))
                    self.events.launch_finished(records[-1], len(self.plan.launches()))
                break
            except LaunchFailed as exc:
                if attempt == 1:
                    raise AutotuneError(
                        f"the default configuration cannot be measured ({exc}); nothing to compare "
                        f"against. Last stderr:\n{exc.stderr_tail}") from None
        raw = _raw_from(records)
        trimmed = {size: objective.trimmed_mean(values) for size, values in raw.items()}
        reference = self.first_baseline
        drift = 0.0
        if reference is not None:
            drift = objective.weighted_score(
                {s: objective.log_ratio(trimmed[s], reference.trimmed[s]) for s in trimmed},
                self.config.weights)
        baseline = Baseline(id=baseline_id, run_id=self.run_id, started=started,
                            finished=self.clock(), raw=raw, trimmed=trimmed, drift=drift,
                            launches=[r.to_dict() for r in records], host=self.host.to_dict())
        save_baseline(self.study, baseline)
        self.baseline = baseline
        if self.first_baseline is None:
            self.first_baseline = baseline
        self.events.baseline_finished(baseline)
        return baseline

    def run_trial(self) -> TrialOutcome:
        t_start = time.perf_counter()
        overhead = 0.0
        t0 = time.perf_counter()
        trial = self.study.ask()
        params = self.space.suggest(trial, self.config.collective)
        is_default = bool(trial.user_attrs.get("is_default")) or (
            params == self.space.defaults(self.config.collective))
        overhead += time.perf_counter() - t0
        self.events.trial_started(trial.number, params, is_default)
        outcome = TrialOutcome(number=trial.number, state="FAIL", params=params,
                               is_default=is_default)
        assert self.baseline is not None
        baseline = self.baseline
        outcome.baseline_id = baseline.id
        records: list[LaunchRecord] = []
        failure: LaunchFailure | None = None
        pruned = False
        interrupted = False
        settings: LaunchSettings | None = None
        try:
            settings = self.space.settings(params, self.config.collective)
            planned_launches = self.plan.launches()
            for planned in planned_launches:
                try:
                    record = self.measurer.run_launch(settings, planned, self._seed())
                except LaunchFailed as exc:
                    records.append(exc.record)
                    failure = exc
                    break
                records.append(record)
                self.events.launch_finished(record, len(planned_launches))
                t0 = time.perf_counter()
                for size, t_us in record.t_max_us.items():
                    trial.report(objective.log_ratio(t_us, baseline.trimmed[size]),
                                 self.plan.step(size, planned.rep))
                pruned = self.prune and not is_default and trial.should_prune()
                overhead += time.perf_counter() - t0
                if pruned:
                    break
        except KeyboardInterrupt:
            interrupted = True
            failure = LaunchFailure("interrupted", "stopped by the user")
        except AutotuneError as exc:  # e.g. a stored parameter outside the space
            failure = LaunchFailure("config", str(exc))

        t0 = time.perf_counter()
        good = [r for r in records if not r.failure]
        raw = _raw_from(good)
        outcome.launches = len(records)
        outcome.bench_seconds = sum(r.seconds for r in records)
        outcome.sizes_measured = len(raw)
        attrs: dict[str, Any] = {
            "is_default": is_default,
            "baseline_id": baseline.id,
            "run_id": self.run_id,
            "host": self.host.to_dict(),
            "settings": _settings_dict(settings) if settings else {},
            "raw_us": {str(s): v for s, v in raw.items()},
            "launches": [r.to_dict() for r in records],
            "launch_count": len(records),
            "sizes_measured": len(raw),
            "sizes_complete": sum(1 for v in raw.values() if len(v) == self.plan.repetitions),
            "bench_seconds": round(outcome.bench_seconds, 4),
        }
        if failure is None and not pruned:
            scores = objective.per_size_scores(raw, baseline.trimmed)
            value = objective.weighted_score(scores, self.config.weights)
            attrs["scores"] = {str(s): v for s, v in scores.items()}
            attrs["speedup"] = objective.speedup(value)
            outcome.value, outcome.speedup, outcome.state = value, attrs["speedup"], "COMPLETE"
        elif pruned:
            scores = objective.per_size_scores(raw, baseline.trimmed)
            attrs["scores"] = {str(s): v for s, v in scores.items()}
            if scores:
                partial = objective.weighted_score(scores, self.config.weights)
                attrs["partial_speedup"] = objective.speedup(partial)
            outcome.state = "PRUNED"
        else:
            assert failure is not None
            attrs["fail_reason"] = failure.reason
            attrs["fail_detail"] = failure.detail[:500]
            attrs["stderr_tail"] = failure.stderr_tail[-4000:]
            outcome.fail_reason = f"{failure.reason}: {failure.detail}"[:300]
        overhead += time.perf_counter() - t0
        attrs["controller_seconds"] = round(overhead, 6)
        t0 = time.perf_counter()
        try:
            for key, value in attrs.items():
                trial.set_user_attr(key, value)
            if outcome.state == "COMPLETE":
                self.study.tell(trial, outcome.value)
            elif outcome.state == "PRUNED":
                self.study.tell(trial, state=TrialState.PRUNED)
            else:
                self.study.tell(trial, state=TrialState.FAIL)
        except KeyboardInterrupt:
            self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            raise
        overhead += time.perf_counter() - t0
        outcome.controller_seconds = overhead
        outcome.wall_seconds = time.perf_counter() - t_start
        self.events.trial_finished(outcome, self.best_outcome())
        if interrupted:
            raise KeyboardInterrupt
        return outcome

    def best_outcome(self) -> TrialOutcome | None:
        try:
            best = self.study.best_trial
        except ValueError:
            return None
        return TrialOutcome(number=best.number, state="COMPLETE", params=best.params,
                            is_default=bool(best.user_attrs.get("is_default")), value=best.value,
                            speedup=math.exp(-best.value) if best.value is not None else None)


def _raw_from(records: list[LaunchRecord]) -> dict[int, list[float]]:
    raw: dict[int, list[float]] = {}
    for record in records:
        for size, t_us in record.t_max_us.items():
            raw.setdefault(size, []).append(t_us)
    return dict(sorted(raw.items()))


def _settings_dict(settings: LaunchSettings) -> dict[str, Any]:
    return {"env": dict(settings.env), "mca": dict(settings.mca),
            "mpirun_args": list(settings.mpirun_args)}
