"""`autotune start|stop|logs|status`: run a study (in the background or in this terminal), stop
it, read its log, and see how it is doing."""

from __future__ import annotations

import sys

import click

from ..benchmarks import (ALL_COLLECTIVES, AUTO_BENCHMARK, BENCHMARKS, benchmark_help,
                          partner_help)
from ..errors import AutotuneError, InputError
from ..objective import OBJECTIVES
from ..options import DEFAULT_SPACE
from ..session import DEFAULT_SIZES
from ..launch import auto_help
from ..strategy import DEFAULT_STRATEGY, STRATEGIES, prune_help, strategy_help
from . import render
from .models import BackgroundStart, Message, StatusReport
from .options import (
    declared_options,
    duration_option,
    format_option,
    launch_with_option,
    launcher_option,
    name_value,
    open_study,
    positive_float,
    registry_options,
    sizes_option,
    storage_option,
    study_option,
)


@click.command()
@click.option("--collective", type=click.Choice(ALL_COLLECTIVES), required=True,
              help="collective to tune; i* are the non-blocking ones (IMB-NBC's method: alone, "
                   "and with a CPU load in between), with --space openmpi-ucx+openmpi-libnbc "
                   "on Open MPI (docs/nbc.md)")
@click.option("--objective", type=click.Choice(OBJECTIVES), default="latency", show_default=True,
              help="what is scored per size: latency (the collective alone), t_ovrl (started, a "
                   "CPU load as long as it, waited for) or overlap (the share the load did not "
                   "hide); the last two for non-blocking collectives only")
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True,
              help="nodes per benchmark run")
@click.option("--ppn", type=click.IntRange(min=1), default=None,
              help="ranks per node  [default: usable cores of this node; required with the "
                   "hostfile and ray launchers]")
@click.option("--trials", type=click.IntRange(min=1), default=30, show_default=True,
              help="trials to run in this invocation (a resumed study adds to its trials)")
@click.option("--trials-total", type=click.IntRange(min=1), default=None, metavar="N",
              help="instead of --trials: run until the study holds N trials that ran to an end, "
                   "counted over every run (a requeued Slurm job tops the study up, then "
                   "confirms)")
@click.option("--space", default=DEFAULT_SPACE, show_default=True, metavar="NAME|FILE",
              help="search space: a shipped name (autotune spaces list), a YAML file, or several "
                   "joined with +")
@click.option("--sizes", callback=sizes_option, metavar="MIN:MAX|LIST",
              help=f"message sizes: powers of two in MIN:MAX or a list (binary k/m/g suffixes)  "
                   f"[default: {DEFAULT_SIZES}, or the weights file's sizes]")
@click.option("--weights", "weights_file", metavar="FILE",
              help="YAML/CSV mapping message size -> weight (e.g. from an application profile)")
@click.option("--strategy", type=click.Choice(STRATEGIES), default=DEFAULT_STRATEGY,
              show_default=True,
              help=f"how configurations are proposed: {strategy_help()}; docs/strategies.md")
@click.option("--benchmark", type=click.Choice((AUTO_BENCHMARK, *BENCHMARKS)),
              default=AUTO_BENCHMARK,
              show_default=True, help=f"what times the collective: {benchmark_help()}")
@click.option("--repetitions", type=click.IntRange(min=3), default=5, show_default=True,
              help="launches per size; the min and max are dropped (trimmed mean)")
@click.option("--stages", type=click.IntRange(min=1), default=2, show_default=True,
              help="size blocks measured in turn, smallest first; pruning can stop after any "
                   "launch")
@click.option("--time-per-size", type=float, default=0.02, show_default=True,
              callback=positive_float,
              help="seconds of timed loop per size and launch; with IMB-MPI1 and cbench it sets "
                   "the repetitions (-iter, at 2 us a call), and their 40 MiB volume cap ends "
                   "large sizes sooner")
@click.option("--baseline-every", type=click.IntRange(min=1), default=None,
              help="one launch of the default config per this many candidate launches of a size "
                   "block (of different trials); each candidate launch is divided by the default "
                   "launch nearest before it  [default: 3 with screen, else 1]")
@click.option("--prune/--no-prune", default=True, show_default=True,
              help=f"stop losing configurations early ({prune_help()})")
@click.option("--oversubscribe", is_flag=True, help="allow more ranks than cores (timings suffer)")
@click.option("--seed", type=int, default=None, help="seed of the sampler and of the size orders")
@click.option("--foreground", is_flag=True,
              help="run in this terminal instead of detaching (progress bar, Ctrl-C stops)")
