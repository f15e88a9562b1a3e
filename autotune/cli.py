"""Command line: argument parsing and rendering only; the work is done by the modules it calls."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__
from .benchmarks.records import COLLECTIVES
from .errors import AutotuneError, InputError
from .session import DEFAULT_SIZES, DEFAULT_SPACE
from .units import format_size, parse_size_range


out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


# ----------------------------------------------------------------------------- helpers


def _sizes_option(_ctx: Any, _param: Any, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return parse_size_range(value)
    except InputError as exc:
        raise click.BadParameter(str(exc)) from None


def _positive_float(_ctx: Any, param: Any, value: float) -> float:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise click.BadParameter(f"must be a positive number, got {value}")
    return value


storage_option = click.option("--storage", metavar="URL", envvar="AUTOTUNE_STORAGE",
                              help="Optuna storage URL (sqlite:///..., postgresql://..., "
                                   "journal:PATH); default: SQLite under $AUTOTUNE_HOME")
study_option = click.option("--study", "study_name", metavar="NAME",
                            help="study name; may be omitted when the storage holds one study")


def _open_study(storage_url: str | None, study_name: str | None):
    from .storage import load_existing_study, open_storage

    storage = open_storage(storage_url)
    return load_existing_study(storage, study_name, storage_url)


# ----------------------------------------------------------------------------- commands


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autotune")
def cli() -> None:
    """Find the fastest MPI runtime configuration for a collective on the nodes you have."""


@cli.command()
@click.option("--collective", type=click.Choice(COLLECTIVES), required=True,
              help="collective to tune")
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True,
              help="nodes per benchmark run")
@click.option("--ppn", type=click.IntRange(min=1), default=None,
              help="ranks per node  [default: usable cores of this node; required with the "
                   "hostfile and ray launchers]")
@click.option("--trials", type=click.IntRange(min=1), default=30, show_default=True,
              help="trials to run in this invocation (a resumed study adds to its trials)")
@click.option("--space", default=DEFAULT_SPACE, show_default=True, metavar="NAME|FILE",
              help="search space: a shipped name (autotune spaces list), a YAML file, or several "
                   "joined with +")
@click.option("--sizes", callback=_sizes_option, metavar="MIN:MAX|LIST",
              help=f"message sizes: powers of two in MIN:MAX or a list (k/m suffixes)  "
                   f"[default: {DEFAULT_SIZES}, or the weights file's sizes]")
@click.option("--weights", "weights_file", metavar="FILE",
              help="YAML/CSV mapping message size -> weight (e.g. from an application profile)")
@click.option("--repetitions", type=click.IntRange(min=3), default=5, show_default=True,
              help="launches per size; the min and max are dropped (trimmed mean)")
@click.option("--stages", type=click.IntRange(min=1), default=2, show_default=True,
              help="size blocks measured in turn, smallest first; pruning can stop after any launch")
@click.option("--time-per-size", type=float, default=0.02, show_default=True,
              callback=_positive_float, help="seconds of timed loop per size and launch")
@click.option("--baseline-every", type=click.IntRange(min=1), default=1, show_default=True,
              help="one launch of the default config per this many candidate launches of a size "
                   "block; each candidate launch is divided by the default launch nearest before it")
@click.option("--prune/--no-prune", default=True, show_default=True,
              help="stop losing configurations early (Wilcoxon test against the best trial)")
@click.option("--prune-after", type=click.IntRange(min=2), default=4, show_default=True,
              help="launches a trial gets before it may be pruned (at p<0.1 the exact test "
                   "needs 4)")
@click.option("--p-threshold", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.1, show_default=True, help="p-value below which a trial is pruned")
@click.option("--oversubscribe", is_flag=True, help="allow more ranks than cores (timings suffer)")
@click.option("--seed", type=int, default=None, help="seed of the sampler and of the size orders")
@click.option("--foreground", is_flag=True,
              help="run in this terminal instead of detaching (progress bar, Ctrl-C stops)")
@click.option("--time-budget", callback=lambda _c, _p, v: parse_duration(v) if v else None,
              metavar="DURATION", help="stop launching when the next trial would end after this "
              "(e.g. 90m, 2h); inside Slurm the job's end time also counts")
@click.option("--timeout-floor", type=float, default=60.0, show_default=True,
              callback=_positive_float,
              help="a launch's deadline is this plus an allowance per size; then it is killed")
@click.option("--infra-pause", type=float, default=300.0, show_default=True,
              callback=_positive_float,
              help="seconds to pause after 5 infrastructure failures in a row")
@click.option("--confirm", "confirm_top", type=click.IntRange(min=0), default=3, show_default=True,
              help="at the end, re-measure the best K against the default with confidence "
                   "intervals (0: no confirmation)")
@click.option("--confirm-rounds", type=click.IntRange(min=2), default=5, show_default=True)
@click.option("--launcher", type=click.Choice(["auto", "local", "hostfile", "slurm", "ray"]),
              default="auto", show_default=True,
              help="how ranks are placed: auto = the Ray cluster of --ray-address, else "
                   "--hostfile, else the Slurm allocation, else the Ray cluster of RAY_ADDRESS, "
                   "else this machine")
@click.option("--hostfile", type=click.Path(dir_okay=False), default=None,
              help="Open MPI hostfile of the nodes to use (the first --nodes of them)")
@click.option("--launch-with", type=click.Choice(["mpirun", "srun"]), default="mpirun",
              show_default=True, help="slurm launcher: start ranks with mpirun or with srun")
@click.option("--parallel", type=click.IntRange(min=1), default=1, show_default=True,
              help="trials at once, each on its own --nodes hosts (concurrent trials share the "
                   "network and disturb each other: keep 1 unless the allocation is large)")
@click.option("--ray-address", default=None, metavar="HOST:PORT",
              help="Ray cluster to run trials on (default: RAY_ADDRESS)")
@click.option("--ray-resource", default="mpi_node", show_default=True,
              help="custom Ray resource that marks the MPI nodes")
@click.option("--ray-head-grace", type=click.FloatRange(min=1), default=30.0, show_default=True,
              help="seconds the Ray head may be unreachable before the run stops (study kept)")
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
@study_option
@storage_option
def start(collective: str, nodes: int, ppn: int | None, trials: int, space: str,
          sizes: tuple[int, ...] | None, weights_file: str | None, repetitions: int, stages: int,
          time_per_size: float, baseline_every: int, prune: bool, prune_after: int,
          p_threshold: float, oversubscribe: bool, seed: int | None, foreground: bool,
          time_budget: float | None, timeout_floor: float, infra_pause: float,
          confirm_top: int, confirm_rounds: int, launcher: str, hostfile: str | None,
          launch_with: str, parallel: int, ray_address: str | None, ray_resource: str,
          ray_head_grace: float,
          launcher_mca: tuple[str, ...],
          new_study: bool, force: bool,
          warm_start: str | None, check_live: bool, study_name: str | None,
          storage: str | None) -> None:
    """Run a tuning study in the background (creates it, or continues it with the same
    arguments); --foreground keeps it in this terminal."""
    from .daemon import StopRequested, StudyLock, detach, install_stop_handlers
    from .session import StartOptions, prepare_session, study_identity

    options = StartOptions(
        collective=collective, nodes=nodes, ppn=ppn, space=space, sizes=sizes,
        weights_file=weights_file, repetitions=repetitions, stages=stages,
        time_per_size=time_per_size, baseline_every=baseline_every, prune=prune,
        prune_after=prune_after, p_threshold=p_threshold, oversubscribe=oversubscribe, seed=seed,
        study_name=study_name, storage=storage, warm_start=warm_start, check_live=check_live,
        time_budget=time_budget, new_study=new_study, force=force, timeout_floor=timeout_floor,
        infra_pause=infra_pause, confirm_top=confirm_top, confirm_rounds=confirm_rounds,
        launcher=launcher, hostfile=hostfile, launch_with=launch_with, parallel=parallel,
        ray_address=ray_address, ray_resource=ray_resource, ray_head_grace=ray_head_grace,
        launcher_mca=tuple(_name_value(item) for item in launcher_mca))
    if not foreground:
        name, url = study_identity(options)
        argv = list(_ARGV)
        if new_study:  # fix the name here so this process can wait for the right study
            import datetime as dt
            name = f"{name}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"
            argv = [a for a in argv if a != "--new-study"] + ["--study", name]
        lock = StudyLock.of(url, name)
        lock.refuse_if_held(name)
        owner = detach(argv, lock)
        out.print(f"study {name} runs in the background: pid {owner.pid} on {owner.host}", markup=False)
        out.print(f"log:    {owner.log}\nwatch:  autotune status --study {shlex.quote(name)}   "
                  f"(or: autotune logs -f)\nstop:   autotune stop --study {shlex.quote(name)}",
                  markup=False)
        return
    install_stop_handlers()
    try:
        session = prepare_session(options)
    except StopRequested:
        err.print("stopped before the first trial")
        return
    try:
        _run_session(session, options, trials, storage)
    finally:
        session.pool.close()
        if session.lock:
            session.lock.release()


def _run_session(session, options, trials: int, storage: str | None) -> None:
    from .progress import ProgressDisplay
    from .storage import redact

    config, plan = session.config, session.plan
    for note in session.notes:
        err.print(f"note: {escape(note)}")
    resumed = f" (resuming: {session.resumed_trials} trials)" if session.resumed_trials else ""
    err.print(f"study [bold]{escape(session.study.study_name)}[/] in "
              f"{escape(redact(storage or '') or 'default storage')}{resumed}, pid {os.getpid()}")
    err.print(f"{config.collective}: {config.nodes} node x {config.ppn} ranks, {len(config.sizes)} sizes "
              f"{format_size(config.sizes[0])}..{format_size(config.sizes[-1])}, "
              f"{config.repetitions} launches per size in {len(plan.blocks())} stages, "
              f"space {escape(session.space_name)} on {session.caps.mpi}, "
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
        import datetime as dt
        err.print(f"time budget: no trial starts that would end after "
                  f"{dt.datetime.fromtimestamp(session.deadline).strftime('%H:%M:%S')}")
    with ProgressDisplay(trials, console=err) as display:
        summary = session.controller(options, display).run(trials, deadline=session.deadline)
    _print_run_summary(session.study, summary)
    if summary.interrupted:
        err.print("stopped: the running trial is marked failed (interrupted) and queued again; "
                  "completed trials are stored")
        return  # a requested stop is a clean exit
    if summary.stopped_because.startswith("time budget"):
        if session.deadline_is_job_end:
            from .session import EXIT_JOB_TIME_UP

            err.print(f"the Slurm job ends before another trial would finish: exit "
                      f"{EXIT_JOB_TIME_UP}, so a job script can requeue itself and resume the study")
            sys.exit(EXIT_JOB_TIME_UP)
    elif summary.stopped_because:
        sys.exit(1)


def _print_run_summary(study, summary) -> None:
    states = [o.state for o in summary.outcomes]
    drifts = [b.drift for b in summary.baselines if b.drift is not None]
    drift = (f", drift {min(drifts):+.3f}..{max(drifts):+.3f} (log-ratio to the first one)"
             if drifts else "")
    err.print(f"this run: {states.count('COMPLETE')} complete, {states.count('PRUNED')} pruned, "
              f"{states.count('FAIL')} failed; {len(summary.baselines)} default-config launches"
              f"{drift}")
    if summary.skipped_known_invalid:
        err.print(f"{summary.skipped_known_invalid} proposals repeated a configuration MPI had "
                  "refused; not launched again")
    if summary.stopped_because and not summary.interrupted:
        err.print(f"[red]stopped early[/]: {escape(summary.stopped_because)}")
    try:
        best = study.best_trial
    except ValueError:
        return
    confirmation = summary.confirmation
    if confirmation is not None:
        which = ("the default configuration (no candidate surely faster)" if confirmation.best_trial
                 is None else f"trial {confirmation.best_trial}")
        err.print(f"confirmed best: {which}")
        err.print(f"export it:   autotune export --study {shlex.quote(study.study_name)} --format env "
                  "-o best.env", markup=False)
        return
    speed = math.exp(-best.value)
    if best.user_attrs.get("is_default"):
        err.print(f"best so far: the default configuration; no candidate beat it (the default "
                  f"measured {speed:.3f}x against its interleaved reference: the noise floor)")
    else:
        err.print(f"best so far: trial {best.number}, speedup {speed:.3f}x over the default")
    err.print(f"export it:   autotune export --study {shlex.quote(study.study_name)} --format env "
              "-o best.env", markup=False)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@study_option
@storage_option
def status(fmt: str, study_name: str | None, storage: str | None) -> None:
    """The daemon (alive, pid, host), trials done/pruned/failed, the running trial, best speedup."""
    from .status import study_status

    info = study_status(_open_study(storage, study_name), storage)
    if fmt == "json":
        click.echo(json.dumps(info.to_dict(), indent=2, default=str))
    else:
        out.print(info.render(), markup=False)


@cli.command()
@click.option("--timeout", type=float, default=30.0, show_default=True,
              help="seconds to wait for the daemon to finish its cleanup")
@study_option
@storage_option
def stop(timeout: float, study_name: str | None, storage: str | None) -> None:
    """Stop a running study gracefully (SIGTERM: the running trial is re-queued)."""
    from .daemon import StudyLock, stop_owner
    from .storage import default_storage_url

    study = _open_study(storage, study_name)
    owner = StudyLock.of(storage or default_storage_url(), study.study_name).owner()
    if owner is None:
        out.print(f"study {study.study_name} is not running", markup=False)
        return
    if stop_owner(owner, timeout):
        out.print(f"stopped study {study.study_name} (pid {owner.pid})", markup=False)
    else:
        raise AutotuneError(f"pid {owner.pid} did not stop within {timeout:.0f} s")


@cli.command()
@click.option("-f", "--follow", is_flag=True, help="keep printing new lines while the study runs")
@click.option("-n", "--lines", type=click.IntRange(min=0), default=40, show_default=True)
@study_option
@storage_option
def logs(follow: bool, lines: int, study_name: str | None, storage: str | None) -> None:
    """Print the study's log (the background run's output)."""
    import time as _time

    from .daemon import StudyLock
    from .storage import default_storage_url

    study = _open_study(storage, study_name)
    lock = StudyLock.of(storage or default_storage_url(), study.study_name)
    path = lock.log
    if not path.exists():
        raise InputError(f"no log for study {study.study_name} (it never ran in the background)")
    with open(path, errors="replace") as handle:
        for line in handle.readlines()[-lines:] if lines else []:
            click.echo(line, nl=False)
        while follow:
            line = handle.readline()
            if line:
                click.echo(line, nl=False)
                continue
            if lock.owner() is None:
                break
            _time.sleep(0.5)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]),
              default="table", show_default=True,
              help="table: one line per trial (pruned: partial speedup in parentheses); "
                   "csv/json/parquet: one row per trial x size")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="write to FILE (required for parquet)")
@study_option
@storage_option
def history(fmt: str, output: str | None, study_name: str | None, storage: str | None) -> None:
    """Every trial with its raw per-size measurements."""
    from .storage import history_frame

    study = _open_study(storage, study_name)
    frame = history_frame(study)
    if fmt == "table":
        _render_history_table(frame)
        return
    if fmt == "parquet":
        if not output:
            raise InputError("--format parquet needs -o FILE")
        try:
            frame.to_parquet(output, index=False)
        except OSError as exc:
            raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
        return
    text = frame.to_csv(index=False) if fmt == "csv" else frame.to_json(orient="records", indent=1,
                                                                        date_format="iso")
    _write(text, output)


def _render_history_table(frame) -> None:
    table = Table(title="trials")
    for column in ("trial", "state", "speedup", "sizes", "launches", "bench s", "params / reason"):
        table.add_column(column)
    if frame.empty:
        out.print("no trials yet")
        return
    params = [c for c in frame.columns if c.startswith("param.")]
    for _, group in frame.groupby("trial", sort=True):
        row = group.iloc[0]
        if _present(row["speedup"]):
            speed = f"{row['speedup']:.3f}x"
        elif _present(row.get("partial_speedup")):
            speed = f"({row['partial_speedup']:.2f}x)"
        else:
            speed = ""
        detail = row["fail_reason"] or " ".join(
            f"{c[6:]}={_plain(row[c])}" for c in params if _present(row[c]))
        state = row["state"] + (" (default)" if row["is_default"] else "")
        table.add_row(str(row["trial"]), state, speed, str(row["sizes_measured"]),
                      str(row["launches"]), f"{row['bench_seconds']:.1f}", escape(str(detail)))
    out.print(table)


def _name_value(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name or not value:
        raise InputError(f"--launcher-mca {item!r}: expected NAME=VALUE")
    return name, value


def parse_duration(text: str) -> float:
    """90s, 45m, 2h, 1h30m, or plain seconds."""
    match = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s?)?\s*", text or "")
    if not match or not any(match.groups()):
        raise click.BadParameter(f"{text!r} is not a duration such as 90m or 2h")
    hours, minutes, seconds = (int(g or 0) for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise click.BadParameter("must be positive")
    return float(total)


def _present(value: Any) -> bool:
    return value is not None and value == value and value != ""  # NaN != NaN


def _plain(value: Any) -> Any:
    """pandas turns integer columns with gaps into floats: show 16384, not 16384.0."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _write(text: str, output: str | None) -> None:
    if output:
        try:
            Path(output).write_text(text)
        except OSError as exc:
            raise InputError(f"cannot write {output}: {exc.strerror}") from None
    else:
        click.echo(text, nl=not text.endswith("\n"))


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@study_option
@storage_option
def best(fmt: str, study_name: str | None, storage: str | None) -> None:
    """The best configuration so far and its measured speedup."""
    from .export import best_config

    cfg = best_config(_open_study(storage, study_name))
    if fmt == "json":
        click.echo(json.dumps({"study": cfg.study, "trial": cfg.trial, "value": cfg.value,
                               "speedup": cfg.speedup, "is_default": cfg.is_default,
                               "params": cfg.params, "env": cfg.env, "mca": cfg.mca,
                               "mpirun_args": list(cfg.mpirun_args)}, indent=2))
        return
    if cfg.is_default:
        out.print(f"study {cfg.study}: the default configuration is the best measured; no candidate "
                  f"beat it (the default measured {cfg.speedup:.3f}x against its interleaved "
                  "reference: the noise floor)", markup=False)
    else:
        out.print(f"study {cfg.study}: best is trial {cfg.trial}, speedup {cfg.speedup:.3f}x over "
                  "the default", markup=False)
    for name, value in cfg.params.items():
        out.print(f"  {name} = {value}", markup=False)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["env"]), default="env", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="write to FILE instead of standard output")
