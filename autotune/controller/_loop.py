"""The study loop: for each trial, ask (_ask) -> measure launch by launch, report, prune
(_trial) -> record and tell (storage.save_trial); then the confirmation, the per-size stage and
the independent check. The loop owns the threads (_parallel), the locks and the failure policy.

Noise handling: latency levels move between launches and, suddenly and for minutes, machine-wide
(measured here: 1.6x at small sizes and 3x at large ones from one launch to the next). So the
default configuration is not measured once: its launches are interleaved with the trials'
launches (_defaults) and every candidate launch is paired with the default launch nearest before
it. A shift then spoils one pair, which the trimmed mean drops.
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
from threadpoolctl import threadpool_limits

from ..baseline import BaselineFailed, Placement
from ..endgame.confirm import ConfirmPolicy, confirm, no_candidate
from ..errors import (AutotuneError, ClusterLost, EnvironmentProblem, LaunchFailure, NoNodes,
                      NothingNew, StorageError)
from ..errors import StopRequested as StopSignal
from ..events import Events, NullEvents, RunSummary, SerializedEvents, TrialOutcome
from ..measure import LaunchFailed, Measurer
from ..probe import HostInfo
from ..space import SearchSpace, TrialContext, knob_defaults
from ..storage import (RUN_ATTR, PatientStorage, StudyConfig, TrialKey, TrialRecord,
                       enqueue_default, requeue_attrs, run_attrs, save_trial)
from ..strategy import SearchSetup, Strategy
from ._ask import Proposals
from ._defaults import DefaultLaunches
from ._trial import RunFacts, TrialLaunches, TrialMeasurement, trial_record

if TYPE_CHECKING:  # the controller is handed a pool; it never builds one
    from ..launch import NodePool


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
                 confirm_rounds: int = 5, confirm_max_rounds: int = 80,
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
        self.lock = threading.Lock()  # trial claims and failure counts (parallel trials)
        self.stopping = threading.Event()
        self.ctx = TrialContext(config.collective, config.nodes)
        self.context_values = dict(context_values or {})
        self.default_params = space.defaults(self.ctx, self.context_values)
        self.default_settings = space.settings(self.default_params, self.ctx)
        self.summary = RunSummary()
        self.fingerprint = dict(fingerprint or {})
        self.confirm_top = confirm_top
        term = measurer.benchmark.disagreement(config.collective)
        self.confirm_policy = ConfirmPolicy(min_rounds=confirm_rounds,
                                            max_rounds=max(confirm_rounds, confirm_max_rounds),
                                            confidence=confirm_confidence,
                                            systematic=term.systematic,
                                            systematic_note=term.measured)
        self.seed = seed
        self.infra_retries = infra_retries
        self.infra_pause_after = infra_pause_after
        self.infra_pause_seconds = infra_pause_seconds
        self.verifier = verifier  # (placement, deadline) -> the independent check (endgame/verify.py)
        self.per_size = per_size  # (placement, deadline) -> per-size rules (endgame/stage.py)
        self.infra_in_a_row = 0
        self.launch_order = strategy.launch_order
        self.proposals = Proposals(study, strategy, space, self.ctx, self.context_values,
                                   self.rng, self.summary)
        self.defaults = DefaultLaunches(
            study, self.default_settings, self.default_params, run_id=self.run_id,
            every=self.baseline_every, weights=config.weights, events=self.events,
            summary=self.summary, infra_retries=infra_retries, seed_of=self._seed)
        self.launches = TrialLaunches(self.plan, self.launch_order, self.defaults, strategy,
                                      self.events, config.weights, infra_retries, self._seed)
        self.facts = RunFacts(self.run_id, host, self.context_values, self.fingerprint,
                              self.plan.repetitions, config.weights)
        strategy.bind(SearchSetup(
            study=study, space=space, ctx=self.ctx, context_values=self.context_values,
            default_params=self.default_params, blocks=tuple(self.plan.blocks()),
            weights=config.weights, repetitions=self.plan.repetitions))

    # ------------------------------------------------------------------ setup

    def enqueue_default(self) -> bool:
        return enqueue_default(self.study, self.default_params)

    # ------------------------------------------------------------------ loop

    def run(self, n_trials: int, deadline: float | None = None,
            search_deadline: float | None = None, *, deadline_ends_job: bool = False
            ) -> RunSummary:
        """Run up to n_trials; stop launching trials when the next would not end before
        `search_deadline` (else `deadline`), and anything after the search by `deadline`
        (unix time); on a stop signal or Ctrl-C, fail and re-queue the running trial.
        `deadline_ends_job`: the deadline is the end of a Slurm job that is requeued to resume
        the study, so a search it cuts short, or a confirmation that would not end before it,
        waits for the next job (the confirmation runs once, in the job that reaches it).

        The search's BLAS runs on one thread meanwhile: the benchmark's ranks need the cores,
        and OpenBLAS's thread pool is not safe against a fork() from another thread."""
        with threadpool_limits(limits=1, user_api="blas"):
            return self._run(n_trials, deadline, search_deadline, deadline_ends_job)

    def _run(self, n_trials: int, deadline: float | None, search_deadline: float | None,
             deadline_ends_job: bool) -> RunSummary:
        summary = self.summary
        self.enqueue_default()
        self.study.set_user_attr(RUN_ATTR, run_attrs(self.run_id, n_trials, time.time(), deadline))
        try:
            if self.parallel > 1:
                self._run_parallel(n_trials, search_deadline or deadline)
            else:
                for _ in range(n_trials):
                    if self.out_of_time(search_deadline or deadline):
                        break
                    try:
                        summary.outcomes.append(self.run_trial())
                    except NothingNew as exc:
                        summary.stopped_because = str(exc)
                        break
                    self.pause_if_infrastructure_keeps_failing()
            why = summary.stopped_because
            cut_by_job = deadline_ends_job and why.startswith("time budget")
            if not cut_by_job and (not why or why.startswith(("time budget", "done:"))):
                if not self.run_confirmation(deadline, deadline_ends_job):
                    return summary  # the next job confirms
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

    def out_of_time(self, deadline: float | None) -> bool:
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
            yield Placement(group, self.measurer.on(group), self.defaults.of_group(group.hosts()),
                            time.perf_counter() - t0)
        finally:
            self.pool.release(group)

    def run_confirmation(self, deadline: float | None, deadline_ends_job: bool = False) -> bool:
        """Re-measure the best few against the default (see endgame/confirm.py), if time allows.
        False when it would not end before the end of the job: the next job runs it."""
        if self.confirm_top <= 0:
            return True
        candidates = self.strategy.confirm_candidates(self.study, self.confirm_top)
        count = len(candidates)
        if not count:  # stored, so that no earlier claim or unconfirmed search figure stands
            self.summary.confirmation = no_candidate(self.study, self.confirm_policy)
            self.events.confirmed(self.summary.confirmation)
            return True
        policy = self.confirm_policy
        per_launch = self.next_trial_estimate() / max(1, 2 * len(self.plan.launches()))
        needed = per_launch * 2 * count * policy.min_rounds * len(self.plan.blocks())
        if deadline is not None and time.time() + needed > deadline:
            if deadline_ends_job:
                self.summary.stopped_because = ("time budget: the confirmation would not end "
                                                "before the job does; the next job runs it")
                self.events.confirming(count, policy.min_rounds,
                                       skipped="the job ends first: the next job runs it")
                return False
            self.events.confirming(count, policy.min_rounds, skipped="not enough time left")
            return True
        self.events.confirming(count, policy.min_rounds)
        with self.placement() as placed:
            self.summary.confirmation = confirm(self.study, placed.measurer, self.default_settings,
                                                self.config.weights, candidates, policy,
                                                self.seed, default_params=self.default_params,
                                                deadline=deadline,
                                                knob_defaults=self.knob_defaults())
        self.events.confirmed(self.summary.confirmation)
        return True

    def knob_defaults(self) -> dict[str, Any]:
        """Each knob's value when it is not set: what a configuration changes is counted
        against these (the confirmation prefers the simpler of two it cannot tell apart)."""
        return knob_defaults(self.space.for_context(self.ctx))

    def next_trial_estimate(self) -> float:
        """Seconds the next trial may take: the longest of the recent complete ones, of this run
        or, at its start, of the study's earlier runs (a job that resumes a study knows how long
        its trials take); with none, a full trial from the plan (a launch is about a second plus
        one to two times the timed loop per size)."""
        recent = [o.wall_seconds for o in self.summary.outcomes[-10:] if o.state == "COMPLETE"]
        if not recent:
            done = self.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))[-10:]
            recent = [(t.datetime_complete - t.datetime_start).total_seconds() for t in done
                      if t.datetime_complete is not None and t.datetime_start is not None]
        if recent:
            return max(recent)
        launches = len(self.plan.launches()) * 2  # with the interleaved default launches
        return launches * (1.0 + self.plan.time_per_size * 2 * len(self.plan.sizes) / len(self.plan.blocks()))

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

    def run_trial(self) -> TrialOutcome:
        """One trial on a node group of its own: ask, measure, record."""
        with self.placement() as placed:
            t_start = time.perf_counter()
            asked_at = time.time()
            trial, params = self.proposals.next()
            try:
                return self._run_asked(trial, params, t_start, placed, asked_at)
            except BaseException:
                # whatever went wrong (a stop signal in the sampler, a storage error), never
                # leave it RUNNING
                self.study.tell(trial, state=TrialState.FAIL, skip_if_finished=True)
                self.strategy.trial_finished(trial.number, params, "FAIL")
                raise

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
            self.launches.measure(trial, measured)
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
        attrs = trial_record(outcome, measured, self.facts)
        try:
            save_trial(self.study, trial, outcome.state, outcome.value, attrs)
        except BaseException:  # told failed by save_trial; run_trial passes it on
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
        self.proposals.failed(trial.number, params, failure.reason)
        with self.lock:  # worker threads share the count
            self.infra_in_a_row = self.infra_in_a_row + 1 if failure.reason == "infrastructure" else 0
        if failure.reason == "interrupted":
            # not the configuration's fault: run it again next time
            self.study.enqueue_trial(params, user_attrs=requeue_attrs(
                trial.number, "interrupted", outcome.is_default))

    def best_outcome(self) -> TrialOutcome | None:
        try:
            best = self.study.best_trial
        except ValueError:
            return None
        return TrialOutcome(number=best.number, state="COMPLETE", params=best.params,
                            is_default=TrialRecord.from_trial(best).is_default, value=best.value,
                            speedup=math.exp(-best.value) if best.value is not None else None)
