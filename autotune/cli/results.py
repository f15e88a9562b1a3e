"""`autotune history|best|export`: what a study has measured, and its best configuration."""

from __future__ import annotations

import click

from ..errors import InputError
from ..files import check_output_path, write_output_atomically
from . import render
from .models import BestReport, HistoryTable
from .options import (LazyChoice, LazyHelpOption, format_option, open_study, storage_option,
                      study_option)


def _exporters() -> list[str]:
    from ..export import EXPORTERS

    return list(EXPORTERS)


def _format_help() -> str:
    from ..export import format_help

    return format_help()


def _rules_formats() -> list[str]:
    from ..export import RULES_FORMATS

    return list(RULES_FORMATS)


@click.command()
@format_option("table", "csv", "json", "parquet",
               help="table: one line per trial (pruned: partial speedup in parentheses), a table "
                    "on a terminal and tab-separated lines when piped; csv/json/parquet: one row "
                    "per trial x size")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None,
              help="write to FILE (required for parquet)")
@study_option
@storage_option
def history(fmt: str, output: str | None, study_name: str | None, storage: str | None) -> None:
    """Every trial with its raw per-size measurements."""
    from ..storage import history_frame

    if output:
        check_output_path(output, "history -o")  # refuse before reading the study
    frame = history_frame(open_study(storage, study_name))
    if fmt == "table":
        render.emit(HistoryTable(frame))
        return
    if fmt == "parquet":
        if not output:
            raise InputError("--format parquet needs -o FILE")
        import io

        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        write_output_atomically(output, buffer.getvalue(), "history -o")
        return
    text = (frame.to_csv(index=False) if fmt == "csv"
            else frame.to_json(orient="records", indent=1, date_format="iso"))
    _write(text, output, "history -o")


def _write(text: str, output: str | None, what: str) -> None:
    """To FILE atomically (never through a symlink, never into a FIFO), or to standard output."""
    if output:
        write_output_atomically(output, text, what)
    else:
        render.write_text(text)


@click.command()
@format_option("text", "json")
@study_option
@storage_option
def best(fmt: str, study_name: str | None, storage: str | None) -> None:
    """The best configuration so far and its measured speedup; for a non-blocking collective,
    its overlap per size against the default's (IMB-NBC's t_pure, t_ovrl, t_CPU, overlap)."""
    from ..export import best_config
    from ..report import study_overlap

    study = open_study(storage, study_name)
    best = best_config(study)
    render.emit(BestReport(best, overlap=study_overlap(study, best)), fmt)


@click.command()
@click.option("--format", "fmt", type=LazyChoice(_exporters), default="env", show_default=True,
              cls=LazyHelpOption, help_from=lambda: f"file format ({_format_help()})")
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="write to FILE instead of standard output")
@click.option("--force", is_flag=True,
              help="write the settings even when the independent check (autotune verify) "
                   "disagrees with the search, and per-size rules that were measured but not "
                   "adopted (ompi-rules)")
@click.option("--rules-format", type=LazyChoice(_rules_formats), default=None,
              help="ompi-rules only: classic (every release), v2 (rule-file-version-2, Open MPI "
                   ">= 5.0.7), json (Open MPI >= 6.0); default: the newest the probed version "
                   "reads")
@click.option("--mpich-base", type=click.Path(dir_okay=False), default=None,
              help="mpich-json only: MPICH's own selection file; the tuned collective's branch "
                   "replaces its own (MPICH reads the exported file instead of its built-in one)")
@study_option
@storage_option
def export(fmt: str, output: str | None, force: bool, rules_format: str | None,
           mpich_base: str | None, study_name: str | None, storage: str | None) -> None:
    """Write the best configuration as a file (see --format)."""
    import dataclasses
    import os

    from ..export import ExportOptions, best_config, export_text, reader_hint

    if rules_format and fmt != "ompi-rules":
        raise InputError("--rules-format applies to --format ompi-rules only")
    if mpich_base and fmt != "mpich-json":
        raise InputError("--mpich-base applies to --format mpich-json only")
    if output:
        check_output_path(output, "export -o")  # refuse before reading the study
    path = os.path.abspath(output) if output else None
    best = dataclasses.replace(best_config(open_study(storage, study_name)), force=force)
    text = export_text(fmt, best, ExportOptions(path=path, rules_format=rules_format,
                                                mpich_base=mpich_base))
    _write(text, output, "export -o")
    if best.disagrees:
        click.echo("autotune: warning: the independent check disagrees with the search ("
                   + ("settings written anyway: --force" if force else
                      "the file recommends the untuned stack, its settings commented out; "
                      "--force writes them") + ")", err=True)
    hint = reader_hint(fmt, best, path) if path else None
    if hint:
        click.echo(f"autotune: {hint}", err=True)