@study_option
@storage_option
def export(fmt: str, output: str | None, study_name: str | None, storage: str | None) -> None:
    """Write the best configuration as a file to `source` (env)."""
    from .export import EXPORTERS, best_config

    _write(EXPORTERS[fmt](best_config(_open_study(storage, study_name))), output)


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def probe(fmt: str) -> None:
    """What this machine offers: MPI, components, UCX transports, NUMA layout, pml ucx."""
    from .probe import probe_capabilities

    caps = probe_capabilities()
    if fmt == "json":
        click.echo(json.dumps(caps.to_dict(), indent=2))
        return
    numa = caps.numa
    lines = [
        f"host:        {caps.host}",
        f"MPI:         {caps.mpi}",
        f"coll:        {', '.join(sorted(caps.components.get('coll', []))) or '-'}",
        f"pml:         {', '.join(sorted(caps.components.get('pml', []))) or '-'}",
        f"btl:         {', '.join(sorted(caps.components.get('btl', []))) or '-'}",
        f"UCX:         {caps.ucx_version or 'not found'}"
        + (f" ({', '.join(caps.ucx_features)})" if caps.ucx_features else ""),
    ]
    for transport, devices in caps.ucx_transports.items():
        lines.append(f"  transport {transport:8s} devices {', '.join(devices)}")
    lines.append(f"NUMA:        {numa.sockets} socket(s), {numa.numa_nodes} NUMA node(s), NPS "
                 f"{numa.nps}, {numa.cores_per_numa} core(s) per NUMA node, {numa.cores} usable")
    if caps.mpi_family == "openmpi":
        if caps.pml_ucx_selected_by_default():
            lines.append("pml ucx:     selected by default")
        elif caps.has_component("pml", "ucx"):
            lines.append(f"pml ucx:     NOT selected by default (pml_ucx_devices="
                         f"{caps.mca_defaults.get('pml_ucx_devices', '?')} matches no device here): "
                         "UCX_* variables are dead unless forced with --mca pml ucx "
                         "--mca pml_ucx_devices any --mca pml_ucx_tls any")
        else:
            lines.append("pml ucx:     not built into this Open MPI")
    out.print("\n".join(lines), markup=False)


