"""`autotune campaign`: tune a table of cases (collectives x nodes x ppn) as one study per case,
in the background like `start`; `campaign status|stop|logs|report|export` for the whole of it."""

from __future__ import annotations

import re
import sys

import click

from ..benchmarks import ALL_COLLECTIVES
from ..benchmarks import REGISTRY as BENCHMARK_KINDS
from ..benchmarks import benchmark_help
from ..errors import AutotuneError, InputError
from . import render
from .models import BackgroundStart, CampaignStatusReport, Message
from .options import format_option, storage_option
from .start import start

campaign_name_option = click.option("--name", "campaign_name", metavar="NAME", default=None,
                                    help="campaign name; may be omitted when the storage holds "
                                         "one")
CAMPAIGN_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")  # + ".<case>" is a study name
# `start` options a campaign sets per case, or does not take
_PER_CASE = {"collective", "nodes", "ppn", "trials", "trials_total", "study_name", "new_study",
             "app_command"}  # not an application: a campaign tunes microbenchmark cases


def _int_list(_ctx, param, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        items = tuple(sorted({int(v) for v in value.split(",") if v.strip()}))
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected positive integers separated by commas, "
                                 "e.g. 1,2,4") from None
    if not items or min(items) < 1:
        raise click.BadParameter(f"{value!r}: expected positive integers, e.g. 1,2,4")
    return items


def _collectives(_ctx, _param, value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    unknown = [v for v in items if v not in ALL_COLLECTIVES]
    if unknown or not items:
        raise click.BadParameter(f"{', '.join(unknown) or value!r}: choose from "
                                 f"{', '.join(ALL_COLLECTIVES)}")
    return items


def _campaign_params() -> list[click.Parameter]:
    own = [
        click.Option(["--collectives"], callback=_collectives, metavar="LIST",
                     help="collectives to tune, comma-separated (e.g. allreduce,allgather)"),
        click.Option(["--nodes"], callback=_int_list, metavar="LIST",
                     help="node counts, comma-separated (e.g. 1,2,4,8)"),
        click.Option(["--ppn"], callback=_int_list, metavar="LIST",
                     help="ranks per node, comma-separated (e.g. 8,16,32)"),
        click.Option(["--trials"], type=click.IntRange(min=1), default=None,
                     help="trials per case, counted over every run of the campaign  [default: "
                          "30, or none with --time-budget: then the time is shared by the "
                          "cases left]"),
        click.Option(["--name", "name"], metavar="NAME", default=None,
                     help="campaign name (its case studies are NAME.<collective>-<n>n<p>p)  "
                          "[default: campaign-<space>]"),
        click.Option(["--neighbours/--no-neighbours"], default=True, show_default=True,
                     help="warm-start each case with what its finished neighbours found"),
    ]
    app_options = {spec.name for spec in BENCHMARK_KINDS["app"].cli_options}
    inherited = [p for p in start.params if p.name not in _PER_CASE | app_options]
    return own + [_without_app(p) if p.name == "benchmark" else p for p in inherited]


def _without_app(option: click.Parameter) -> click.Parameter:
    """start's --benchmark without `app`: a campaign's cases are microbenchmark runs."""
    assert isinstance(option, click.Option) and isinstance(option.type, click.Choice)
    choices = [c for c in option.type.choices if c != "app"]
    return click.Option(option.opts, type=click.Choice(choices), default=option.default,
                        show_default=True,
                        help=f"what times the collective: {benchmark_help(choices)}")


@click.pass_context
def _campaign(ctx: click.Context, collectives, nodes, ppn, trials, name, neighbours,
              foreground: bool, launcher_mca: tuple[str, ...], **fields) -> None:
    if ctx.invoked_subcommand is not None:
        return
    missing = [f for f, v in (("--collectives", collectives), ("--nodes", nodes),
                              ("--ppn", ppn)) if v is None]
    if missing:
        raise click.UsageError(f"missing {', '.join(missing)} (or a command: status, stop, logs, "
                               "report, export)")
    from ..campaign import CampaignOptions, cases_of
    from ..options import StartOptions
    from .options import name_value

    base = StartOptions.of(collective=collectives[0], nodes=nodes[0], ppn=ppn[0], **fields,
                           launcher_mca=tuple(name_value(i) for i in launcher_mca))
    if trials is None and base.time_budget is None:
        trials = 30
    from ..space import load_space

    if name is not None and not CAMPAIGN_NAME_RE.fullmatch(name):
        raise InputError(f"--name {name!r}: use letters, digits and . _ + - (at most 100 "
                         "characters, starting with a letter or digit)")
    name = name or f"campaign-{load_space(base.space).name}"
    options = CampaignOptions(name=name, cases=tuple(cases_of(collectives, nodes, ppn)), base=base,
                              trials=trials, time_budget=base.time_budget, neighbours=neighbours)
    if foreground:
        _run_foreground(options)
    else:
        _run_in_background(options)


campaign = click.Group(
    name="campaign", params=_campaign_params(), callback=_campaign, invoke_without_command=True,
    help="Tune every case of collectives x nodes x ppn: one study per case in one storage, each "
         "warm-started from its finished neighbours, resumable like `start` (in the background "
         "unless --foreground). `autotune campaign status` shows the whole table.")


def _lock(options):
    from ..daemon import StudyLock
    from ..storage import default_storage_url

    return StudyLock.of(options.base.storage or default_storage_url(), options.name)


def _run_in_background(options) -> None:
    """Check what can be checked here, then run the campaign detached and return once it holds
    the campaign and a case has started (or none is left to start); if no case can start, its
    one-line error instead."""
    from ..campaign import case_options
    from ..daemon import detach
    from ..session import preflight
    from .start import _invocation_argv

    preflight(case_options(options, options.cases[0], None))
    lock = _lock(options)
    _refuse_if_running(lock, options.name)
    owner = detach(_invocation_argv(), lock)
    render.emit(BackgroundStart(study=options.name, pid=owner.pid, host=owner.host,
                                log=str(owner.log), what="campaign"))


def _refuse_if_running(lock, name: str) -> None:
    owner = lock.owner()
    if owner is not None:
        raise AutotuneError(f"campaign {name!r} is already running (pid {owner.pid} on "
                            f"{owner.host}); `autotune campaign stop` ends it")


def _run_foreground(options) -> None:
    import os
    import socket
    import time

    from ..campaign import CampaignRunner, allocation_nodes, case_options
    from ..daemon import Owner, install_stop_handlers, mark_ready
    from ..session import preflight, prepare_session
    from .foreground import run_session
    from .render import err

    install_stop_handlers()
    preflight(case_options(options, options.cases[0], None))
    lock = _lock(options)
    lock.acquire(Owner(pid=os.getpid(), host=socket.gethostname(), started=time.time(),
                       study=options.name, log=str(lock.log)))
    from ..daemon import StopRequested

    try:
        runner = CampaignRunner(options, prepare=prepare_session, run_case=run_session,
                                say=lambda line: err.print(line, markup=False),
                                allocation_nodes=allocation_nodes(options.base),
                                on_ready=mark_ready)
        outcome = runner.run()
    except StopRequested:  # between two cases: nothing runs, everything is stored
        from ..session import exit_code_for_stop

        err.print(f"campaign {options.name} stopped; the same command resumes it")
        sys.exit(exit_code_for_stop())
    finally:
        lock.release()
    render.emit(CampaignStatusReport(_status(options.base.storage, options.name)))
    if outcome.exit_code:
        sys.exit(outcome.exit_code)


def _status(storage, name):
    from ..campaign import campaign_status

    return campaign_status(storage, name)


@campaign.command("status")
@format_option("text", "json")
@campaign_name_option
@storage_option
def status(fmt: str, campaign_name: str | None, storage: str | None) -> None:
    """Every case: done, running, waiting, partial (started, not finished) or left; trials, gain
    over the untuned stack, cost."""
    render.emit(CampaignStatusReport(_status(storage, campaign_name)), fmt)


@campaign.command("stop")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="seconds to wait for the campaign to store its running trial and exit")
@campaign_name_option
@storage_option
def stop(timeout: float, campaign_name: str | None, storage: str | None) -> None:
    """Stop a running campaign (SIGTERM: the running trial is queued again)."""
    from ..campaign import campaign_name as find
    from .start import stop_run

    stop_run("campaign", find(storage, campaign_name), storage, timeout)


