"""The one place that prints command results, as text or as JSON.

Text: a table is drawn with rich when standard output is a terminal; when it is not (a pipe, a
file) the same table is tab-separated values: a header line, then one record per line, no
wrapping, no box drawing, no color, an empty cell shown as `-`. Everything else is plain lines,
never wrapped (the terminal wraps them). JSON: one document, indented, on standard output (its
form is render_json's)."""

from __future__ import annotations

import json
import math
import shlex
import sys
from dataclasses import dataclass
from functools import singledispatch
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from ..errors import InputError
from .models import (
    BackgroundStart,
    BestReport,
    CampaignStatusReport,
    HistoryTable,
    Message,
    ProbeReport,
    SpaceDetail,
    SpaceList,
    SpaceValidation,
    StatusReport,
    VerifyReport,
)
from .render_json import conditions, to_json

# progress and narration of a foreground run; soft_wrap: a long line stays one line in a log file
err = Console(stderr=True, highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    title: str = ""  # shown above the table on a terminal only


def emit(result: Any, fmt: str = "text", output: str | None = None) -> None:
    """Print `result` (a models.* object) as `text` or `json`."""
    if fmt == "json":
        write_text(json.dumps(to_json(result), indent=2, default=str) + "\n", output)
        return
    for block in to_text(result):
        if isinstance(block, Table):
            print_table(block)
        else:
            click.echo(block)


def write_text(text: str, output: str | None = None) -> None:
    """Write to FILE, or to standard output when no file is given."""
    if output:
        try:
            Path(output).write_text(text)
        except OSError as exc:
            raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        click.echo(text, nl=not text.endswith("\n"))


def print_table(table: Table) -> None:
    if sys.stdout.isatty():
        drawn = RichTable(title=table.title or None, title_justify="left")
        for column in table.columns:
            drawn.add_column(escape(column), overflow="fold")  # a long word is folded, never cut
        for row in table.rows:
            drawn.add_row(*(Text(cell) for cell in row))
        Console(highlight=False).print(drawn)
        return
    click.echo("\t".join(table.columns))
    for row in table.rows:
        click.echo("\t".join(_cell(cell) for cell in row))


def _cell(value: str) -> str:
    text = " ".join(str(value).split("\t")).replace("\r", " ").replace("\n", " ").strip()
    return text or "-"


# ----------------------------------------------------------------------------- text


@singledispatch
def to_text(result: Any) -> list[str | Table]:
    raise TypeError(f"no text form for {type(result).__name__}")


@to_text.register
def _(result: Message) -> list[str | Table]:
    return [result.text]


@to_text.register
def _(result: StatusReport) -> list[str | Table]:
    return [result.status.render()]


@to_text.register
def _(result: SpaceList) -> list[str | Table]:
    rows = tuple((s.name, s.stack, str(len(s.parameters)), s.description) for s in result.spaces)
    return [Table(("space", "stack", "knobs", "description"), rows)]


@to_text.register
def _(result: SpaceDetail) -> list[str | Table]:
    space = result.space
    rows = []
    for setting in space.fixed:
        value = " ".join(setting.args) if setting.apply == "mpirun" else setting.value
        rows.append((setting.name, f"{setting.apply} (fixed)", value, "", "every trial",
                     setting.why))
    for p in space.parameters:
        applied = p.apply + (f" ({p.context}, read not set)" if p.apply == "context" else "")
        rows.append((p.name, applied, str(p.default), p.describe_choices(),
                     "; ".join(conditions(p)), p.source or p.help))
    for c in space.compose:
        rows.append((c.name, f"{c.apply} (composed)", "", c.template, "when its parts are active",
                     ""))
    return [Table(("knob", "applied as", "default", "choices", "only when", "source"), tuple(rows),
                  title=f"{space.name} ({space.stack}): {space.description}")]


@to_text.register
def _(result: SpaceValidation) -> list[str | Table]:
    head = f"{result.path}: valid ({len(result.parameters)} parameters, stack {result.stack})"
    lines: list[str | Table] = [head]
    for collective, removed in result.removed:
        lines.append(f"  {collective} on 1 node here: removed {'; '.join(removed) or 'nothing'}")
    if result.machine_error:
        lines.append(f"  on this machine: {result.machine_error}")
    return lines


@to_text.register
def _(result: ProbeReport) -> list[str | Table]:
    caps = result.caps
    numa = caps.numa

    def listed(framework: str) -> str:
        return ", ".join(sorted(caps.components.get(framework, []))) or "-"

    lines: list[str | Table] = [
        f"host:        {caps.host}",
        f"MPI:         {caps.mpi}",
        f"coll:        {listed('coll')}",
        f"pml:         {listed('pml')}",
        f"btl:         {listed('btl')}",
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
            devices = caps.mca_defaults.get("pml_ucx_devices", "?")
            lines.append(f"pml ucx:     NOT selected by default (pml_ucx_devices={devices} "
                         "matches no device here): "
                         "UCX_* variables are dead unless forced with --mca pml ucx "
                         "--mca pml_ucx_devices any --mca pml_ucx_tls any")
        else:
            lines.append("pml ucx:     not built into this Open MPI")
    for family in (caps.mpi_family, *(other.mpi_family for other in result.others)):
        named = result.spaces.get(family, ())
        if named:
            lines.append(f"spaces:      {', '.join(named)} for {names_of(family, result)}")
    for other in result.others:
        lines.append(f"also here:   {other.mpi} ({len(other.cvars)} control variables in "
                     f"mpivars); a space for it (--space) runs it")
    return lines


def names_of(family: str, result: ProbeReport) -> str:
    return next(c.mpi for c in (result.caps, *result.others) if c.mpi_family == family)


@to_text.register
def _(result: BestReport) -> list[str | Table]:
    cfg = result.best
    if cfg.is_default:
        head = (f"study {cfg.study}: the default configuration is the best measured; no candidate "
                "beat it")
    elif cfg.confirmed_speedup is not None:
        from ..claims import interval_text

        speedup, low, high = cfg.confirmed_speedup
        interval = interval_text(cfg.confidence, cfg.confirmed_family, low, high,
                                 cfg.confirmed_systematic, cfg.confirmed_systematic_note)
        head = (f"study {cfg.study}: best is trial {cfg.trial}, confirmed speedup {speedup:.3f}x "
                f"({interval}) over the default")
    else:
        head = (f"study {cfg.study}: best is trial {cfg.trial}, speedup {cfg.speedup:.3f}x over "
                "the default")
    lines: list[str | Table] = [head]
    from ..units import is_app_run

    if cfg.config is not None and is_app_run(cfg.config.sizes):  # an application's study
        lines.append(f"measured: {cfg.config.benchmark}")
    lines += [f"  {name} = {value}" for name, value in cfg.params.items()]
    from ..claims import trust_lines

    lines += trust_lines(cfg.claimed, cfg.verification, cfg.noise)
    if cfg.disagrees:
        lines.append("the export recommends the untuned stack (its settings commented out; "
                     "`autotune export --force` writes them)")
    if result.overlap is not None:
        lines += overlap_lines(result.overlap)
    return lines


def overlap_lines(overlap: Any) -> list[str | Table]:
    """A non-blocking collective's overlap per size (report.OverlapData): one table, a column
    group per configuration (the default, the best)."""
    from ..units import format_size

    sides = [s for s in (overlap.default, overlap.best) if s is not None]
    if not sides:
        return ["overlap per size: no launch stored IMB-NBC's columns"]
    columns = ["size"]
    for side in sides:
        tag = "default" if side is overlap.default else "best"
        columns += [f"{tag} t_pure", f"{tag} t_ovrl", f"{tag} t_CPU", f"{tag} overlap%"]
    rows = []
    for size in overlap.sizes:
        row = [format_size(size)]
        for side in sides:
            r = side.row(size)
            row += (["", "", "", ""] if r is None else
                    [f"{r.t_pure_us:.2f}", f"{r.t_ovrl_us:.2f}", f"{r.t_cpu_us:.2f}",
                     f"{r.overlap_pct:.1f}"])
        rows.append(tuple(row))
    title = ("overlap per size (IMB-NBC's method; us, trimmed mean over launches): "
             + " vs ".join(side.label for side in sides))
    return [title, Table(tuple(columns), tuple(rows), title="")]


@to_text.register
def _(result: VerifyReport) -> list[str | Table]:
    from ..units import size_label

    check = result.verification
    rows = tuple((size_label(s.size), f"{s.speedup:.3f}x",
                  f"{s.speedup_interval[0]:.3f}x..{s.speedup_interval[1]:.3f}x")
                 for s in check.sizes)
    lines: list[str | Table] = []
    if rows:
        lines.append(Table(("size", "speedup", "95% CI"), rows,
                           title=f"study {result.study}: trial {check.trial} against the untuned "
                                 f"stack, {check.benchmark}"))
    lines.append(check.describe())
    return lines


@to_text.register
def _(result: HistoryTable) -> list[str | Table]:
    frame = result.frame
    if frame.empty:
        return ["no trials yet"]
    params = [c for c in frame.columns if c.startswith("param.")]
    rows = []
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
        rows.append((str(row["trial"]), state, speed, str(row["sizes_measured"]),
                     str(row["launches"]), f"{row['bench_seconds']:.1f}", str(detail)))
    return [Table(("trial", "state", "speedup", "sizes", "launches", "bench s", "params / reason"),
                  tuple(rows), title="trials")]


def _present(value: Any) -> bool:
    is_nan = isinstance(value, float) and math.isnan(value)
    return value is not None and value != "" and not is_nan


def _plain(value: Any) -> Any:
    """pandas turns integer columns with gaps into floats: show 16384, not 16384.0."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


@to_text.register
def _(result: BackgroundStart) -> list[str | Table]:
    name = shlex.quote(result.study)
    if result.what == "campaign":
        return [f"campaign {result.study} runs in the background: pid {result.pid} on "
                f"{result.host}",
                f"log:    {result.log}",
                f"watch:  autotune campaign status --name {name}   (or: autotune campaign logs)",
                f"stop:   autotune campaign stop --name {name}"]
    return [f"study {result.study} runs in the background: pid {result.pid} on {result.host}",
            f"log:    {result.log}",
            f"watch:  autotune status --study {name}   (or: autotune logs -f)",
            f"stop:   autotune stop --study {name}"]


# ----------------------------------------------------------------------------- campaigns


def _speedup_cell(case) -> str:
    if case.speedup is None:
        return "-"
    if case.speedup_ci is not None:
        low, high = case.speedup_ci
        return f"{case.speedup:.3f}x ({low:.3f}..{high:.3f})"
    if case.best_is_default:
        return "default"
    return f"{case.speedup:.3f}x (search, unconfirmed)"


@to_text.register
def _(result: CampaignStatusReport) -> list[str | Table]:
    status = result.status
    running = (f"running: pid {status.pid} on {status.host}" if status.alive else "not running")
    counts = ", ".join(f"{status.count(s)} {s}" for s in ("done", "running", "partial", "waiting",
                                                          "left") if status.count(s))
    rows = tuple((c.case.label, c.state, str(c.trials), _speedup_cell(c),
                  f"{c.bench_node_seconds / 60:.1f}",
                  ("neighbours agreed; " if c.agreed else "") + (c.detail or "-"))
                 for c in status.cases)
    return [f"campaign {status.name} ({status.storage}): {running}; {counts}",
            Table(("case", "state", "trials", "speedup over untuned (95% CI)", "node-min",
                   "notes"), rows)]
