"""The study loop: ask -> measure launch by launch -> report/prune -> score -> tell.

Noise handling: latency levels move between launches and, suddenly and for minutes, machine-wide
(measured here: 1.6x at small sizes and 3x at large ones from one launch to the next). So the
default configuration is not measured once: its launches are interleaved with the trials' launches
(one right before every `baseline_every` candidate launches of the same size block) and every
candidate launch is paired with the default launch nearest before it. A shift then spoils one pair,
which the trimmed mean drops. Every default launch is stored with its drift against the run's first.
The controller is the single writer of the study; it knows neither mpirun nor the benchmark.
"""

from __future__ import annotations

import contextlib
import math
import random
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna
from optuna.trial import TrialState

from . import objective
from .daemon import StopRequested as StopSignal
from .errors import (AutotuneError, ClusterLost, EnvironmentProblem, InputError, LaunchFailure,
                     NoNodes)
from .launch.groups import NodeGroup, NodePool, StaticPool
from .measure import LaunchFailed, LaunchRecord, Measurer, PlannedLaunch
from .probe import HostInfo
from .space import LaunchSettings, SearchSpace, TrialContext
from .storage import BaselineLaunch, StudyConfig, load_baselines, save_baseline


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
    baseline_launches: int = 0  # default-config launches interleaved during this trial
    fail_reason: str = ""
    nodes: tuple[str, ...] = ()  # the node group the trial ran on


@dataclass
class RunSummary:
    outcomes: list[TrialOutcome] = field(default_factory=list)
    baselines: list[BaselineLaunch] = field(default_factory=list)
    interrupted: bool = False
    stopped_because: str = ""  # why the run ended before its trials were done
    skipped_known_invalid: int = 0
    confirmation: Any = None  # confirm.Confirmation when the search ended normally


class Events(Protocol):
    """What a progress display hears; every method is optional in practice (see NullEvents)."""

    def trial_started(self, number: int, params: dict[str, Any], is_default: bool) -> None: ...
    def trial_finished(self, outcome: TrialOutcome, best: TrialOutcome | None) -> None: ...
    def baseline_finished(self, launch: BaselineLaunch) -> None: ...
    def launch_finished(self, record: LaunchRecord, total: int) -> None: ...
    def paused(self, reason: str, seconds: float) -> None: ...
    def confirming(self, candidates: int, rounds: int, skipped: str = "") -> None: ...
    def confirmed(self, confirmation: Any) -> None: ...


class _SerializedEvents:
    """Events from several trial threads, one at a time (the display is not thread-safe)."""

    def __init__(self, events: Events) -> None:
        self._events = events
        self._lock = threading.Lock()

    def __getattr__(self, name: str):
        method = getattr(self._events, name)

        def call(*args, **kwargs):
            with self._lock:
                return method(*args, **kwargs)
        return call


class NullEvents:
    def trial_started(self, number, params, is_default): pass
    def trial_finished(self, outcome, best): pass
    def baseline_finished(self, launch): pass
    def launch_finished(self, record, total): pass
    def paused(self, reason, seconds): pass
    def confirming(self, candidates, rounds, skipped=""): pass
    def confirmed(self, confirmation): pass


def make_sampler(seed: int | None, fixed: dict[str, Any] | None = None) -> optuna.samplers.BaseSampler:
    """TPE over the space; allocation context (NPS, ...) is pinned to this allocation's value,
    so the sampler learns from trials on other allocations but never proposes the impossible."""
    tpe = optuna.samplers.TPESampler(multivariate=True, group=True, constant_liar=True, seed=seed)
    if fixed:
        return optuna.samplers.PartialFixedSampler(dict(fixed), tpe)
    return tpe


