"""The report figures' common parts: styles, the size and ratio axes, PNG output (matplotlib's
Agg backend, no display)."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

from ._curves import ConfigCurve  # noqa: E402


DPI = 100
ROLE_STYLE = {"default": {"color": "black", "marker": "o", "ls": "-"},
              "best": {"color": "tab:blue", "marker": "s", "ls": "-"}}
CANDIDATE_COLORS = ("tab:orange", "tab:purple", "tab:brown", "tab:olive")
FASTER, SLOWER, UNCLEAR = "tab:green", "tab:red", "0.6"


def style(curves: Sequence[ConfigCurve]) -> list[dict]:
    styles, n = [], 0
    for cc in curves:
        if cc.role in ROLE_STYLE:
            styles.append(ROLE_STYLE[cc.role])
        else:
            styles.append({"color": CANDIDATE_COLORS[n % len(CANDIDATE_COLORS)], "marker": "^",
                           "ls": "--"})
            n += 1
    return styles


def png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def short_size(size: float, _pos: object = None) -> str:
    """Compact axis labels: 8, 1K, 64K, 1M (the axis title says bytes)."""
    size = int(round(size))
    for unit, factor in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def size_axis(ax, sizes: Sequence[int]) -> None:  # noqa: ANN001
    """Log2 x axis with a tick per measured size (every other one when crowded)."""
    ax.set_xscale("log", base=2)
    ticks = sorted(set(sizes))
    step = max(1, math.ceil(len(ticks) / 12))
    ax.xaxis.set_major_locator(FixedLocator(ticks[::step]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(short_size))
    ax.set_xlabel("message size (bytes)")


def plain_log_y(ax) -> None:  # noqa: ANN001
    """Log y axis labelled 1, 10, 100 rather than 10^0, 10^1 (read at a glance, units in label)."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.10g}"))


RATIO_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10, 20, 50, 100)


def ratio_axis(ax, low: float, high: float) -> None:  # noqa: ANN001
    """Log y axis of ratios with readable ticks (0.5x, 1x, 2x ...) over [low, high]."""
    ax.set_yscale("log")
    ax.set_ylim(low, high)
    ticks = [t for t in RATIO_TICKS if low <= t <= high]
    if len(ticks) > 9:
        ticks = [t for t in ticks if t in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50,
                                          100)] or ticks
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}x"))


def legend_below(ax, ncol: int = 2, handles: list | None = None) -> None:  # noqa: ANN001
    """Legend under the axes: it never hides a curve."""
    ax.legend(**({"handles": handles} if handles else {}), loc="upper center",
              bbox_to_anchor=(0.5, -0.14), ncol=ncol, fontsize=9, frameon=False)


def per_size_log_log(ax, sizes: Sequence[int], ylabel: str,  # noqa: ANN001
                      handles: list | None = None) -> None:
    """The axes of a per-size log-log figure: sizes, plain log y, grid, legend below."""
    size_axis(ax, sizes)
    plain_log_y(ax)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    legend_below(ax, handles=handles)


def empty(ax, text: str) -> None:  # noqa: ANN001
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=11, color="0.3",
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def launch_range(counts: Sequence[int]) -> str:
    low, high = min(counts, default=0), max(counts, default=0)
    return str(low) if low == high else f"{low}-{high}"
