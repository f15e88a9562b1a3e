"""Run a campaign: every case in order, each as the study `autotune start` would run, warm-started
from its finished neighbours; a case that needs more nodes than this allocation holds waits for a
later one. Stopping (SIGTERM, the end of the job) leaves every case resumable: the next
`autotune campaign` with the same arguments goes on where this one stopped."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna

from ..errors import AutotuneError, InputError
from ..storage import open_storage, trials_done
from ._model import CAMPAIGN_ATTR, Case, CaseMark
from ._warm import Candidate, case_candidates, nearest, winners_agree

SEARCH_SHARE = 0.6  # with --time-budget: a case's trials end by this share of its time
UNBOUNDED_TRIALS = 10**6  # with --time-budget only: the time, not a count, ends a case's search


@dataclass(frozen=True)
class CampaignOptions:
    name: str
    cases: tuple[Case, ...]
    base: Any  # session.StartOptions shared by every case (collective/nodes/ppn are the case's)
    trials: int | None = None  # per case; None: --time-budget divides the time instead
    time_budget: float | None = None  # seconds, for the whole campaign in this allocation
    neighbours: bool = True  # warm start from finished neighbours


@dataclass
class CampaignOutcome:
    finished: list[Case] = field(default_factory=list)  # in this run
    waiting: dict[Case, str] = field(default_factory=dict)
    failed: dict[Case, str] = field(default_factory=dict)
    stopped: str = ""  # why the run ended before trying every case
    exit_code: int = 0


def case_options(options: CampaignOptions, case: Case, time_budget: float | None):
    return dataclasses.replace(options.base, collective=case.collective, nodes=case.nodes,
                               ppn=case.ppn, study_name=case.study_name(options.name),
                               time_budget=time_budget, new_study=False)


def read_mark(study: optuna.Study | optuna.study.StudySummary | Any) -> CaseMark | None:
    return CaseMark.from_dict(study.user_attrs.get(CAMPAIGN_ATTR))


def write_mark(study: optuna.Study, mark: CaseMark) -> None:
    study.set_user_attr(CAMPAIGN_ATTR, mark.to_dict())


def register_cases(options: CampaignOptions) -> dict[Case, optuna.Study]:
    """Create (or load) every case's study, marked as this campaign's, so `campaign status` lists
    the cases not yet started too. A study of the same name that is not this campaign's case is
    refused, not taken over."""
    store = open_storage(options.base.storage)
    existing = {s.study_name: s for s in store.get_all_studies()}
    studies = {}
    for case in options.cases:
        name = case.study_name(options.name)
        if name in existing:
            mark = CaseMark.from_dict(existing[name].user_attrs.get(CAMPAIGN_ATTR))
            if mark is None or mark.campaign != options.name or mark.case != case:
                raise InputError(f"study {name!r} exists and is not case {case.label} of campaign "
                                 f"{options.name!r}; choose another --name")
        study = optuna.create_study(study_name=name, storage=store, direction="minimize",
                                    load_if_exists=True)
        mark = read_mark(study)
        if mark is None:
            write_mark(study, CaseMark(campaign=options.name, case=case, trials=options.trials))
        elif mark.trials != options.trials:
            write_mark(study, dataclasses.replace(mark, trials=options.trials))
        studies[case] = study
    return studies


class CampaignRunner:
    """The loop over the cases. `prepare(options)` makes a case's session (session.prepare_session),
    `run_case(session, options, trials)` runs it and returns the controller's RunSummary, `say`
    prints a line; the CLI passes its own, tests may pass others."""

    def __init__(self, options: CampaignOptions, *, prepare: Callable, run_case: Callable,
                 say: Callable[[str], None], allocation_nodes: int | None,
                 on_ready: Callable[[], None] = lambda: None) -> None:
        self.options = options
        self.prepare = prepare
        self.run_case = run_case
        self.say = say
        self.allocation_nodes = allocation_nodes  # None: not known before connecting (Ray)
        self.on_ready = on_ready  # called once a case has started, or when none is left to start
        self.ready = False
        self.deadline = time.time() + options.time_budget if options.time_budget else None

    def run(self) -> CampaignOutcome:
        outcome = CampaignOutcome()
        studies = register_cases(self.options)
        pending = [c for c in self.options.cases if not self._finished(studies[c])]
        done = len(self.options.cases) - len(pending)
        self.say(f"campaign {self.options.name}: {len(self.options.cases)} cases, {done} done, "
                 f"{len(pending)} to run")
        runnable = []
        for case in pending:
            if self.allocation_nodes is not None and case.nodes > self.allocation_nodes:
                why = (f"needs {case.nodes} nodes, this allocation has {self.allocation_nodes}: "
                       "it runs in a later, larger allocation")
                outcome.waiting[case] = why
                self._update(studies[case], waiting=why)
                self.say(f"case {case.label} waits: {why}")
            else:
                runnable.append(case)
                self._update(studies[case], waiting="")  # it fits this allocation
        for index, case in enumerate(runnable):
            if self.deadline is not None and time.time() >= self.deadline:
                outcome.stopped = "the campaign's time budget is spent"
                break
            code = self._run_one(case, studies, len(runnable) - index, outcome)
            if code is not None:
                outcome.exit_code = code
                break
        if not self.ready:
            if outcome.failed and not outcome.finished:
                first = next(iter(outcome.failed.items()))
                raise AutotuneError(f"no case of campaign {self.options.name} could start here "
                                    f"({first[0].label}: {first[1]})")
            self._ready()
        left = [c for c in self.options.cases if not self._finished(studies[c])]
        if not left:
            self.say(f"campaign {self.options.name}: every case is done")
        else:
            self.say(f"campaign {self.options.name}: {len(self.options.cases) - len(left)} of "
                     f"{len(self.options.cases)} cases done; run the same command again to go on"
                     + (f" ({len(outcome.waiting)} wait for more nodes)" if outcome.waiting else ""))
        return outcome

    # ------------------------------------------------------------------ one case

    def _run_one(self, case: Case, studies: dict[Case, optuna.Study], cases_left: int,
                 outcome: CampaignOutcome) -> int | None:
        """Run one case; an exit code when the whole campaign must stop, else None."""
        from ..daemon import StopRequested
        from ..session import EXIT_JOB_TIME_UP, exit_code_for_stop

        budget = search_deadline = None
        if self.deadline is not None:
            share = (self.deadline - time.time()) / cases_left
            budget = share
            search_deadline = time.time() + share * SEARCH_SHARE
        opts = case_options(self.options, case, budget)
        self.say(f"---- case {case.label} (study {opts.study_name})")
        try:
            session = self.prepare(opts)
        except StopRequested:
            outcome.stopped = "stopped before the case started"
            return exit_code_for_stop()
        except AutotuneError as exc:  # bad for this case only (e.g. more ranks than cores)
            outcome.failed[case] = str(exc)
            self._update(studies[case], stopped=f"could not start: {exc}")
            self.say(f"case {case.label} cannot run here: {exc}")
            return None
        self._ready()
        try:
            if budget is not None:
                session.search_deadline = min(search_deadline, session.deadline or search_deadline)
            study = session.study
            mark = read_mark(study) or CaseMark(self.options.name, case, self.options.trials)
            target = self.options.trials or UNBOUNDED_TRIALS
            if self.options.neighbours and not mark.warm_started:
                mark = self._warm_start(case, session, studies, mark)
            for line in mark.warm_started:
                self.say(f"warm start from neighbours: {line}")
            if mark.agreed:
                queued = sum(line.startswith("queued") for line in mark.warm_started)
                target = min(target, 1 + queued)
                self.say(f"the neighbours' confirmed winners agree: {target} trials (the default "
                         "and what they found), then the confirmation")
            left = max(0, target - trials_done(study))
            summary = self.run_case(session, opts, left)
            if summary.interrupted:
                outcome.stopped = "stopped"
                self._update(study, stopped="stopped by a signal; resumes in the next run")
                return exit_code_for_stop()  # inside a Slurm job: 75, and the job script requeues
            confirmed = summary.confirmation is not None or self.options.base.confirm_top <= 0
            if (summary.stopped_because.startswith("time budget") and session.deadline_is_job_end
                    and not confirmed):  # the job ends before this case could be confirmed
                outcome.stopped = "the Slurm job ends"
                self._update(study, stopped="the Slurm job ended; resumes in the next run")
                self.say(f"the Slurm job ends: exit {EXIT_JOB_TIME_UP}; a requeued job resumes "
                         "the campaign")
                return EXIT_JOB_TIME_UP
            early = summary.stopped_because and not summary.stopped_because.startswith(
                ("done:", "time budget"))
            if confirmed and not early:
                self._update(study, finished=time.time(), stopped="")
                outcome.finished.append(case)
                self.say(f"case {case.label} done")
            else:
                why = summary.stopped_because or "no confirmation: not enough time left"
                outcome.failed[case] = why
                self._update(study, stopped=why)
                self.say(f"case {case.label} not finished ({why}); it resumes in the next run")
            return None
        finally:
            session.pool.close()
            if session.lock:
                session.lock.release()

    def _warm_start(self, case: Case, session, studies: dict[Case, optuna.Study],
                    mark: CaseMark) -> CaseMark:
        """Queue what the nearest finished cases found, adapted to this case's space."""
        from ..space import TrialContext
        from ..warmstart import WarmConfig, enqueue_configs, to_params

        finished = [c for c in self.options.cases if self._finished(studies[c])]
        ctx = TrialContext(case.collective, case.nodes)
        candidates: list[Candidate] = []
        for neighbour in nearest(case, finished):
            candidates += case_candidates(studies[neighbour], neighbour.label)
        if not candidates:
            lines = ["no finished neighbour yet: a cold start" if not finished else
                     "the finished neighbours found nothing faster than their default"]
            agreed = False
        else:
            configs = [WarmConfig(case.collective, case.nodes, case.ppn, c.params, c.note)
                       for c in candidates]
            lines = enqueue_configs(session.study, configs, session.space, ctx,
                                    session.context_values)

            def adapt(params: dict[str, Any]) -> dict[str, Any]:
                return to_params(WarmConfig(case.collective, case.nodes, case.ppn, params), session.space,
                                 ctx, session.context_values).params

            default = session.space.defaults(ctx, session.context_values)
            agreed = winners_agree(candidates, adapt, default)
        mark = dataclasses.replace(mark, warm_started=tuple(lines), agreed=agreed)
        write_mark(session.study, mark)
        return mark

    def _ready(self) -> None:
        if not self.ready:
            self.ready = True
            self.on_ready()

    # ------------------------------------------------------------------ marks

    @staticmethod
    def _finished(study: optuna.Study) -> bool:
        mark = read_mark(study)
        return mark is not None and mark.finished is not None

    @staticmethod
    def _update(study: optuna.Study, **changes: Any) -> None:
        mark = read_mark(study)
        if mark is not None:
            write_mark(study, dataclasses.replace(mark, **changes))
