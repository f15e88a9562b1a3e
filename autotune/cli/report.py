"""`autotune report`: an HTML page with PNG figures of a study, written into one directory."""

from __future__ import annotations

import re

import click

from . import render
from .models import Message
from .options import open_study, storage_option, study_option


def default_dir(study_name: str) -> str:
    """`./autotune-report-<study>`, the name made safe for a path (no `/`, no leading dot)."""
    safe = re.sub(r"[^A-Za-z0-9._+-]+", "_", study_name).lstrip(".") or "study"
    return f"autotune-report-{safe}"


@click.command()
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="directory for index.html and its PNGs (default ./autotune-report-<study>)")
@click.option("--open", "open_page", is_flag=True,
              help="open the page in a web browser (prints its path when there is none)")
@study_option
@storage_option
def report(out_dir: str | None, open_page: bool, study_name: str | None,
           storage: str | None) -> None:
    """An HTML page with figures: default vs best per size, history, knobs, cost."""
    from ..report import write_report

    study = open_study(storage, study_name)
    page = write_report(study, out_dir or default_dir(study.study_name))
    render.emit(Message(f"report written: {page} (open it in a browser; the PNGs beside it)"))
    if open_page:
        import webbrowser

        try:
            opened = webbrowser.open(page.resolve().as_uri())
        except webbrowser.Error:
            opened = False
        if not opened:
            render.emit(Message(f"no web browser found here; open {page.resolve()}"))
