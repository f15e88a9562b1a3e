"""Command line: argument parsing and rendering only; the work is done by the modules it calls."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__
from .benchmarks.records import COLLECTIVES, REDUCTION_ELEMENT_BYTES, REDUCTIONS
from .errors import AutotuneError, EnvironmentProblem, InputError
from .units import format_size, parse_size_range

DEFAULT_SPACE = "openmpi-local"
DEFAULT_SIZES = "8:1m"

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


@dataclass(frozen=True)
class SizesChoice:
    sizes: tuple[int, ...]
    weights: dict[int, float]
    weights_source: str
    dropped: tuple[int, ...]


def choose_sizes(collective: str, sizes: tuple[int, ...] | None,
                 weights_file: str | None) -> SizesChoice:
    """Sizes to measure and their weights, from --sizes and/or an application weights file."""
    from .objective import load_weights, normalize_weights, uniform_weights

    if weights_file:
        file_weights = load_weights(weights_file)
        candidates = sizes if sizes is not None else tuple(sorted(file_weights))
        weights = {s: file_weights.get(s, 0.0) for s in candidates}
        source = f"from {Path(weights_file).name}"
    else:
        candidates = sizes if sizes is not None else parse_size_range(DEFAULT_SIZES)
        weights = uniform_weights(candidates)
        source = "uniform over log2(size)"
    dropped: tuple[int, ...] = ()
    if collective in REDUCTIONS:
        dropped = tuple(s for s in candidates if s < REDUCTION_ELEMENT_BYTES)
        weights = {s: w for s, w in weights.items() if s >= REDUCTION_ELEMENT_BYTES}
    weights = {s: w for s, w in weights.items() if w > 0}
    if not weights:
        raise InputError("no message size left to measure: check --sizes against the weights file"
                         + (" (reductions need sizes >= 4 B)" if dropped else ""))
    return SizesChoice(sizes=tuple(sorted(weights)), weights=normalize_weights(weights),
                       weights_source=source, dropped=dropped)


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
              help="ranks per node  [default: usable cores of this node]")
@click.option("--trials", type=click.IntRange(min=1), default=30, show_default=True,
              help="trials to run in this invocation (a resumed study adds to its trials)")
@click.option("--space", default=DEFAULT_SPACE, show_default=True, metavar="NAME|FILE",
              help="search space: a shipped name, a YAML file, or several joined with +")
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
                   "block; trials are scored against the last --repetitions of them")
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
              help="run in this terminal (today the only mode; the background daemon comes next)")
@study_option
@storage_option
def start(collective: str, nodes: int, ppn: int | None, trials: int, space: str,
          sizes: tuple[int, ...] | None, weights_file: str | None, repetitions: int, stages: int,
          time_per_size: float, baseline_every: int, prune: bool, prune_after: int,
          p_threshold: float, oversubscribe: bool, seed: int | None, foreground: bool,
          study_name: str | None, storage: str | None) -> None:
    """Run a tuning study (creates it, or continues it with the same arguments)."""
    import optuna

    from .controller import Controller, make_pruner, make_sampler
    from .launch import LocalLauncher
    from .measure import MeasurementPlan, Measurer
    from .probe import probe_host
    from .progress import ProgressDisplay
    from .space import load_space
    from .storage import CONFIG_ATTR, StudyConfig, open_storage, redact, stored_config

    search_space = load_space(space)
    chosen = choose_sizes(collective, sizes, weights_file)
    launcher = LocalLauncher()
    host = probe_host()
    if not launcher.mpirun:
        raise EnvironmentProblem("mpirun not found on PATH: install Open MPI "
                                 "(apt-get install openmpi-bin libopenmpi-dev ucx-utils)")
    if nodes > len(launcher.hosts()):
        raise EnvironmentProblem(f"--nodes {nodes} but only {len(launcher.hosts())} host is "
                                 f"available ({launcher.hosts()[0]}, local launcher)")
    ppn = ppn or host.cores
    if ppn > host.cores and not oversubscribe:
        raise EnvironmentProblem(f"--ppn {ppn} exceeds the {host.cores} usable cores of {host.host}; "
                                 "oversubscribed ranks give meaningless timings (--oversubscribe "
                                 "to do it anyway)")
    config = StudyConfig(collective=collective, nodes=nodes, ppn=ppn, space=search_space.name,
                         sizes=chosen.sizes, weights=chosen.weights, repetitions=repetitions,
                         stages=stages, time_per_size=time_per_size,
                         weights_source=chosen.weights_source, space_digest=search_space.digest)
    name = study_name or f"{collective}-{nodes}n{ppn}p-{search_space.name}"
    plan = MeasurementPlan(collective=collective, nodes=nodes, ppn=ppn, sizes=chosen.sizes,
                           repetitions=repetitions, stages=stages, time_per_size=time_per_size)
    store = open_storage(storage)
    try:
        study = optuna.create_study(study_name=name, storage=store, direction="minimize",
                                    sampler=make_sampler(seed),
                                    pruner=make_pruner(prune_after, p_threshold),
                                    load_if_exists=True)
    except Exception as exc:
        raise AutotuneError(f"cannot create study {name!r}: {exc}") from None
    previous = stored_config(study)
    if previous is None:
        study.set_user_attr(CONFIG_ATTR, config.to_dict())
    else:
        diff = previous.differences(config)
        if diff:
            shown = "; ".join(f"{k}: stored {_short(getattr(previous, k))}, now {_short(getattr(config, k))}"
                              for k in diff[:2])
            raise InputError(f"study {name!r} was created with different {', '.join(diff)} "
                             f"({shown}); use --study NAME for a new study")
    if chosen.dropped:
        err.print(f"note: {collective} reduces float32 elements; sizes below 4 B dropped")
    if not foreground:
        err.print("note: the background daemon is not built yet; running in the foreground")
    n_prev = len(study.trials)
    err.print(f"study [bold]{name}[/] in {redact(storage or '') or 'default storage'}"
              f"{f' (resuming: {n_prev} trials)' if n_prev else ''}")
    err.print(f"{collective}: {nodes} node x {ppn} ranks, {len(chosen.sizes)} sizes "
              f"{format_size(chosen.sizes[0])}..{format_size(chosen.sizes[-1])}, "
              f"{repetitions} launches per size in {len(plan.blocks())} stages, "
              f"space {search_space.name} on {host.mpi}, UCX {host.ucx or 'n/a'}")
    measurer = Measurer(plan, launcher, oversubscribe=oversubscribe)
    with ProgressDisplay(trials, console=err) as display:
        controller = Controller(study, search_space, config, measurer, host,
                                baseline_every=baseline_every, prune=prune, seed=seed,
                                events=display)
        summary = controller.run(trials)
    _print_run_summary(study, summary)
    if summary.interrupted:
        err.print("interrupted: the running trial is marked failed; completed trials are stored")
        sys.exit(130)
    if summary.stopped_because:
        sys.exit(1)


def _short(value: Any) -> str:
    if isinstance(value, tuple) and value and all(isinstance(v, int) for v in value):
        return f"{len(value)} sizes {format_size(value[0])}..{format_size(value[-1])}"
    if isinstance(value, dict):
        return f"{len(value)} weights"
    return repr(value)


def _print_run_summary(study, summary) -> None:
    states = [o.state for o in summary.outcomes]
    drifts = [b.drift for b in summary.baselines if b.drift is not None]
    drift = (f", drift {min(drifts):+.3f}..{max(drifts):+.3f} (log-ratio to the first one)"
             if drifts else "")
    err.print(f"this run: {states.count('COMPLETE')} complete, {states.count('PRUNED')} pruned, "
              f"{states.count('FAIL')} failed; {len(summary.baselines)} default-config launches"
              f"{drift}")
    if summary.stopped_because:
        err.print(f"[red]stopped early[/]: {escape(summary.stopped_because)}")
    try:
        best = study.best_trial
    except ValueError:
        return
    speed = math.exp(-best.value)
    if best.user_attrs.get("is_default"):
        err.print(f"best so far: the default configuration; no candidate beat it (the default "
                  f"measured {speed:.3f}x against its interleaved reference: the noise floor)")
    else:
        err.print(f"best so far: trial {best.number}, speedup {speed:.3f}x over the default")
    err.print(f"export it:   autotune export --study {study.study_name} --format env -o best.env")


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@study_option
@storage_option
def status(fmt: str, study_name: str | None, storage: str | None) -> None:
    """Trials done, pruned and failed; best speedup; baseline drift."""
    from .status import study_status

    info = study_status(_open_study(storage, study_name))
    if fmt == "json":
        click.echo(json.dumps(info.to_dict(), indent=2, default=str))
    else:
        out.print(info.render())


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
        frame.to_parquet(output, index=False)
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
                      str(row["launches"]), f"{row['bench_seconds']:.1f}", detail)
    out.print(table)


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
    which = "the default configuration" if cfg.is_default else f"trial {cfg.trial}"
    out.print(f"study {cfg.study}: best is {which}, speedup {cfg.speedup:.3f}x over the default")
    for name, value in cfg.params.items():
        out.print(f"  {name} = {value}")


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


# ----------------------------------------------------------------------------- entry point


def main(argv: list[str] | None = None) -> None:
    """Entry point: every expected error is one line on stderr and a non-zero exit, no traceback."""
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
