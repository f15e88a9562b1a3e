"""The report's figures: one function per figure, each taking its data (`_model`) and returning
PNG bytes (matplotlib's Agg backend, no display; common parts in `_axes`). Nothing here computes a
result the page states: the numbers come from `_data`, so tests check them there."""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from ..storage import StoredRules  # noqa: E402
from ..units import format_size  # noqa: E402
from ._axes import (DPI, FASTER, SLOWER, UNCLEAR, empty, launch_range,  # noqa: E402
                    legend_below, per_size_log_log, png, ratio_axis, size_axis, style)
from ._cost import CostData, SecondsData, node_duration  # noqa: E402
from ._curves import CliffRow, ConfigCurve  # noqa: E402
from ._model import HistoryData, HockneyData, ImportanceData, SpeedupData  # noqa: E402
from ._sizes import per_size_ratios  # noqa: E402


def latency(curves: Sequence[ConfigCurve], collective: str) -> bytes:
    """Time per call vs size, log-log, mean over launches with its 95% band."""
    fig, ax = plt.subplots(figsize=(10, 5.6))
    all_sizes: list[int] = []
    for cc, st in zip(curves, style(curves)):
        c = cc.curve
        all_sizes += c.sizes
        ax.plot(c.sizes, c.t_us, marker=st["marker"], ls=st["ls"], color=st["color"], ms=4,
                lw=1.6, label=f"{cc.label} ({launch_range(cc.launches)} launches per size)")
        if c.low_us and c.high_us:
            ax.fill_between(c.sizes, c.low_us, c.high_us, color=st["color"], alpha=0.15, lw=0)
    if not curves:
        empty(ax, "no measured curve")
    else:
        per_size_log_log(ax, all_sizes, "time per call (\u00b5s, max over ranks)")
    ax.set_title(f"{collective} latency: geometric mean over launches, band = 95% CI")
    return png(fig)


def throughput(curves: Sequence[ConfigCurve], cliffs: Sequence[CliffRow], collective: str,
               volume: str) -> bytes:
    """Effective MB/s vs size, log-log, cliffs flagged where the throughput falls."""
    fig, ax = plt.subplots(figsize=(10, 5.6))
    all_sizes: list[int] = []
    styles = dict(zip((cc.label for cc in curves), style(curves)))
    for cc in curves:
        st = styles[cc.label]
        pts = [(s, v, lo, hi) for s, v, lo, hi in zip(cc.curve.sizes, cc.throughput,
                                                       cc.throughput_low, cc.throughput_high)
               if v is not None]
        if not pts:
            continue
        sizes = [p[0] for p in pts]
        all_sizes += sizes
        ax.plot(sizes, [p[1] for p in pts], marker=st["marker"], ls=st["ls"], color=st["color"],
                ms=4, lw=1.6, label=cc.label)
        ax.fill_between(sizes, [p[2] or p[1] for p in pts], [p[3] or p[1] for p in pts],
                        color=st["color"], alpha=0.15, lw=0)
    flagged = False
    for row in cliffs:
        st = styles.get(row.label, {"color": "red"})
        c = row.cliff
        ax.annotate("", xy=(c.after_bytes, c.throughput_after_mb_s),
                    xytext=(c.before_bytes, c.throughput_before_mb_s),
                    arrowprops={"arrowstyle": "->", "color": "red", "lw": 2.2})
        ax.scatter([c.after_bytes], [c.throughput_after_mb_s], s=140, facecolors="none",
                   edgecolors="red", linewidths=1.8, zorder=5,
                   label=None if flagged else "protocol cliff (drop > noise)")
        flagged = True
        ax.text(c.after_bytes, c.throughput_after_mb_s * 0.8, f"-{c.drop:.0%}", color=st["color"],
                fontsize=8, ha="center", va="top")
    if not all_sizes:
        empty(ax, "no throughput (no payload)")
    else:
        per_size_log_log(ax, all_sizes, f"throughput (MB/s of effective bytes, {volume})")
    ax.set_title(f"{collective} throughput = effective bytes / time; red arrows: protocol cliffs")
    return png(fig)


