"""The report page's markup parts: its inline CSS, escaping, tables, figures and figures of
speech (speedups, sizes); every string that comes from storage goes through html_escape."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;
max-width:1180px;padding:0 24px 48px;color:#222;line-height:1.45}
h1{font-size:1.6em;margin:24px 0 4px}
h2{border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:36px}
.facts{color:#555;margin:0 0 12px}
.verdict{border-left:6px solid #2e7d32;background:#f1f8f1;padding:10px 18px;margin:16px 0}
.verdict.none{border-color:#757575;background:#f5f5f5}
.verdict.warn{border-color:#c62828;background:#fdf0f0}
.headline{font-size:1.25em;font-weight:600;margin:6px 0}
table{border-collapse:collapse;margin:8px 0 16px;font-size:.92em}
th,td{border:1px solid #ccc;padding:3px 9px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:12px 0 24px}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{color:#444;font-size:.92em;max-width:1000px}
nav ul{columns:3;list-style:none;padding:0}nav a{text-decoration:none}
code{background:#f4f4f4;padding:0 3px}.muted{color:#666}.faster{color:#2e7d32;font-weight:600}
.slower{color:#c62828;font-weight:600}
"""


def html_escape(value: object) -> str:
    return html.escape(str(value), quote=True)


def times_text(value: float | None, digits: int = 3) -> str:
    if value is None or not math.isfinite(value):
        return "\u2013" if value is None else "\u221e"
    return f"{value:.{digits}f}x"


def html_table(header: Sequence[str], rows: Iterable[Sequence[object]],
           numeric: Iterable[int] = (), raw: Iterable[int] = ()) -> str:
    """A table; the columns in `raw` hold HTML their caller made (and escaped) already."""
    numeric, raw = set(numeric), set(raw)

    def text(i: int, value: object) -> str:
        return str(value) if i in raw else html_escape(value)

    head = "".join(f"<th>{text(i, h)}</th>" for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(
        f"<td class=num>{text(i, c)}</td>" if i in numeric else f"<td>{text(i, c)}</td>"
        for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def html_figure(images: Mapping[str, str], key: str, alt: str, caption: str,
            missing: str = "") -> str:
    """The figure with its caption; without it (no data), `missing` says why in words."""
    if key not in images:
        return f"<p class=muted>{html_escape(missing)}</p>" if missing else ""
    return (f'<figure id="fig-{html_escape(key)}"><img src="{html_escape(images[key])}" alt="{html_escape(alt)}">'
            f"<figcaption>{caption}</figcaption></figure>")


def format_size_float(nbytes: float) -> str:
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= factor:
            return f"{nbytes / factor:.1f} {unit}"
    return f"{nbytes:.0f} B"