def make_pruner(prune_after_launches: int, p_threshold: float) -> optuna.pruners.BasePruner:
    """Wilcoxon signed-rank test of this trial's per-launch scores against the best trial's.

    One step per launch (step = the launch's index in the plan, the same for every trial), valued
    at the weighted mean log-ratio of that launch's sizes. Launches, not sizes, are the unit of
    evidence: a latency level holds for a whole launch and moves all its small sizes together,
    so per-size steps made the test overconfident (19 of 20 trials pruned in a trial run).
    """
    return optuna.pruners.WilcoxonPruner(p_threshold=p_threshold,
                                         n_startup_steps=max(2, prune_after_launches))


RUN_ATTR = "autotune.run"


def params_key(params: dict[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))


def known_invalid_params(study: optuna.Study) -> dict[tuple, int]:
    """Params that made MPI refuse the configuration: never launched again."""
    return {params_key(t.params): t.number for t in study.get_trials(deepcopy=False)
            if t.state == TrialState.FAIL and t.user_attrs.get("fail_reason") == "config"
            and not t.user_attrs.get("skipped")}


def recover_abandoned(study: optuna.Study) -> list[int]:
    """Trials left RUNNING by an owner that died (the caller holds the study lock, so nobody else
    runs them): mark them failed, and queue their params again once."""
    recovered = []
    storage = study._storage  # noqa: SLF001 - the public Study API cannot touch other trials' attrs
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        storage.set_trial_user_attr(trial._trial_id, "fail_reason", "abandoned")  # noqa: SLF001
        storage.set_trial_user_attr(trial._trial_id, "fail_detail",  # noqa: SLF001
                                    "left running by a process that died (killed or crashed)")
        study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
        if trial.user_attrs.get("requeue_reason") != "abandoned":
            study.enqueue_trial(dict(trial.params), user_attrs={
                "requeued_from": trial.number, "requeue_reason": "abandoned",
                "is_default": bool(trial.user_attrs.get("is_default"))})
        recovered.append(trial.number)
    return recovered


def enqueue_default(study: optuna.Study, default_params: dict[str, Any]) -> bool:
    """Queue the default configuration as a trial unless the study already has it (first in line,
    so it is trial 0 of a new study)."""
    for trial in study.get_trials(deepcopy=False):
        if trial.user_attrs.get("is_default") and trial.state in (
                TrialState.COMPLETE, TrialState.WAITING, TrialState.RUNNING):
            return False
    study.enqueue_trial(default_params, user_attrs={"is_default": True})
    return True


class InterleavedDefault:
    """The latest launch of the default configuration for each size block of this run."""

    def __init__(self, every: int, weights: dict[int, float]) -> None:
        self.every = every
        self.weights = weights
        self.latest: dict[int, BaselineLaunch] = {}
        self.first: dict[int, BaselineLaunch] = {}
        self.since: dict[int, int] = {}

    def due(self, block: int) -> bool:
        return block not in self.latest or self.since.get(block, 0) >= self.every

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

    def candidate_launched(self, block: int) -> None:
        self.since[block] = self.since.get(block, 0) + 1


@dataclass
class Placement:
    """Where one trial runs: its node group, a measurer bound to it, and the interleaved default
    launches made on those same nodes (a candidate is only ever paired with a default launch on
    its own nodes)."""

    group: NodeGroup
    measurer: Measurer
    baseline: InterleavedDefault
    acquire_seconds: float