def speedup_by_size(data: SpeedupData | None) -> bytes:
    """Per-size speedup bars with 95% intervals; below, each size's weight and its share of the
    weighted score."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7.4), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    if data is None or not data.sizes:
        empty(top, "no configuration besides the default completed: nothing to compare")
        empty(bottom, "")
        return png(fig)
    rows = data.sizes
    x = list(range(len(rows)))
    colors = [FASTER if r.low > 1 else SLOWER if r.high < 1 else UNCLEAR for r in rows]
    heights = [r.speedup - 1 for r in rows]
    top.bar(x, heights, bottom=1.0, color=colors, width=0.7, edgecolor="0.3", lw=0.5)
    finite_high = [r.high for r in rows if math.isfinite(r.high)]
    cap = max(finite_high + [r.speedup for r in rows]) * 1.1
    err_low = [r.speedup - max(r.low, 1e-3) for r in rows]
    err_high = [(r.high if math.isfinite(r.high) else cap) - r.speedup for r in rows]
    top.errorbar(x, [r.speedup for r in rows], yerr=[err_low, err_high], fmt="none", ecolor="k",
                 capsize=3, lw=1)
    if data.verified:
        index = {r.size: i for i, r in enumerate(rows)}
        vx = [index[s] + 0.25 for s, *_ in data.verified if s in index]
        vs = [(sp, lo, hi) for s, sp, lo, hi in data.verified if s in index]
        top.errorbar(vx, [v[0] for v in vs], yerr=[[v[0] - v[1] for v in vs],
                                                   [v[2] - v[0] for v in vs]],
                     fmt="D", color="tab:cyan", ms=5, capsize=2,
                     label=f"independent check ({data.verified_label})")
        top.legend(loc="best", fontsize=9)
    top.axhline(1.0, color="k", lw=1)
    lows = [max(r.low, 1e-3) for r in rows] + [r.speedup for r in rows]
    ratio_axis(top, min(lows + [1.0]) / 1.15, max([cap, 1.0]) * 1.1)
    top.set_ylabel("speedup over default (x, log)")
    top.grid(True, axis="y", which="both", alpha=0.3)
    top.set_title(f"{data.label}: speedup per size over the paired default, 95% CI")
    weights = [r.weight * 100 for r in rows]
    contrib = [r.contribution * 100 for r in rows]
    bottom.bar([i - 0.2 for i in x], weights, width=0.4, color="0.75")
    bottom.bar([i + 0.2 for i in x], contrib, width=0.4,
               color=[FASTER if c >= 0 else SLOWER for c in contrib])
    bottom.axhline(0, color="k", lw=0.8)
    bottom.set_ylabel("percent / percentage points")
    bottom.legend(handles=[Patch(color="0.75", label="weight of the size (%)"),
                           Patch(color=FASTER, label="adds to the weighted gain"),
                           Patch(color=SLOWER, label="takes from it")],
                  title="contribution = weight x ln(speedup), in percentage points",
                  title_fontsize=8, loc="upper left", fontsize=8, ncol=3)
    bottom.grid(True, axis="y", alpha=0.3)
    bottom.set_xticks(x)
    bottom.set_xticklabels([format_size(r.size) for r in rows], rotation=45, ha="right")
    bottom.set_xlabel("message size")
    fig.tight_layout()
    return png(fig)


def history(data: HistoryData) -> bytes:
    """Speedup per trial (pruned trials marked, failed ones at the bottom), best so far; below,
    the default's drift over the run."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8.2), layout="constrained",
                                      gridspec_kw={"height_ratios": [3, 2]})
    pts = data.points
    valued = [p.speedup for p in pts if p.speedup]
    if not valued:
        empty(top, "no trial finished")
    else:
        floor = min(valued) / 1.6
        groups = (("COMPLETE", "o", "tab:blue", "complete"), ("PRUNED", "x", "tab:orange",
                                                               "pruned (partial speedup)"))
        for state, marker, color, label in groups:
            chosen = [p for p in pts if p.state == state and p.speedup and not p.is_default]
            if chosen:
                top.scatter([p.trial for p in chosen], [p.speedup for p in chosen], marker=marker,
                            color=color, s=36, label=label, zorder=3)
        defaults = [p for p in pts if p.is_default and p.speedup]
        if defaults:
            top.scatter([p.trial for p in defaults], [p.speedup for p in defaults], marker="*",
                        s=140, color="black", label="default (its distance from 1 is noise)",
                        zorder=4)
        failed = [p for p in pts if p.state == "FAIL" and not p.skipped]
        if failed:
            top.scatter([p.trial for p in failed], [floor] * len(failed), marker="v",
                        color="tab:red", s=36, label="failed (MPI refused, crash, timeout)",
                        zorder=3)
        skipped = [p for p in pts if p.state == "FAIL" and p.skipped]
        if skipped:
            top.scatter([p.trial for p in skipped], [floor] * len(skipped), marker="v",
                        color="0.7", s=30, label="skipped: repeated a measured config (no launch)",
                        zorder=3)
        best = [(p.trial, p.best_so_far) for p in pts if p.best_so_far is not None]
        if best:
            top.step([b[0] for b in best], [b[1] for b in best], where="post", color="tab:green",
                     lw=2, label="best so far")
        top.axhline(1.0, color="k", lw=0.8, ls=":")
        ratio_axis(top, floor / 1.2, max(valued + [1.0]) * 1.25)
        top.set_xlabel("trial number")
        top.set_ylabel("speedup over default (log)")
        top.grid(True, which="both", alpha=0.3)
        top.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8, ncol=3,
                   frameon=False)
    top.set_title("optimization history: speedup of each trial over the interleaved default")
    if data.drift:
        for block in sorted({d.block for d in data.drift}):
            chosen = [d for d in data.drift if d.block == block]
            bottom.plot([d.minutes for d in chosen], [d.ratio for d in chosen], marker=".",
                        lw=1, label=f"size block {block + 1}")
        bottom.axhline(1.0, color="k", lw=0.8, ls=":")
        ratios = [d.ratio for d in data.drift]
        ratio_axis(bottom, min(ratios + [1.0]) / 1.15, max(ratios + [1.0]) * 1.15)
        bottom.set_xlabel("minutes since the study started")
        bottom.set_ylabel("default time / its first launch")
        bottom.grid(True, alpha=0.3)
        bottom.legend(loc="best", fontsize=8)
        bottom.set_title("drift of the untuned default over time (why every launch is paired)")
    else:
        empty(bottom, "no default drift recorded")
    return png(fig)