@click.option("--time-budget", callback=duration_option, metavar="DURATION",
              help="stop launching when the next trial would end after this (e.g. 90m, 2h); "
                   "inside Slurm the job's end time also counts")
@click.option("--timeout-floor", type=float, default=60.0, show_default=True,
              callback=positive_float,
              help="a launch's deadline is this plus an allowance per size; then it is killed")
@click.option("--infra-pause", type=float, default=300.0, show_default=True,
              callback=positive_float,
              help="seconds to pause after 5 infrastructure failures in a row")
@click.option("--confirm", "confirm_top", type=click.IntRange(min=0), default=3, show_default=True,
              help="at the end, re-measure the best K against the default with confidence "
                   "intervals (0: no confirmation)")
@click.option("--confirm-rounds", type=click.IntRange(min=2), default=5, show_default=True,
              help="rounds before the first judgement of the candidates")
@click.option("--confirm-max-rounds", type=click.IntRange(min=2), default=80, show_default=True,
              help="rounds at most: undecided candidates get more rounds (twice as many at each "
                   "look) until decided or this many; past 20 (or half of it), only a candidate "
                   "whose gain, if it held, would be claimed by then")
@click.option("--confirm-confidence", type=click.FloatRange(0.5, 0.999), default=0.95,
              show_default=True,
              help="confidence of a claim, held together over the candidates and looks")
@launcher_option(
              help=f"how ranks are placed: auto = {auto_help()}")
@launch_with_option()
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="trials at once, each on its own --nodes hosts (concurrent trials share the "
                   "network and disturb each other: keep 1 unless the allocation is large)")
@click.option("--launcher-mca", multiple=True, metavar="NAME=VALUE",
              help="site setting passed to mpirun for every launch, e.g. oob_tcp_if_include=ib0 "
                   "(repeatable; not tuned, not exported)")
@click.option("--new-study", is_flag=True, help="start a fresh study (name gets a timestamp)")
@click.option("--force", is_flag=True,
              help="continue a study that ran on another CPU / MPI / UCX version")
@click.option("--warm-start", metavar="NAME|FILE",
              help="enqueue known-good configurations first (shipped: seed000-winners)")
@click.option("--check-live/--no-check-live", default=True, show_default=True,
              help="before the study, prove UCX variables take effect (one failing launch)")
@click.option("--verify/--no-verify", default=None,
              callback=lambda _ctx, _param, value: {None: "auto", True: "yes", False: "no"}[value],
              help="at the end, check a confirmed winner against the untuned stack with another "
                   f"benchmark ({partner_help()})  [default: when one is available]")
@click.option("--verify-rounds", type=click.IntRange(min=2), default=20, show_default=True,
              help="interleaved rounds of the independent check")
@click.option("--per-size/--no-per-size", default=True, show_default=True,
              help="after the confirmation, choose coll_tuned's algorithm per message-size band "
                   "(spaces that tune it), and measure the composed rules against the best "
                   "single configuration (--confirm 0 skips it too)")
@click.option("--per-size-rounds", type=click.IntRange(min=2), default=6, show_default=True,
              help="interleaved rounds of every algorithm at every size for the per-size rules")
@declared_options(registry_options())
@study_option
@storage_option
@click.argument("app_command", nargs=-1, type=click.UNPROCESSED, metavar="[-- PROGRAM ARGS...]")
def start(trials: int, trials_total: int | None, foreground: bool, launcher_mca: tuple[str, ...],
          app_command: tuple[str, ...], **fields) -> None:
    """Run a tuning study in the background (creates it, or continues it with the same
    arguments); --foreground keeps it in this terminal. With --benchmark app, the program after
    -- is the benchmark (run from this directory)."""
    from ..daemon import StopRequested, install_stop_handlers, mark_ready
    from ..options import StartOptions
    from ..session import exit_code_for_stop, prepare_session

    if trials_total is not None and click.get_current_context().get_parameter_source(
            "trials") is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--trials and --trials-total exclude each other: --trials counts "
                               "this run's trials, --trials-total the study's")
    options = StartOptions.of(**fields, launcher_mca=tuple(name_value(i) for i in launcher_mca),
                              app_command=tuple(app_command))
    if not foreground:
        _start_in_background(options)
        return
    install_stop_handlers()
    try:
        session = prepare_session(options)
    except StopRequested:
        render.err.print("stopped before the first trial")
        sys.exit(exit_code_for_stop())
    mark_ready()  # a background `start` waits for this before it says the run is going
    from .foreground import exit_for, run_session

    if trials_total is not None:
        from ..storage import trials_done

        done = trials_done(session.study)
        trials = max(0, trials_total - done)
        render.err.print(f"--trials-total {trials_total}: the study holds {done} trials that ran "
                         f"to an end; {trials} to run")
    try:
        exit_for(session, run_session(session, options, trials))
    finally:
        session.pool.close()
        if session.lock:
            session.lock.release()