@campaign.command("logs")
@click.option("-f", "--follow", is_flag=True, help="keep printing new lines while it runs")
@click.option("-n", "--lines", type=click.IntRange(min=0), default=60, show_default=True)
@campaign_name_option
@storage_option
def logs(follow: bool, lines: int, campaign_name: str | None, storage: str | None) -> None:
    """Print the campaign's log (its background run's output)."""
    from ..campaign import campaign_name as find
    from .start import print_log

    print_log("campaign", find(storage, campaign_name), storage, lines, follow)


@campaign.command("report")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="directory for index.html, its figures and each case's report  "
                   "[default: ./<campaign>-report]")
@click.option("--cases/--no-cases", default=True, show_default=True,
              help="write each started case's own report in a subdirectory named by the case")
@campaign_name_option
@storage_option
def report(out_dir: str | None, cases: bool, campaign_name: str | None,
           storage: str | None) -> None:
    """One page: the winners table, gain per case with intervals, cost per case against the
    staged sweep and the full grid, and the knob values the winners share."""
    from ..campaign import campaign_name as find
    from ..campaign import cost_line, write_campaign_report

    name = find(storage, campaign_name)
    page, data = write_campaign_report(storage, name, out_dir or f"{name}-report", cases=cases)
    render.emit(Message(f"campaign report written: {page}\ncost: {cost_line(data)}"))


@campaign.command("export")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="directory for the files  [default: ./<campaign>-export]")
@click.option("--formats", default="env,json,ompi-rules", show_default=True, metavar="LIST",
              help="formats per case, comma-separated (as `autotune export --format`)")
@click.option("--case", "only", metavar="CASE", default=None,
              help="one case only, e.g. allreduce-1n2p")
@click.option("--force", is_flag=True,
              help="as `autotune export --force` (settings the independent check disputes, "
                   "measured but unadopted per-size rules)")
@campaign_name_option
@storage_option
def export(out_dir: str | None, formats: str, only: str | None, force: bool,
           campaign_name: str | None, storage: str | None) -> None:
    """A file per case and format, named by case, and campaign.rules: one Open MPI rules file
    covering every collective and communicator size measured."""
    from ..campaign import campaign_name as find
    from ..campaign import export_campaign

    name = find(storage, campaign_name)
    done = export_campaign(storage, name, out_dir or f"{name}-export",
                           tuple(f.strip() for f in formats.split(",") if f.strip()), only, force)
    lines = [f"wrote {w.path}" + (f" ({w.note})" if w.note else "") for w in done.written]
    lines += [f"skipped {s.case}: {s.why}" for s in done.skipped]
    render.emit(Message("\n".join(lines) or "nothing to export yet: no case has a completed trial"))