def seconds(data: SecondsData, nodes: int) -> bytes:
    """Benchmark seconds by purpose, horizontal bars labelled with seconds and share."""
    parts = list(data.parts)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.55 * len(parts)))
    total = data.total or 1.0
    y = list(range(len(parts)))[::-1]
    colors = {"full trials": "tab:blue", "pruned trials": "tab:orange", "failed trials": "tab:red",
              "result checks": "tab:purple", "confirmation": "tab:green"}
    ax.barh(y, [p.seconds for p in parts], color=[colors.get(p.label, "0.45") for p in parts],
            hatch=None, edgecolor="0.3", lw=0.5)
    for yi, p in zip(y, parts):
        text = (f"{p.seconds:,.1f} s ({p.seconds / total:.0%}, {p.launches} launches"
                + (", estimated)" if p.estimated else ")"))
        ax.text(p.seconds + total * 0.01, yi, text, va="center", fontsize=9)
    ax.set_yticks(y)
    ax.set_yticklabels([p.label for p in parts])
    ax.set_xlim(0, max([p.seconds for p in parts] + [1e-9]) * 1.55)
    ax.set_xlabel(f"benchmark seconds (wall time of launches; x {nodes} node(s) = node-seconds)")
    ax.set_title(f"where the benchmark time went: {total:,.1f} s in all")
    ax.grid(True, axis="x", alpha=0.3)
    return png(fig)


