"""`autotune report`: a self-contained HTML page with PNG figures of one study.

`_data` (with `_sizes`) computes every figure's data (`_model`) from the study (tested),
`_figures` draws it (matplotlib, Agg), `_html` lays out the page; `write_report` writes the PNGs
and the page into one directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._cost import CostData, SecondsData, SecondsPart, cost_data, node_duration, seconds_data
from ._data import build
from ._model import (CandidateRow, HistoryData, HockneyData, ImportanceData, KnobValues,
                     OverlapData, OverlapSide, ReportData, SizeSpeedup, SpeedupData, StudyFacts,
                     TrialPoint, Verdict)
from ._sizes import study_overlap
from ._space import Count, StudySpace, count_full_grid, count_staged, rebuild_space
from ._markup import CSS, html_escape, html_figure, html_table

if TYPE_CHECKING:
    import optuna

PAGE = "index.html"


def figures(data: ReportData) -> dict[str, tuple[str, bytes]]:
    """Figure key -> (file name, PNG bytes), in page order. A figure without data is not drawn
    (the page says why in words): an empty panel tells a reader nothing."""
    from ..units import is_app_run
    from . import _figures as fig

    out: dict[str, tuple[str, bytes]] = {}
    app = is_app_run(data.facts.sizes)  # an application's study: no message sizes to plot
    if data.curves and not app:
        out["latency"] = ("latency.png", fig.latency(data.curves, data.facts.collective))
        out["throughput"] = ("throughput.png", fig.throughput(
            data.curves, data.cliffs, data.facts.collective, data.hockney.volume))
    if data.speedup is not None and data.speedup.sizes and not app:
        out["speedup"] = ("speedup.png", fig.speedup_by_size(data.speedup))
    out["history"] = ("history.png", fig.history(data.history))
    out["seconds"] = ("seconds.png", fig.seconds(data.seconds, data.facts.nodes))
    if data.importance.importances or data.importance.per_knob:
        out["importance"] = ("importance.png", fig.importance(data.importance))
    if data.hockney.fits and not app:
        out["hockney"] = ("hockney.png", fig.hockney(data.hockney))
    out["cost"] = ("cost.png", fig.cost(data.cost))
    if data.rules is not None and data.rules.rules is not None and any(
            v.mean_us for v in data.rules.variants):
        out["rules"] = ("rules.png", fig.per_size_rules(data.rules))
    return out


def write_report(study: optuna.Study, out_dir: str | Path) -> Path:
    """Write the PNGs and the page into out_dir (created if missing); returns the page's path.
    Each file is written atomically; the page last, so it never shows a missing figure."""
    from ..errors import InputError
    from ..files import check_output_path, write_output_atomically
    from ._html import render

    out = Path(out_dir)
    if out.is_symlink():
        raise InputError(f"report -o {out}: is a symlink; not followed")
    if out.exists() and not out.is_dir():
        raise InputError(f"report -o {out}: exists and is not a directory")
    data = build(study)  # read (and fail on a bad study) before writing anything
    drawn = figures(data)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create report directory {out}: {exc.strerror or exc}") from None
    names = [name for name, _ in drawn.values()] + [PAGE]
    for name in names:
        check_output_path(out / name, "report -o")
    for name, png in drawn.values():
        write_output_atomically(out / name, png, "report -o")
    page = out / PAGE
    write_output_atomically(page, render(data, {k: name for k, (name, _) in drawn.items()}),
                            "report -o")
    return page


__all__ = ["CSS", "CandidateRow", "CostData", "Count", "HistoryData", "HockneyData",
           "ImportanceData", "KnobValues", "OverlapData", "OverlapSide", "PAGE", "ReportData",
           "SecondsData", "SecondsPart", "SizeSpeedup", "SpeedupData", "StudyFacts",
           "StudySpace", "TrialPoint", "Verdict", "build", "cost_data", "count_full_grid",
           "count_staged", "figures", "html_escape", "html_figure", "html_table", "node_duration",
           "rebuild_space", "seconds_data", "study_overlap", "write_report"]