def _start_in_background(options) -> None:
    """Check everything that can be checked here, then re-run this command with --foreground in
    a detached process and return once it owns the study."""
    from ..daemon import StudyLock, detach, with_options
    from ..session import preflight

    checked = preflight(options)  # bad input: one line here, not a daemon that dies at once
    name, url = checked.name, checked.storage_url
    argv = _invocation_argv()
    if options.new_study:  # fix the name here so this process can wait for the right study
        import datetime as dt

        name = f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
        cut = argv.index("--") if "--" in argv else len(argv)  # the program's argv stays
        argv = with_options([a for a in argv[:cut] if a != "--new-study"] + argv[cut:],
                            "--study", name)
    lock = StudyLock.of(url, name)
    lock.refuse_if_held(name)
    owner = detach(argv, lock)
    render.emit(BackgroundStart(study=name, pid=owner.pid, host=owner.host, log=str(owner.log)))


def _invocation_argv() -> list[str]:
    """The arguments autotune was called with (main() records them; else sys.argv)."""
    obj = click.get_current_context().find_root().obj
    if isinstance(obj, dict) and obj.get("argv") is not None:
        return list(obj["argv"])
    return list(sys.argv[1:])


@click.command()
@format_option("text", "json")
@study_option
@storage_option
def status(fmt: str, study_name: str | None, storage: str | None) -> None:
    """The daemon (alive, pid, host), trials done/pruned/failed, the running trial, best speedup."""
    from ..status import study_status

    render.emit(StatusReport(study_status(open_study(storage, study_name), storage)), fmt)


@click.command()
@click.option("--timeout", type=float, default=30.0, show_default=True,
              help="seconds to wait for the daemon to finish its cleanup")
@study_option
@storage_option
def stop(timeout: float, study_name: str | None, storage: str | None) -> None:
    """Stop a running study gracefully (SIGTERM: the running trial is re-queued)."""
    stop_run("study", open_study(storage, study_name).study_name, storage, timeout)


def stop_run(what: str, name: str, storage: str | None, timeout: float) -> None:
    """SIGTERM the process that holds the lock of study or campaign `name`, and wait for it."""
    from ..daemon import StudyLock, stop_owner
    from ..storage import default_storage_url

    owner = StudyLock.of(storage or default_storage_url(), name).owner()
    if owner is None:
        render.emit(Message(f"{what} {name} is not running"))
        return
    if not stop_owner(owner, timeout):
        raise AutotuneError(f"pid {owner.pid} did not stop within {timeout:.0f} s")
    render.emit(Message(f"stopped {what} {name} (pid {owner.pid})"))


@click.command()
@click.option("-f", "--follow", is_flag=True, help="keep printing new lines while the study runs")
@click.option("-n", "--lines", type=click.IntRange(min=0), default=40, show_default=True)
@study_option
@storage_option
def logs(follow: bool, lines: int, study_name: str | None, storage: str | None) -> None:
    """Print the study's log (the background run's output)."""
    print_log("study", open_study(storage, study_name).study_name, storage, lines, follow)


def print_log(what: str, name: str, storage: str | None, lines: int, follow: bool) -> None:
    """The last `lines` of the log of study or campaign `name`; with `follow`, new lines until
    its run ends."""
    import time

    from ..daemon import StudyLock
    from ..storage import default_storage_url

    lock = StudyLock.of(storage or default_storage_url(), name)
    if not lock.log.exists():
        raise InputError(f"no log for {what} {name} (it never ran in the background)")
    with open(lock.log, errors="replace") as handle:
        for line in handle.readlines()[-lines:] if lines else []:
            click.echo(line, nl=False)
        while follow:
            line = handle.readline()
            if line:
                click.echo(line, nl=False)
                continue
            if lock.owner() is None:
                break
            time.sleep(0.5)