def importance(data: ImportanceData) -> bytes:
    """fANOVA importance of each knob (left) and best speedup per knob value (small multiples)."""
    knobs = list(data.per_knob)
    ncols = 3
    nrows = 1 + math.ceil(len(knobs) / ncols) if knobs else 1
    fig = plt.figure(figsize=(11, 2.9 + 2.7 * (nrows - 1)))
    grid = fig.add_gridspec(nrows, ncols)
    ax = fig.add_subplot(grid[0, :])
    if data.importances:
        names = [k for k, _ in data.importances][::-1]
        values = [v for _, v in data.importances][::-1]
        ax.barh(names, values, color="tab:blue")
        for i, v in enumerate(values):
            ax.text(v + 0.01, i, f"{v:.0%}", va="center", fontsize=9)
        ax.set_xlim(0, max(values) * 1.2 + 0.05)
        ax.set_xlabel("share of the variance of the trial value explained (fANOVA)")
        ax.set_title("parameter importance (fANOVA over the completed trials)", fontsize=10)
    else:
        empty(ax, f"parameter importance not available: {data.note}")
    every = [v[1] for kv in knobs for v in kv.values]
    xlim = (min(every + [1.0]) - 0.05, max(every + [1.0]) + 0.05) if every else (0.9, 1.1)
    for i, kv in enumerate(knobs):
        sub = fig.add_subplot(grid[1 + i // ncols, i % ncols])
        values = sorted(kv.values, key=lambda v: _value_order(v[0]))
        labels = [v[0] for v in values]
        speeds = [v[1] for v in values]
        sub.barh(range(len(values)), [s - 1 for s in speeds], left=1.0,
                 color=[FASTER if s > 1 else SLOWER for s in speeds])
        sub.set_yticks(range(len(values)))
        sub.set_yticklabels([f"{lab} (n={v[2]})" for lab, v in zip(labels, values)], fontsize=8)
        sub.axvline(1.0, color="k", lw=0.8)
        sub.set_xlim(*xlim)
        sub.invert_yaxis()
        sub.set_title(kv.knob, fontsize=9)
        sub.tick_params(axis="x", labelsize=8)
        sub.set_xlabel("best speedup (x)", fontsize=8)
        sub.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return png(fig)


def _value_order(text: str) -> tuple:
    from ..units import parse_size

    try:
        return (0, float(text))
    except ValueError:
        pass
    try:
        return (1, parse_size(text))
    except Exception:  # noqa: BLE001 - not a size: by text
        return (2, text)


def hockney(data: HockneyData) -> bytes:
    """Measured means and the fitted t = t_L + V/B per region, log-log."""
    fig, ax = plt.subplots(figsize=(10, 5.6))
    curves = [cc for cc, _ in data.fits]
    all_sizes: list[int] = []
    handles = []
    for (cc, fit), st in zip(data.fits, style(curves)):
        c = cc.curve
        all_sizes += c.sizes
        ax.scatter(c.sizes, c.t_us, color=st["color"], marker=st["marker"], s=22, zorder=3)
        for n, region in enumerate(fit.regions):
            xs = [s for s in c.sizes if region.min_bytes <= s <= region.max_bytes]
            dense = _dense(xs)
            ax.plot(dense, [fit.predict_us(int(s)) for s in dense], color=st["color"],
                    ls=st["ls"], lw=1.8, alpha=0.85)
            if n:
                ax.axvline(region.min_bytes, color=st["color"], lw=0.8, ls=":", alpha=0.7)
        handles.append(Line2D([], [], color=st["color"], marker=st["marker"], ls=st["ls"],
                              label=f"{cc.label} ({len(fit.regions)} region"
                                    f"{'s' if len(fit.regions) > 1 else ''})"))
    if not data.fits:
        empty(ax, "too few sizes for a Hockney fit (3 needed)")
    else:
        per_size_log_log(ax, all_sizes, "time per call (\u00b5s)", handles)
    ax.set_title(f"Hockney model t = t_L + V/B per region (V = {data.volume}): points measured, "
                 "lines model,\ndotted: region boundaries")
    return png(fig)


def _dense(xs: Sequence[int]) -> list[float]:
    if len(xs) < 2:
        return [float(x) for x in xs]
    lo, hi = math.log2(xs[0]), math.log2(xs[-1])
    return [2 ** (lo + (hi - lo) * i / 40) for i in range(41)]


def cost(data: CostData) -> bytes:
    """Node-hours of this search against the staged sweep and the full grid (log scale)."""
    fig, ax = plt.subplots(figsize=(10, 3.2))
    rows = [("this search (measured)", data.spent_node_seconds, "tab:blue"),
            (f"staged sweep, estimated ({data.staged} configs)",
             data.staged_seconds * data.nodes, "tab:orange"),
            (f"full grid, estimated ({data.grid} configs)", data.grid_seconds * data.nodes, "tab:red")]
    y = list(range(len(rows)))[::-1]
    values = [max(r[1], 1e-3) for r in rows]
    ax.barh(y, values, color=[r[2] for r in rows])
    for yi, (_, v, _) in zip(y, rows):
        ax.text(v * 1.15, yi, node_duration(v), va="center", fontsize=10)
    ax.set_yticks(y)
    ax.set_yticklabels([r[0] for r in rows])
    ax.set_xscale("log")
    ax.set_xlim(min(values) / 2, max(values) * 8)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.10g}"))
    ax.set_xlabel("benchmark node-seconds (log scale)")
    ax.set_title("cost of the answer: this search vs the manual ways, at this study's launch time")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    return png(fig)


def per_size_rules(rules: StoredRules) -> bytes:
    """Every algorithm's time per size over the best configuration's own, the chosen bands shaded."""
    fig = Figure(figsize=(11, 4.6), dpi=DPI)
    ax = fig.subplots()
    ratios = per_size_ratios(rules)
    for i, variant in enumerate(ratios):
        look = ({"color": "black", "lw": 2.2, "marker": "o"} if variant.incumbent
                else {"color": plt.get_cmap("tab10")(i % 10), "lw": 1.2, "marker": "."})
        ax.plot(variant.sizes, variant.ratios, label=variant.label
                + (" (the best configuration's)" if variant.incumbent else ""), **look)
    assert rules.rules is not None
    sizes = sorted({s for v in ratios for s in v.sizes})
    for k, band in enumerate(rules.rules.bands):
        low = max(band.min_bytes, sizes[0] / 1.5)
        high = band.max_bytes if band.max_bytes is not None else sizes[-1] * 1.5
        ax.axvspan(low, high, color="0.85" if k % 2 == 0 else "0.93", zorder=0)
        ax.text(math.sqrt(low * high), 0.98, band.choice.label(), transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=8)
    size_axis(ax, sizes)
    values = [r for v in ratios for r in v.ratios]
    ratio_axis(ax, max(0.01, min(values) / 1.2), min(100.0, max(values) * 1.2))
    ax.axhline(1.0, color="black", lw=0.6, ls=":")
    ax.set_ylabel("time / the best configuration's algorithm")
    ax.set_title(f"per-size rules: every algorithm over {rules.rounds} interleaved rounds "
                 "(shaded: the chosen bands)")
    legend_below(ax, ncol=3)
    return png(fig)
