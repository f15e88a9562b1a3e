"""The campaign report: one self-contained page (the same style as a study's report) with two
PNGs beside it, and each case's own report in a subdirectory named by the case."""

from __future__ import annotations

from pathlib import Path

from ..report import CSS, html_escape, html_figure, html_table, node_duration
from ._report import CampaignReportData, CaseRow, build_campaign

PAGE = "index.html"
PAGE_CSS = "body{max-width:1400px}#winners+p+table{font-size:.85em}"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _png(fig) -> bytes:  # noqa: ANN001
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return buffer.getvalue()


def gain_figure(rows: tuple[CaseRow, ...]) -> bytes:
    """Each case's speedup over the untuned stack: a point, its confirmed interval as a bar."""
    plt = _plt()
    shown = [r for r in rows if r.status.speedup is not None]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(shown) + 2), 3.6))
    for xi, row in enumerate(shown):
        s = row.status
        color = "tab:green" if row.has_winner else "tab:gray"
        if s.speedup_ci is not None:
            low, high = s.speedup_ci
            ax.errorbar([xi], [s.speedup], yerr=[[s.speedup - low], [high - s.speedup]],
                        color=color, capsize=6, lw=1.6, marker="o", ms=7)
        else:
            ax.plot([xi], [s.speedup], marker="o", ms=7, color=color)
    ax.axhline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yscale("log")
    low = min([r.status.speedup_ci[0] for r in shown if r.status.speedup_ci] +
              [r.status.speedup for r in shown] + [1.0])
    high = max([r.status.speedup_ci[1] for r in shown if r.status.speedup_ci] +
               [r.status.speedup for r in shown] + [1.0])
    ax.set_ylim(low / 1.1, high * 1.1)
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.2f}x"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _p: f"{v:.2f}x"))
    ax.set_xticks(list(range(len(shown))))
    ax.set_xticklabels([r.case.label for r in shown], rotation=30, ha="right")
    ax.set_xlim(-0.6, len(shown) - 0.4)
    ax.set_ylabel("speedup over the untuned stack")
    ax.set_title("gain per case (green: a confirmed winner, with its 95% interval; grey: the "
                 "untuned stack stays)", fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return _png(fig)


def cost_figure(rows: tuple[CaseRow, ...]) -> bytes:
    """Benchmark node-seconds per case: spent vs the staged sweep vs the full grid (log)."""
    plt = _plt()
    shown = [r for r in rows if r.spent_node_seconds > 0]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(shown) + 2), 3.8))
    width = 0.27
    series = (("spent (measured)", "spent_node_seconds", "tab:blue"),
              ("staged sweep, estimated", "staged_node_seconds", "tab:orange"),
              ("full grid, estimated", "grid_node_seconds", "tab:red"))
    for i, (label, attr, color) in enumerate(series):
        values = [max(getattr(r, attr) or 0.0, 1e-3) for r in shown]
        ax.bar([j + (i - 1) * width for j in range(len(shown))], values, width, label=label,
               color=color)
    ax.set_yscale("log")
    ax.set_xticks(list(range(len(shown))))
    ax.set_xticklabels([r.case.label for r in shown], rotation=30, ha="right")
    ax.set_ylabel("benchmark node-seconds (log)")
    ax.set_title("cost per case, priced at each case's own measured launch time", fontsize=10)
    ax.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    return _png(fig)


def _speedup_text(row: CaseRow) -> str:
    s = row.status
    if s.speedup is None:
        return "\u2013"
    if s.speedup_ci is not None:
        return f"{s.speedup:.3f}x ({s.speedup_ci[0]:.3f}..{s.speedup_ci[1]:.3f})"
    return "untuned stays" if s.best_is_default else f"{s.speedup:.3f}x (unconfirmed)"


def _seconds(value: float | None) -> str:
    return "\u2013" if value is None else node_duration(value)


def cost_line(data: CampaignReportData) -> str:
    """The campaign's benchmark time against the manual ways, in one sentence."""
    spent, staged, grid = (data.total(a) for a in ("spent_node_seconds", "staged_node_seconds",
                                                   "grid_node_seconds"))
    return (f"{_seconds(spent)} of benchmark time spent; the manual staged sweep over the "
            f"same spaces would take an estimated {_seconds(staged)}, the full grid "
            f"{_seconds(grid)}" + (f" ({staged / spent:.1f}x and {grid / spent:,.0f}x what was "
                                   "spent)" if spent and staged and grid else "") + ".")


