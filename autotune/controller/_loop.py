"""The study loop: ask -> measure launch by launch -> report/prune -> score -> tell.

Noise handling: latency levels move between launches and, suddenly and for minutes, machine-wide
(measured here: 1.6x at small sizes and 3x at large ones from one launch to the next). So the
default configuration is not measured once: its launches are interleaved with the trials' launches
(one right before every `baseline_every` candidate launches of the same size block, and before a
trial's second launch of a block: one default launch serves several configurations, never two
launches of one) and every candidate launch is paired with the default launch nearest before it. A shift then spoils one pair,
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
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from .. import objective
from ..baseline import BaselineFailed, InterleavedDefault, Placement
from ..confirm import ConfirmPolicy, confirm, no_candidate
from ..errors import (AutotuneError, ClusterLost, EnvironmentProblem, InputError, LaunchFailure,
                     NoNodes, NothingNew, StorageError)
from ..errors import StopRequested as StopSignal
from ..events import Events, NullEvents, RunSummary, SerializedEvents, TrialOutcome
from ..measure import LaunchFailed, LaunchRecord, Measurer, PlannedLaunch
from ..probe import HostInfo
from ..space import SearchSpace, TrialContext
from ..storage import (NEVER_AGAIN, RUN_ATTR, BaselineLaunch, PatientStorage, StudyConfig,
                      TrialKey, TrialRecord, enqueue_default, failure_attrs, known_invalid_params,
                      load_baselines, params_key, record_checksum, requeue_attrs, run_attrs,
                      save_baseline, trial_attrs)
from ..strategy import SearchSetup, Strategy
from ._trial import TrialMeasurement, raw_from

if TYPE_CHECKING:  # the controller is handed a pool; it never builds one
    from ..launch import NodePool

QUEUED_ATTRS = (TrialKey.IS_DEFAULT, TrialKey.WARM_START, TrialKey.REQUEUED_FROM)  # enqueued
MAX_ASKS = 100  # proposals in a row that repeat what was measured: the sampler has nothing new


class Controller:
    """The study loop. Handed everything it uses: the study (built with the strategy's sampler
    and pruner), the strategy, a measurer (plan + benchmark, maybe an injected executor) and a
    node pool; it builds none of them, so it runs the same on real nodes and on canned data."""

    def __init__(self, study: optuna.Study, space: SearchSpace, config: StudyConfig,
                 measurer: Measurer, host: HostInfo, *, pool: NodePool, strategy: Strategy,
                 parallel: int = 1, baseline_every: int | None = None,
                 seed: int | None = None, events: Events | None = None,
                 context_values: dict[str, Any] | None = None,
                 fingerprint: dict[str, Any] | None = None, confirm_top: int = 0,
                 confirm_rounds: int = 5, confirm_max_rounds: int = 20,
                 confirm_confidence: float = 0.95, infra_retries: int = 2,
                 infra_pause_after: int = 5, infra_pause_seconds: float = 300.0,
                 verifier: Callable[[Placement, float | None], Any] | None = None,
                 per_size: Callable[[Placement, float | None], Any] | None = None) -> None:
        self.study = study
        self.space = space
        self.config = config
        self.measurer = measurer  # the plan; bound to a node group per trial (Measurer.on)
        self.plan = measurer.plan
        self.pool = pool
        self.strategy = strategy
        self.parallel = parallel
        self.host = host
        self.events = events or NullEvents()
        if parallel > 1:
            self.events = SerializedEvents(self.events)
        if isinstance(study._storage, PatientStorage):  # noqa: SLF001 - its waits are told
            study._storage.notify = lambda message: self.events.paused(message, 0.0)  # noqa: SLF001
        self.rng = random.Random(seed)
        self.run_id = uuid.uuid4().hex[:12]
        # candidate launches per default launch: as asked, else as the strategy measures best
        self.baseline_every = baseline_every or strategy.baseline_every or 1
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
        self.confirm_policy = ConfirmPolicy(min_rounds=confirm_rounds,
                                            max_rounds=max(confirm_rounds, confirm_max_rounds),
                                            confidence=confirm_confidence)
        self.seed = seed
        self.infra_retries = infra_retries
        self.infra_pause_after = infra_pause_after
        self.infra_pause_seconds = infra_pause_seconds
        self.verifier = verifier  # (placement, deadline) -> the independent check (verify.py)
        self.per_size = per_size  # (placement, deadline) -> per-size rules (endgame/stage.py)
        self.infra_in_a_row = 0
        self.known_invalid = known_invalid_params(study)
        self.measured = {params_key(t.params): t.number for t in study.get_trials(
            deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))}
        self.launch_order = strategy.launch_order
        strategy.bind(SearchSetup(
            study=study, space=space, ctx=self.ctx, context_values=self.context_values,
            default_params=self.default_params, blocks=tuple(self.plan.blocks()),
            weights=config.weights, repetitions=self.plan.repetitions))

    # ------------------------------------------------------------------ setup

    def enqueue_default(self) -> bool:
        return enqueue_default(self.study, self.default_params)

    # ------------------------------------------------------------------ loop

    def run(self, n_trials: int, deadline: float | None = None,
            search_deadline: float | None = None) -> RunSummary:
        """Run up to n_trials; stop launching trials when the next would not end before
        `search_deadline` (else `deadline`), and anything after the search by `deadline`
        (unix time); on a stop signal or Ctrl-C, fail and re-queue the running trial."""
        summary = self.summary
        self.enqueue_default()
        self.study.set_user_attr(RUN_ATTR, run_attrs(self.run_id, n_trials, time.time(), deadline))
        try:
            if self.parallel > 1:
                self._run_parallel(n_trials, search_deadline or deadline)
            else:
                for _ in range(n_trials):
                    if self._out_of_time(search_deadline or deadline):
                        break
                    try:
                        summary.outcomes.append(self.run_trial())
                    except NothingNew as exc:
                        summary.stopped_because = str(exc)
                        break
                    self.pause_if_infrastructure_keeps_failing()
            if not summary.stopped_because or summary.stopped_because.startswith(
                    ("time budget", "done:")):
                self.run_confirmation(deadline)  # it checks the deadline itself
                if self.per_size is not None:
                    with self.placement() as placed:  # it checks the deadline itself too
                        summary.rules = self.per_size(placed, deadline)
                if (self.verifier is not None and summary.confirmation is not None
                        and summary.confirmation.best_trial is not None):
                    with self.placement() as placed:  # it checks the deadline itself too
                        summary.verification = self.verifier(placed, deadline)
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
        """Whether to start no further trial: the deadline, or nothing left to propose."""
        if deadline is not None and time.time() + self.next_trial_estimate() > deadline:
            self.summary.stopped_because = "time budget: the next trial would not finish in time"
            return True
        if self.strategy.exhausted():
            self.summary.stopped_because = "done: the strategy has proposed every configuration"
            return True
        return False

    def _run_parallel(self, n_trials: int, deadline: float | None) -> None:
        from ._parallel import run_parallel

        run_parallel(self, n_trials, deadline)

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
        candidates = self.strategy.confirm_candidates(self.study, self.confirm_top)
        count = len(candidates)
        if not count:  # stored, so that no earlier claim or unconfirmed search figure stands
            self.summary.confirmation = no_candidate(self.study, self.confirm_policy)
            self.events.confirmed(self.summary.confirmation)
            return
        policy = self.confirm_policy
        per_launch = self.next_trial_estimate() / max(1, 2 * len(self.plan.launches()))
        needed = per_launch * 2 * count * policy.min_rounds * len(self.plan.blocks())
        if deadline is not None and time.time() + needed > deadline:
            self.events.confirming(count, policy.min_rounds, skipped="not enough time left")
            return
        self.events.confirming(count, policy.min_rounds)
        with self.placement() as placed:
            self.summary.confirmation = confirm(self.study, placed.measurer, self.default_settings,
                                                self.config.weights, candidates, policy,
                                                self.seed, default_params=self.default_params,
                                                deadline=deadline)
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

    def refresh_baseline(self, planned: PlannedLaunch, placed: Placement,
                         trial: int | None = None) -> LaunchRecord | None:
        """Run the default-config launch due before a candidate launch of this block (of
        `trial`), if any."""
        if not placed.baseline.due(planned.block, trial):
            return None
        refused = infra = 0
        while True:
            try:
                record = placed.measurer.run_launch(self.default_settings, planned, self._seed(),
                                                    params=self.default_params, is_default=True)
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
        for _ in range(MAX_ASKS):
            with self._ask_lock:  # two threads must never pop the same queued trial
                trial = self.study.ask()
            try:
                with self._ask_lock:  # the sampler's state is not thread-safe
                    params = self._suggest(trial)
                key = params_key(params)
                queued = any(k in trial.user_attrs for k in QUEUED_ATTRS)
                if key in self.known_invalid:
                    # an invalid configuration fails the same way every time: never again
                    self._skip(trial, "config", f"same parameters as trial "
                               f"{self.known_invalid[key]}, refused by MPI or wrong in its "
                               "results; not launched again")
                    self.summary.skipped_known_invalid += 1
                elif (key in self.measured and not queued
                      and not self.strategy.measures_again(params)):
                    # TPE re-proposed measured points (40 trials visited 19-25 distinct ones on a
                    # replayed grid), and asked again it proposes them again: a measured point
                    # is not measured from scratch; an unmeasured one, drawn at random, is next
                    self._skip(trial, "duplicate", f"same parameters as trial "
                               f"{self.measured[key]}, already measured; not launched again")
                    self.summary.skipped_duplicates += 1
                    fresh = self._unmeasured()
                    if fresh is None:
                        raise NothingNew("done: every configuration the space allows is measured")
                    self.study.enqueue_trial(fresh, user_attrs={TrialKey.EXPLORED: True})
                else:
                    with self._lock:
                        self.measured[key] = trial.number
                    break
            except BaseException:
                self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
                self.strategy.trial_finished(trial.number, dict(trial.params), "FAIL")
                raise
        else:
            raise NothingNew(f"done: the last {MAX_ASKS} proposals were all configurations "
                             "already measured or refused")
        try:
            return self._run_asked(trial, params, t_start, placed, asked_at)
        except BaseException:
            # whatever went wrong (a stop signal in the sampler, a storage error), never leave it RUNNING
            self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            self.strategy.trial_finished(trial.number, params, "FAIL")
            raise

    def _unmeasured(self, tries: int = 200) -> dict[str, Any] | None:
        """A configuration of the space neither measured nor refused, drawn at random."""
        for _ in range(tries):
            params = self.space.sample(self.rng, self.ctx)
            params.update({k: v for k, v in self.context_values.items() if k in params})
            key = params_key(params)
            if key not in self.measured and key not in self.known_invalid:
                return params
        return None

    def _skip(self, trial: optuna.Trial, reason: str, detail: str) -> None:
        """Fail a proposal without launching anything (it costs no benchmark time)."""
        for name, value in failure_attrs(reason, detail).items():
            trial.set_user_attr(name, value)
        trial.set_user_attr(TrialKey.SKIPPED, True)
        self.study.tell(trial, state=TrialState.FAIL)
        self.strategy.trial_finished(trial.number, dict(trial.params), "FAIL")

    def _suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        try:
            return self.strategy.suggest(trial, self.space, self.ctx)
        except ValueError as exc:  # optuna: a parameter's distribution differs from earlier trials
            raise InputError(f"the search space {self.space.name!r} no longer matches the trials "
                             f"of study {self.study.study_name!r} ({exc}); start a new study "
                             "with --study NAME") from None

    def _run_asked(self, trial: optuna.Trial, params: dict[str, Any], t_start: float,
                   placed: Placement, asked_at: float) -> TrialOutcome:
        t0 = time.perf_counter()
        is_default = (bool(trial.user_attrs.get(TrialKey.IS_DEFAULT))
                      or params == self.default_params)
        overhead = time.perf_counter() - t0
        self.events.trial_started(trial.number, params, is_default)
        outcome = TrialOutcome(number=trial.number, state="FAIL", params=params,
                               is_default=is_default, nodes=placed.group.hosts())
        measured = TrialMeasurement(placed=placed, asked_at=asked_at, params=params, is_default=is_default)
        fatal: BaseException | None = None
        try:
            measured.settings = self.space.settings(params, self.ctx)
            self._measure(trial, measured)
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
        except StorageError:
            raise  # the storage gave up waiting (locked, disk full): not this trial's fault
        except AutotuneError as exc:  # e.g. a stored parameter outside the space
            measured.failure = LaunchFailure("config", str(exc))
        except optuna.exceptions.StorageInternalError:
            raise  # the storage's fault, not this trial's: not hidden as a trial failure
        except Exception as exc:  # a bug met while measuring one trial costs that trial only
            measured.failure = LaunchFailure("internal", f"{type(exc).__name__}: {exc}"[:300])
        overhead += measured.overhead
        t0 = time.perf_counter()
        attrs = self._record(outcome, measured)
        attrs[TrialKey.CHECKSUM] = record_checksum(
            trial.params, {**trial.user_attrs, **attrs},
            outcome.value if outcome.state == "COMPLETE" else None)
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
            stored = self.study._storage.get_trial(trial._trial_id)  # noqa: SLF001
            if not stored.state.is_finished():  # sealed as failed, not as an outcome not told
                trial.set_user_attr(TrialKey.CHECKSUM, record_checksum(
                    trial.params, {**trial.user_attrs, **attrs}, None))
            self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
            self.strategy.trial_finished(trial.number, params, "FAIL")
            raise
        self.strategy.trial_finished(trial.number, params, outcome.state)
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
        if failure.reason in NEVER_AGAIN:
            self.known_invalid[params_key(params)] = trial.number
        with self._lock:  # not measured after all: it may be proposed again
            if self.measured.get(params_key(params)) == trial.number:
                del self.measured[params_key(params)]
        with self._lock:  # worker threads share the count
            self.infra_in_a_row = self.infra_in_a_row + 1 if failure.reason == "infrastructure" else 0
        if failure.reason == "interrupted":
            # not the configuration's fault: run it again next time
            self.study.enqueue_trial(params, user_attrs=requeue_attrs(
                trial.number, "interrupted", outcome.is_default))

    def _measure(self, trial: optuna.Trial, measured: "TrialMeasurement") -> None:
        """Launch by launch, with due baseline launches first; report each launch; after each,
        the strategy says whether the trial goes on, is pruned, or is measured enough."""
        assert measured.settings is not None and measured.placed is not None
        placed = measured.placed
        planned_launches = self.plan.launches(self.launch_order)
        for planned in planned_launches:
            default_record = self.refresh_baseline(planned, placed, trial.number)
            if default_record is not None:
                measured.baseline_launches += 1
                measured.saw_kernel(default_record)
            paired = placed.baseline.latest[planned.block]  # the default launch nearest before
            record = None
            for attempt in range(self.infra_retries + 1):
                try:
                    record = placed.measurer.run_launch(measured.settings, planned, self._seed(),
                                                        params=measured.params,
                                                        is_default=measured.is_default)
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
            placed.baseline.candidate_launched(planned.block, trial.number)
            self.events.launch_finished(record, len(planned_launches))
            for size in record.t_max_us:
                measured.paired_default.setdefault(size, []).append(paired.t_max_us[size])
            measured.baseline_ids.append(paired.id)
            t0 = time.perf_counter()
            launch_scores = {size: objective.log_ratio(t_us, paired.t_max_us[size])
                             for size, t_us in record.t_max_us.items()}
            score = objective.weighted_score(launch_scores, self.config.weights)
            trial.report(score, planned.index)
            self.strategy.launch_scored(trial.number, planned.block, score)
            # after the last launch pruning saves nothing: keep the complete measurement
            last = planned.index == len(planned_launches) - 1
            verdict = "continue" if last else self.strategy.after_launch(trial, measured.is_default)
            measured.pruned = verdict == "prune"
            measured.overhead += time.perf_counter() - t0
            if verdict != "continue":
                return

    def _record(self, outcome: TrialOutcome, measured: "TrialMeasurement") -> dict[str, Any]:
        """Fill the outcome and return the trial's user attributes: what ran and what it gave."""
        raw = raw_from([r for r in measured.records if not r.failure])
        outcome.launches = len(measured.records)
        outcome.bench_seconds = sum(r.seconds for r in measured.records)
        outcome.sizes_measured = len(raw)
        outcome.baseline_launches = measured.baseline_launches
        group = measured.placed.group if measured.placed is not None else None
        common = dict(
            is_default=outcome.is_default, run_id=self.run_id, host=self.host.to_dict(),
            context=self.context_values, fingerprint=self.fingerprint, settings=measured.settings,
            raw_us=raw, default_us=measured.paired_default, baseline_ids=measured.baseline_ids,
            baseline_launches=measured.baseline_launches,
            launches=[r.to_dict() for r in measured.records], repetitions=self.plan.repetitions,
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
            partial = (objective.speedup(objective.weighted_score(scores, self.config.weights))
                       if scores else None)
            return trial_attrs(**common, scores=scores, partial_speedup=partial)
        outcome.value = objective.weighted_score(scores, self.config.weights)
        outcome.speedup = objective.speedup(outcome.value)
        outcome.state = "COMPLETE"
        return trial_attrs(**common, scores=scores, speedup=outcome.speedup)

    def best_outcome(self) -> TrialOutcome | None:
        try:
            best = self.study.best_trial
        except ValueError:
            return None
        return TrialOutcome(number=best.number, state="COMPLETE", params=best.params,
                            is_default=TrialRecord.from_trial(best).is_default, value=best.value,
                            speedup=math.exp(-best.value) if best.value is not None else None)