@cli.group()
def spaces() -> None:
    """Search spaces: list, show, validate."""


@spaces.command("list")
def spaces_list() -> None:
    """Shipped search spaces."""
    from .space import available_spaces, load_space

    for name in available_spaces():
        space = load_space(name)
        out.print(f"{name:16s} {space.stack:11s} {len(space.parameters):3d} knobs  "
                  f"{space.description}", markup=False)


@spaces.command("show")
@click.argument("name")
def spaces_show(name: str) -> None:
    """Every knob of a space (NAME, FILE or A+B) with how it is applied, its default and source."""
    from .space import load_space

    space = load_space(name)
    table = Table(title=f"{space.name} ({space.stack}): {space.description}", title_justify="left")
    for column in ("knob", "applied as", "default", "choices", "only when", "source"):
        table.add_column(column, overflow="fold")
    for setting in space.fixed:
        value = " ".join(setting.args) if setting.apply == "mpirun" else setting.value
        table.add_row(escape(setting.name), f"{setting.apply} (fixed)", escape(value), "",
                      "every trial", escape(setting.why))
    for p in space.parameters:
        conditions = []
        if p.collectives:
            conditions.append("/".join(p.collectives))
        if p.scope != "any":
            conditions.append(p.scope)
        conditions += [f"{k} in {list(v)}" for k, v in p.when]
        conditions += [f"needs {r}" for r in p.requires]
        if p.yields_to:
            conditions.append(f"unless {' and '.join(p.yields_to)} apply")
        conditions += [f"{c} needs {', '.join(map(str, reqs))}" for c, reqs in p.choice_requires]
        applied = p.apply + (f" ({p.context}, read not set)" if p.apply == "context" else "")
        table.add_row(escape(p.name), applied, escape(str(p.default)), escape(p.describe_choices()),
                      escape("; ".join(conditions)), escape(p.source or p.help))
    for c in space.compose:
        table.add_row(escape(c.name), f"{c.apply} (composed)", "", escape(c.template),
                      "when its parts are active", "")
    out.print(table)