def render(data: CampaignReportData, images: dict[str, str]) -> str:
    rows = data.rows
    knobs = len(data.knobs)
    winners = html_table(
        ("case", "state", "trials", *[html_escape(k).replace("_", "_<wbr>") for k in data.knobs],
         "per-size rules", "speedup over untuned (95% CI)", "independent check", "report"),
        [(r.case.label, r.status.state, r.status.trials,
          *[html_escape(r.winner.get(k, "\u00b7")) for k in data.knobs], r.rules or "\u00b7",
          _speedup_text(r), r.check or "\u2013",
          f'<a href="{html_escape(r.link)}">report</a>' if r.link else "\u2013") for r in rows],
        numeric=(2,), raw=(*range(3, 3 + knobs), 6 + knobs))  # long knob names wrap at "_"
    cost_rows = [(r.case.label, r.launches, _seconds(r.spent_node_seconds),
                  f"{_seconds(r.staged_node_seconds)} ({r.staged_configs or 0} configs)",
                  f"{_seconds(r.grid_node_seconds)} ({r.grid_configs or 0:,} configs)",
                  r.warm_queued, "yes" if r.status.agreed else "")
                 for r in rows if r.staged_node_seconds is not None]
    totals = f"<p><b>Whole campaign:</b> {html_escape(cost_line(data))}</p>"
    if data.patterns:
        pattern_rows = [(p.knob, p.value, f"{len(p.cases)} of {p.winners}", ", ".join(p.cases))
                        for p in data.patterns]
        patterns = html_table(("knob", "value", "winners setting it", "cases"), pattern_rows)
    else:
        patterns = "<p class=muted>No knob value is shared by two winners.</p>"
    notes = "".join(f"<p class=muted>{html_escape(n)}</p>" for n in data.notes)
    counts = {}
    for r in rows:
        counts[r.status.state] = counts.get(r.status.state, 0) + 1
    facts = (f"{len(rows)} cases in {html_escape(data.storage)}: "
             + ", ".join(f"{n} {html_escape(s)}" for s, n in sorted(counts.items())) + ".")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>autotune campaign {html_escape(data.name)}</title><style>{CSS}{PAGE_CSS}</style>"
            "</head><body>"
            f"<h1>autotune campaign {html_escape(data.name)}</h1><p class=facts>{facts}</p>{notes}"
            "<h2 id=winners>Winners</h2><p>The configuration each case hands out (what "
            "<code>autotune export</code> writes), as the knobs it changes from the untuned stack "
            "(\u00b7: left as it is), and its speedup over the untuned stack measured in the same "
            "allocation, confirmed in interleaved rounds.</p>" + winners
            + html_figure(images, "gain", "speedup per case", "Speedup over the untuned stack per "
                      "case with its simultaneous 95% interval.")
            + "<h2 id=patterns>Patterns across cases</h2><p>Knob values the confirmed winners "
              "share: a value set by most winners is a candidate site default.</p>" + patterns
            + "<h2 id=cost>Cost</h2>" + totals
            + html_table(("case", "launches", "spent", "staged sweep (estimated)",
                      "full grid (estimated)", "warm-start configs", "neighbours agreed"),
                     cost_rows, numeric=(1, 5))
            + html_figure(images, "cost", "cost per case", "Benchmark node-seconds per case: what "
                      "the search spent (measured) against the staged sweep and the full grid of "
                      "the same space, each priced at the case's own mean launch time.")
            + "<p class=muted>Made by <code>autotune campaign report</code> from the storage; "
              "each case's own report is linked in the winners table.</p></body></html>\n")


def write_campaign_report(storage_url: str | None, name: str, out_dir: str | Path,
                          cases: bool = True) -> tuple[Path, CampaignReportData]:
    """The page, its figures and (with `cases`) every started case's report in DIR/<case>/."""
    import dataclasses

    import optuna

    from ..errors import InputError
    from ..files import check_output_path, write_output_atomically
    from ..report import write_report

    out = Path(out_dir)
    if out.is_symlink():
        raise InputError(f"campaign report -o {out}: is a symlink; not followed")
    data = build_campaign(storage_url, name)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create report directory {out}: {exc.strerror or exc}") from None
    if cases:
        from ..storage import open_storage

        store = open_storage(storage_url, create=False)
        linked = []
        for row in data.rows:
            if row.spent_node_seconds > 0:
                study = optuna.load_study(study_name=row.study, storage=store)
                write_report(study, out / row.case.label)
                row = dataclasses.replace(row, link=f"{row.case.label}/{PAGE}")
            linked.append(row)
        data = dataclasses.replace(data, rows=tuple(linked))
    images = {}
    for key, draw in (("gain", gain_figure), ("cost", cost_figure)):
        if any(r.status.speedup is not None for r in data.rows) if key == "gain" else any(
                r.spent_node_seconds > 0 for r in data.rows):
            name_png = f"campaign-{key}.png"
            check_output_path(out / name_png, "campaign report -o")
            write_output_atomically(out / name_png, draw(data.rows), "campaign report -o")
            images[key] = name_png
    page = out / PAGE
    check_output_path(page, "campaign report -o")
    write_output_atomically(page, render(data, images), "campaign report -o")
    return page, data