class Controller:
    def __init__(self, study: optuna.Study, space: SearchSpace, config: StudyConfig,
                 measurer: Measurer, host: HostInfo, *, pool: NodePool | None = None,
                 parallel: int = 1, baseline_every: int = 1,
                 prune: bool = True, seed: int | None = None, events: Events | None = None,
                 context_values: dict[str, Any] | None = None,
                 fingerprint: dict[str, Any] | None = None, confirm_top: int = 0,
                 confirm_rounds: int = 5, infra_retries: int = 2,
                 infra_pause_after: int = 5, infra_pause_seconds: float = 300.0) -> None:
        self.study = study
        self.space = space
        self.config = config
        self.measurer = measurer  # the plan; bound to a node group per trial (Measurer.on)
        self.plan = measurer.plan
        self.pool: NodePool = pool or StaticPool(measurer.launcher, config.nodes, 1)
        self.parallel = parallel
        self.host = host
        self.prune = prune
        self.events = events or NullEvents()
        if parallel > 1:
            self.events = _SerializedEvents(self.events)
        self.rng = random.Random(seed)
        self.run_id = uuid.uuid4().hex[:12]
        self.baseline_every = baseline_every
        self.baselines: dict[tuple[str, ...], InterleavedDefault] = {}  # per node group
        self._lock = threading.Lock()  # baseline ids, trial claims (parallel trials)
        self._ask_lock = threading.Lock()
        self.stopping = threading.Event()
        existing = load_baselines(study)
        self.next_baseline_id = (existing[-1].id + 1) if existing else 1
        self.ctx = TrialContext(config.collective, config.nodes)
        self.context_values = dict(context_values or {})
        self.default_params = space.defaults(self.ctx, self.context_values)
        self.default_settings = space.settings(self.default_params, self.ctx)
        self.summary = RunSummary()
        self.fingerprint = dict(fingerprint or {})
        self.confirm_top = confirm_top
        self.confirm_rounds = confirm_rounds
        self.seed = seed
        self.infra_retries = infra_retries
        self.infra_pause_after = infra_pause_after
        self.infra_pause_seconds = infra_pause_seconds
        self.infra_in_a_row = 0
        self.known_invalid = known_invalid_params(study)

    # ------------------------------------------------------------------ setup

    def enqueue_default(self) -> bool:
        return enqueue_default(self.study, self.default_params)

    # ------------------------------------------------------------------ loop

    def run(self, n_trials: int, deadline: float | None = None) -> RunSummary:
        """Run up to n_trials; stop launching when the next trial would not end before `deadline`
        (unix time); on a stop signal or Ctrl-C, fail and re-queue the running trial."""
        summary = self.summary
        self.enqueue_default()
        self.study.set_user_attr(RUN_ATTR, {"run_id": self.run_id, "trials_planned": n_trials,
                                            "started": time.time(), "deadline": deadline})
        try:
            if self.parallel > 1:
                self._run_parallel(n_trials, deadline)
            else:
                for _ in range(n_trials):
                    if self._out_of_time(deadline):
                        break
                    summary.outcomes.append(self.run_trial())
                    self.pause_if_infrastructure_keeps_failing()
            if not summary.stopped_because or summary.stopped_because.startswith("time budget"):
                self.run_confirmation(deadline)  # it checks the deadline itself
        except (KeyboardInterrupt, StopSignal) as exc:
            summary.interrupted = True
            summary.stopped_because = f"stopped by {exc.__class__.__name__ if isinstance(exc, KeyboardInterrupt) else exc}"
        except ClusterLost as exc:
            summary.stopped_because = (f"{exc}; the study is intact and the interrupted trial is "
                                       "queued again: run `autotune start` once the cluster is back")
        except (BaselineFailed, NoNodes) as exc:
            summary.stopped_because = str(exc)
        return summary

    def _out_of_time(self, deadline: float | None) -> bool:
        if deadline is not None and time.time() + self.next_trial_estimate() > deadline:
            self.summary.stopped_because = "time budget: the next trial would not finish in time"
            return True
        return False

    def _run_parallel(self, n_trials: int, deadline: float | None) -> None:
        """Up to `parallel` trials at once, each on its own node group, in worker threads; the
        sampler's constant liar keeps them from proposing the same point. A stop (signal here,
        a fatal error in a worker) cancels every running launch; their trials are re-queued."""
        claimed = 0
        errors: list[BaseException] = []
        no_nodes: list[str] = []

        def claim() -> bool:
            nonlocal claimed
            with self._lock:
                if self.stopping.is_set() or claimed >= n_trials or self._out_of_time(deadline):
                    return False
                claimed += 1
                return True

        def worker() -> None:
            nonlocal claimed
            try:
                while claim():
                    self.summary.outcomes.append(self.run_trial())
                    self.pause_if_infrastructure_keeps_failing()
            except NoNodes as exc:  # this worker's share of the cluster is gone; others go on
                no_nodes.append(str(exc))
                with self._lock:
                    claimed -= 1  # its trial did not run (or was queued again): another may
            except BaseException as exc:  # noqa: BLE001 - handed to the main thread
                errors.append(exc)
                self.stopping.set()
                self.pool.cancel_all()

        threads = [threading.Thread(target=worker, name=f"autotune-trial-{i + 1}", daemon=True)
                   for i in range(self.parallel)]
        try:
            for thread in threads:
                thread.start()
            while any(t.is_alive() for t in threads):
                for thread in threads:
                    thread.join(timeout=0.5)
        except BaseException:
            self.stopping.set()
            self.pool.cancel_all()
            for thread in threads:
                if thread.is_alive():
                    thread.join()
            raise
        if errors:
            raise errors[0]
        if no_nodes and len(no_nodes) == len(threads):
            raise NoNodes(no_nodes[0])

    @contextlib.contextmanager
    def placement(self) -> Iterator[Placement]:
        """Hold a node group for one trial (or the confirmation), and give it back after."""
        t0 = time.perf_counter()
        group = self.pool.acquire()
        try:
            hosts = group.hosts()
            with self._lock:
                baseline = self.baselines.setdefault(
                    hosts, InterleavedDefault(self.baseline_every, self.config.weights))
            yield Placement(group, self.measurer.on(group), baseline, time.perf_counter() - t0)
        finally:
            self.pool.release(group)

    def run_confirmation(self, deadline: float | None) -> None:
        """Re-measure the best few against the default (see confirm.py), if time allows."""
        if self.confirm_top <= 0:
            return
        from .confirm import confirm, top_candidates

        count = len(top_candidates(self.study, self.confirm_top))
        if not count:
            return
        per_launch = self.next_trial_estimate() / max(1, 2 * len(self.plan.launches()))
        needed = per_launch * 2 * count * self.confirm_rounds * len(self.plan.blocks())
        if deadline is not None and time.time() + needed > deadline:
            self.events.confirming(count, self.confirm_rounds, skipped="not enough time left")
            return
        self.events.confirming(count, self.confirm_rounds)
        with self.placement() as placed:
            self.summary.confirmation = confirm(self.study, placed.measurer, self.default_settings,
                                                self.config.weights, self.confirm_top,
                                                self.confirm_rounds, self.seed)
        self.events.confirmed(self.summary.confirmation)

    def next_trial_estimate(self) -> float:
        """Seconds the next trial may take: the longest of the recent ones (a full trial at most)."""
        recent = [o.wall_seconds for o in self.summary.outcomes[-10:] if o.state == "COMPLETE"]
        if recent:
            return max(recent)
        launches = len(self.plan.launches()) * 2  # with the interleaved default launches
        return launches * (1.0 + self.plan.time_per_size * 4 * len(self.plan.sizes) / len(self.plan.blocks()))

    def pause_if_infrastructure_keeps_failing(self) -> None:
        if self.infra_in_a_row < self.infra_pause_after:
            return
        reason = (f"{self.infra_in_a_row} trials in a row failed for infrastructure reasons (nodes, "
                  f"launcher); pausing {self.infra_pause_seconds:.0f} s before trying again")
        self.events.paused(reason, self.infra_pause_seconds)
        if self.parallel > 1:
            self.stopping.wait(self.infra_pause_seconds)  # a stop must not wait for the pause
        else:
            time.sleep(self.infra_pause_seconds)  # a stop signal interrupts it
        self.infra_in_a_row = 0

    def _seed(self) -> int:
        return self.rng.randrange(2**31)

    @staticmethod
    def _group_broken(placed: Placement) -> bool:
        """After an infrastructure failure: did the group lose a node (then retrying is futile)?
        Groups that can tell (Ray) first give the cluster time to notice a dead node."""
        settle = getattr(placed.group, "settle", None)
        if settle is not None:
            settle()
        return bool(getattr(placed.group, "lost", ""))

    def refresh_baseline(self, planned: PlannedLaunch, placed: Placement) -> LaunchRecord | None:
        """Run the default-config launch due before a candidate launch of this block, if any."""
        if not placed.baseline.due(planned.block):
            return None
        refused = infra = 0
        while True:
            try:
                record = placed.measurer.run_launch(self.default_settings, planned, self._seed())
                break
            except LaunchFailed as exc:
                if exc.reason == "interrupted":
                    raise
                if exc.reason == "infrastructure":
                    # the nodes' fault, not the default's: the trial fails as infrastructure
                    infra += 1
                    if self._group_broken(placed) or infra > self.infra_retries:
                        raise
                    continue
                refused += 1
                if refused == 2:
                    raise BaselineFailed(
                        f"the default configuration failed twice ({exc}); nothing to compare "
                        f"against. stderr:\n{exc.stderr_tail}") from None
        with self._lock:
            launch = BaselineLaunch(id=self.next_baseline_id, run_id=self.run_id, block=planned.block,
                                    started=record.started, seconds=record.seconds,
                                    t_max_us=record.t_max_us, argv=record.argv, hosts=record.hosts)
            self.next_baseline_id += 1
        launch.drift = placed.baseline.drift(launch)
        placed.baseline.add(launch)
        save_baseline(self.study, launch)
        self.summary.baselines.append(launch)
        self.events.baseline_finished(launch)
        return record

    def run_trial(self) -> TrialOutcome:
        with self.placement() as placed:
            return self._run_trial_on(placed)

    def _run_trial_on(self, placed: Placement) -> TrialOutcome:
        t_start = time.perf_counter()
        asked_at = time.time()
        for _ in range(100):
            with self._ask_lock:  # two threads must never pop the same queued trial
                trial = self.study.ask()
            try:
                with self._ask_lock:  # the sampler's state is not thread-safe
                    params = self._suggest(trial)
                key = params_key(params)
                if key not in self.known_invalid:
                    break
                # an invalid configuration fails the same way every time: never launch it again
                trial.set_user_attr("fail_reason", "config")
                trial.set_user_attr("fail_detail", "same parameters as invalid trial "
                                    f"{self.known_invalid[key]}; not launched again")
                trial.set_user_attr("skipped", True)
                self.study.tell(trial, state=TrialState.FAIL)
                self.summary.skipped_known_invalid += 1
            except BaseException:
                self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
                raise
        try:
            return self._run_asked(trial, params, t_start, placed, asked_at)
        except BaseException:
            # whatever went wrong (a stop signal in the sampler, a storage error), never leave it RUNNING
            self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            raise

    def _suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        try:
            return self.space.suggest(trial, self.ctx)
        except ValueError as exc:  # optuna: a parameter's distribution differs from earlier trials
            raise InputError(f"the search space {self.space.name!r} no longer matches the trials "
                             f"of study {self.study.study_name!r} ({exc}); start a new study "
                             "with --study NAME") from None

    def _run_asked(self, trial: optuna.Trial, params: dict[str, Any], t_start: float,
                   placed: Placement, asked_at: float) -> TrialOutcome:
        t0 = time.perf_counter()
        is_default = bool(trial.user_attrs.get("is_default")) or params == self.default_params
        overhead = time.perf_counter() - t0
        self.events.trial_started(trial.number, params, is_default)
        outcome = TrialOutcome(number=trial.number, state="FAIL", params=params,
                               is_default=is_default, nodes=placed.group.hosts())
        measured = _Measured(placed=placed, asked_at=asked_at)
        fatal: BaseException | None = None
        try:
            measured.settings = self.space.settings(params, self.ctx)
            self._measure(trial, measured, prunable=self.prune and not is_default)
        except (KeyboardInterrupt, StopSignal) as exc:
            fatal = exc
            measured.failure = LaunchFailure("interrupted", f"stopped by {exc.__class__.__name__ if isinstance(exc, KeyboardInterrupt) else exc}")
        except ClusterLost as exc:
            fatal = exc
            measured.failure = LaunchFailure("interrupted", str(exc))
        except LaunchFailed as exc:  # the default launch before a candidate could not run
            measured.records.append(exc.record)
            measured.failure = exc
        except BaselineFailed as exc:
            fatal = exc
            measured.failure = LaunchFailure("baseline", str(exc).splitlines()[0])
        except NoNodes as exc:  # the pool gave up its nodes because the run is stopping
            fatal = exc
            measured.failure = LaunchFailure("interrupted", str(exc))
        except EnvironmentProblem as exc:  # the launcher cannot start anything here (no srun, ...)
            measured.failure = LaunchFailure("infrastructure", str(exc))
        except AutotuneError as exc:  # e.g. a stored parameter outside the space
            measured.failure = LaunchFailure("config", str(exc))
        overhead += measured.overhead
        t0 = time.perf_counter()
        attrs = self._record(outcome, measured)
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
        if measured.failure is not None:
            self._after_failure(trial, params, outcome, measured.failure)
        else:
            self.infra_in_a_row = 0
        best = self.best_outcome()
        outcome.controller_seconds = overhead + time.perf_counter() - t0
        outcome.wall_seconds = time.perf_counter() - t_start
        self.events.trial_finished(outcome, best)
        if fatal is not None:
            raise fatal
        return outcome

    def _after_failure(self, trial: optuna.Trial, params: dict[str, Any], outcome: TrialOutcome,
                       failure: LaunchFailure) -> None:
        """What a failure class means for what happens next."""
        if failure.reason == "config":
            self.known_invalid[params_key(params)] = trial.number
        with self._lock:  # worker threads share the count
            self.infra_in_a_row = self.infra_in_a_row + 1 if failure.reason == "infrastructure" else 0
        if failure.reason == "interrupted":
            # not the configuration's fault: run it again next time
            self.study.enqueue_trial(params, user_attrs={"requeued_from": trial.number,
                                                         "requeue_reason": "interrupted",
                                                         "is_default": outcome.is_default})

    def _measure(self, trial: optuna.Trial, measured: "_Measured", prunable: bool) -> None:
        """Launch by launch, with due baseline launches first; report each launch; prune."""
        assert measured.settings is not None and measured.placed is not None
        placed = measured.placed
        planned_launches = self.plan.launches()
        for planned in planned_launches:
            default_record = self.refresh_baseline(planned, placed)
            if default_record is not None:
                measured.baseline_launches += 1
                measured.saw_kernel(default_record)
            paired = placed.baseline.latest[planned.block]  # the default launch nearest before
            record = None
            for attempt in range(self.infra_retries + 1):
                try:
                    record = placed.measurer.run_launch(measured.settings, planned, self._seed())
                    break
                except LaunchFailed as exc:
                    measured.records.append(exc.record)
                    if (exc.reason != "infrastructure" or attempt == self.infra_retries
                            or self._group_broken(placed)):
                        measured.failure = exc
                        return
            assert record is not None
            measured.records.append(record)
            measured.saw_kernel(record)
            placed.baseline.candidate_launched(planned.block)
            self.events.launch_finished(record, len(planned_launches))
            for size in record.t_max_us:
                measured.paired_default.setdefault(size, []).append(paired.t_max_us[size])
            measured.baseline_ids.append(paired.id)
            t0 = time.perf_counter()
            launch_scores = {size: objective.log_ratio(t_us, paired.t_max_us[size])
                             for size, t_us in record.t_max_us.items()}
            trial.report(objective.weighted_score(launch_scores, self.config.weights),
                         planned.index)
            # after the last launch pruning saves nothing: keep the complete measurement
            last = planned.index == len(planned_launches) - 1
            measured.pruned = prunable and not last and trial.should_prune()
            measured.overhead += time.perf_counter() - t0
            if measured.pruned:
                return

    def _record(self, outcome: TrialOutcome, measured: "_Measured") -> dict[str, Any]:
        """Fill the outcome and return the trial's user attributes: what ran and what it gave."""
        raw = _raw_from([r for r in measured.records if not r.failure])
        outcome.launches = len(measured.records)
        outcome.bench_seconds = sum(r.seconds for r in measured.records)
        outcome.sizes_measured = len(raw)
        outcome.baseline_launches = measured.baseline_launches
        attrs: dict[str, Any] = {
            "is_default": outcome.is_default,
            "baseline_ids": measured.baseline_ids,  # the default launch paired with each launch
            "default_us": {str(s): v for s, v in sorted(measured.paired_default.items())},
            "baseline_launches_during": measured.baseline_launches,
            "run_id": self.run_id,
            "host": self.host.to_dict(),
            "context": self.context_values,
            "fingerprint": self.fingerprint,
            "settings": _settings_dict(measured.settings) if measured.settings else {},
            "raw_us": {str(s): v for s, v in raw.items()},
            "launches": [r.to_dict() for r in measured.records],
            "launch_count": len(measured.records),
            "sizes_measured": len(raw),
            "sizes_complete": sum(1 for v in raw.values() if len(v) == self.plan.repetitions),
            "bench_seconds": round(outcome.bench_seconds, 4),
            "controller_seconds": round(measured.overhead, 6),
        }
        if measured.placed is not None:
            group = measured.placed.group
            attrs["nodes"] = list(group.hosts())
            attrs["node_names"] = list(group.host_names())
            attrs["node_group"] = f"{group.name}:{group.label}"
            attrs["acquire_seconds"] = round(measured.placed.acquire_seconds, 4)
        if measured.first_kernel is not None:
            # ask -> the first benchmark of this trial running (its paired default launch, often)
            attrs["dispatch_seconds"] = round(measured.first_kernel - measured.asked_at, 4)
        if measured.failure is not None:
            failure = measured.failure
            attrs["fail_reason"] = failure.reason
            attrs["fail_detail"] = failure.detail[:500]
            attrs["stderr_tail"] = failure.stderr_tail[-4000:]
            outcome.fail_reason = f"{failure.reason}: {failure.detail}"[:300]
            return attrs
        scores = objective.paired_scores(raw, measured.paired_default)
        attrs["scores"] = {str(s): v for s, v in scores.items()}
        if measured.pruned:
            outcome.state = "PRUNED"
            if scores:
                partial = objective.weighted_score(scores, self.config.weights)
                attrs["partial_speedup"] = objective.speedup(partial)
            return attrs
        outcome.value = objective.weighted_score(scores, self.config.weights)
        outcome.speedup = attrs["speedup"] = objective.speedup(outcome.value)
        outcome.state = "COMPLETE"
        return attrs

    def best_outcome(self) -> TrialOutcome | None:
        try:
            best = self.study.best_trial
        except ValueError:
            return None
        return TrialOutcome(number=best.number, state="COMPLETE", params=best.params,
                            is_default=bool(best.user_attrs.get("is_default")), value=best.value,
                            speedup=math.exp(-best.value) if best.value is not None else None)


@dataclass
class _Measured:
    """What one trial's measurement produced, complete or not."""

    settings: LaunchSettings | None = None
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


class BaselineFailed(AutotuneError):
    """The default configuration itself cannot be measured: there is nothing to score against."""


def _raw_from(records: list[LaunchRecord]) -> dict[int, list[float]]:
    raw: dict[int, list[float]] = {}
    for record in records:
        for size, t_us in record.t_max_us.items():
            raw.setdefault(size, []).append(t_us)
    return dict(sorted(raw.items()))


def _settings_dict(settings: LaunchSettings) -> dict[str, Any]:
    return {"env": dict(settings.env), "mca": dict(settings.mca),
            "mpirun_args": list(settings.mpirun_args)}