@spaces.command("validate")
@click.argument("path")
def spaces_validate(path: str) -> None:
    """Check a space file (schema, safety); with the installed MPI, show what would be removed."""
    from .probe import probe_capabilities
    from .space import TrialContext, load_space, resolve

    space = load_space(path)
    out.print(f"{path}: valid ({len(space.parameters)} parameters, stack {space.stack})", markup=False)
    caps = probe_capabilities()
    for collective in COLLECTIVES:
        ctx = TrialContext(collective, 1)
        if not any(p.applies_to(ctx) for p in space.parameters):
            continue
        try:
            resolved = resolve(space, caps, ctx)
        except AutotuneError as exc:
            out.print(f"  on this machine: {exc}", markup=False)
            return
        removed = "; ".join(str(r) for r in resolved.removed) or "nothing"
        out.print(f"  {collective} on 1 node here: removed {removed}", markup=False)


# ----------------------------------------------------------------------------- entry point


_ARGV: list[str] = []


def main(argv: list[str] | None = None) -> None:
    """Entry point: every expected error is one line on stderr and a non-zero exit, no traceback."""
    _ARGV[:] = list(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=argv, prog_name="autotune", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        err.print("autotune: aborted")
        sys.exit(130)
    except click.ClickException as exc:
        message = exc.format_message().replace("\n", " ")
        sys.stderr.write(f"autotune: error: {message}\n")
        sys.exit(exc.exit_code)
    except AutotuneError as exc:
        sys.stderr.write(f"autotune: error: {exc}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("autotune: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # a bug or an unforeseen environment problem: still one line
        if os.environ.get("AUTOTUNE_DEBUG"):
            raise
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        sys.stderr.write(f"autotune: internal error: {exc.__class__.__name__}: {first} "
                         "(AUTOTUNE_DEBUG=1 shows the traceback)\n")
        sys.exit(70)
