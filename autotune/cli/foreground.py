"""A study run in this terminal (or by the daemon, into its log): what it is about to do, a
progress bar, and a summary at the end. All of it goes to standard error."""

from __future__ import annotations

import datetime as dt
import math
import os
import shlex
import sys

from rich.markup import escape

from ..units import describe_sizes, is_app_run
from .render import err


def run_session(session, options, trials: int):
    """Run the study with a progress bar; print the plan before and the summary after. Returns
    the controller's RunSummary (exit_for says what it means for the exit code)."""
    from ..campaign import UNBOUNDED_TRIALS
    from ..progress import ProgressDisplay

    _print_plan(session, options)
    total = trials if trials < UNBOUNDED_TRIALS else None  # None: the time budget ends it
    with ProgressDisplay(total, console=err) as display:
        summary = session.controller(options, display).run(
            trials, deadline=session.deadline, search_deadline=session.search_deadline,
            deadline_ends_job=session.deadline_is_job_end)
    _print_run_summary(session.study, summary)
    _print_overlap(session.study)
    if summary.interrupted:
        err.print("stopped: the running trial is marked failed (interrupted) and queued again; "
                  "completed trials are stored")
    return summary


def exit_for(session, summary) -> None:
    """A requested stop or finished run is a clean exit; the end of a Slurm job (its time limit's
    signal, or no time left for another trial) exits 75 so a job script can requeue itself, and
    a study that ended just before the signal exits 0 and is not requeued; any other early stop
    exits 1."""
    from ..session import EXIT_JOB_TIME_UP, exit_code_for_stop

    if summary.interrupted:
        if exit_code_for_stop():
            err.print(f"stopped inside a Slurm job: exit {EXIT_JOB_TIME_UP}, so a job script can "
                      "requeue itself and resume the study")
            sys.exit(EXIT_JOB_TIME_UP)
        return
    if summary.stopped_because.startswith("time budget"):
        if session.deadline_is_job_end:
            err.print(f"the Slurm job ends before another trial would finish: exit "
                      f"{EXIT_JOB_TIME_UP}, so a job script can requeue itself and resume the "
                      "study")
            sys.exit(EXIT_JOB_TIME_UP)
    elif summary.stopped_because and not summary.stopped_because.startswith("done:"):
        sys.exit(1)


def _print_plan(session, options) -> None:
    from ..storage import redact

    config, plan = session.config, session.plan
    for note in session.notes:
        err.print(f"note: {escape(note)}")
    resumed = f" (resuming: {session.resumed_trials} trials)" if session.resumed_trials else ""
    where = redact(options.storage or "") or "default storage"
    err.print(f"study [bold]{escape(session.study.study_name)}[/] in {escape(where)}{resumed}, "
              f"pid {os.getpid()}")
    err.print(f"{config.collective}: {config.nodes} node x {config.ppn} ranks, "
              f"{describe_sizes(config.sizes)}, "
              + (f"{config.repetitions} launches per trial, " if is_app_run(config.sizes) else
                 f"{config.repetitions} launches per size in {len(plan.blocks())} stages, ")
              + f"space {escape(session.space_name)} on {session.caps.mpi}, "
              f"UCX {session.caps.ucx_version or 'n/a'}")
    if session.context_values:
        err.print("allocation: " + ", ".join(f"{k}={v}" for k, v in session.context_values.items())
                  + " (read from the nodes, fixed for the sampler)")
    if session.removed:
        err.print(f"not searched here ({len(session.removed)}):")
        for removal in session.removed:
            err.print(f"  - {escape(str(removal))}")
    if session.ucx_live_checked:
        err.print("UCX knobs are live: a launch with UCX_TLS=self failed as it must under pml ucx")
    for line in session.warm_started:
        err.print(f"warm start: {escape(line)}")
    if session.deadline:
        def clock(t: float) -> str:
            return dt.datetime.fromtimestamp(t).strftime('%H:%M:%S')

        if session.search_deadline and session.search_deadline < session.deadline:
            err.print(f"time budget: no trial starts that would end after "
                      f"{clock(session.search_deadline)}; the confirmation ends by "
                      f"{clock(session.deadline)}")
        else:
            err.print(f"time budget: no trial starts that would end after "
                      f"{clock(session.deadline)}")


def _print_run_summary(study, summary) -> None:
    states = [o.state for o in summary.outcomes]
    drifts = [b.drift for b in summary.baselines if b.drift is not None]
    drift = (f", drift {min(drifts):+.3f}..{max(drifts):+.3f} (log-ratio to the first one)"
             if drifts else "")
    err.print(f"this run: {states.count('COMPLETE')} complete, {states.count('PRUNED')} pruned, "
              f"{states.count('FAIL')} failed; {len(summary.baselines)} default-config launches"
              f"{drift}")
    if summary.skipped_duplicates:
        err.print(f"{summary.skipped_duplicates} proposals repeated a measured configuration; "
                  "an unmeasured one was measured instead")
    if summary.skipped_known_invalid:
        err.print(f"{summary.skipped_known_invalid} proposals repeated a configuration MPI had "
                  "refused; not launched again")
    if summary.stopped_because.startswith("done:"):
        err.print(escape(summary.stopped_because))
    elif summary.stopped_because and not summary.interrupted:
        err.print(f"[red]stopped early[/]: {escape(summary.stopped_because)}")
    try:
        best = study.best_trial
    except ValueError:
        return
    export_hint = (f"export it:   autotune export --study {shlex.quote(study.study_name)} "
                   "--format env -o best.env")
    confirmation = summary.confirmation
    if confirmation is not None:
        which = ("the default configuration (no candidate surely faster)" if confirmation.best_trial
                 is None else f"trial {confirmation.best_trial}")
        err.print(f"confirmed best: {which}")
        if summary.verification is not None:
            err.print(summary.verification.describe(), markup=False)
        err.print(export_hint, markup=False)
        return
    speed = math.exp(-best.value)
    if best.user_attrs.get("is_default"):
        err.print("best so far: the default configuration; no candidate beat it")
    else:
        err.print(f"best so far: trial {best.number}, speedup {speed:.3f}x over the default")
    err.print(export_hint, markup=False)


def _print_overlap(study) -> None:
    """A non-blocking collective's t_pure, t_ovrl, t_CPU and overlap per size, default vs best
    (what `autotune best` shows), tab-separated; nothing for a blocking collective."""
    from ..errors import AutotuneError
    from ..export import best_config
    from ..report import study_overlap
    from .render import Table, overlap_lines

    try:
        overlap = study_overlap(study, best_config(study))
    except AutotuneError:
        return
    if overlap is None:
        return
    for block in overlap_lines(overlap):
        if isinstance(block, Table):
            for row in (block.columns, *block.rows):
                err.print("\t".join(row), markup=False)
        else:
            err.print(block, markup=False)
