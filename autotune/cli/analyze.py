"""`autotune analyze FILE...`: Hockney fits and protocol cliffs of IMB outputs a user already has.

The result types and their text/JSON forms live here (registered with `render`), so the command
prints like the others: rich tables on a terminal, tab-separated when piped, `--format json`.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from ..errors import InputError
from ..units import format_size
from . import render
from .options import LazyChoice, format_option

if TYPE_CHECKING:
    from ..analysis import Cliff, HockneyFit, ImbCurve


@dataclass(frozen=True)
class TableAnalysis:
    """One IMB table (benchmark x #processes): its curve, Hockney fit and cliffs."""

    imb: ImbCurve
    collective: str
    volume: str  # "2M", "M*np", ...
    throughput: tuple[float | None, ...]
    fit: HockneyFit
    cliffs: tuple[Cliff, ...]
    noise: float


@dataclass(frozen=True)
class AnalyzeReport:
    tables: tuple[TableAnalysis, ...]
    notes: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()  # files with no IMB table, each with why


def _collectives() -> tuple[str, ...]:
    from ..analysis import COLLECTIVE_NAMES

    return ("auto", *(name for name in COLLECTIVE_NAMES if name != "barrier"))


def _noise(_ctx: Any, _param: Any, value: str | None) -> float | None:
    if value is None:
        return None
    text = value.strip()
    try:
        noise = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a fraction such as 0.05 or 5%") from None
    if not (math.isfinite(noise) and 0 < noise < 1):
        raise click.BadParameter(f"{value!r}: the noise must be between 0 and 1 (or 0% and 100%)")
    return noise


@click.command()
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--collective", default="auto", show_default=True, type=LazyChoice(_collectives),
              help="the collective whose effective bytes give the throughput (allreduce 2M, "
                   "allgather M*np, ...); auto: from each table's benchmark name")
@click.option("--noise", callback=_noise, metavar="F",
              help="relative noise a throughput drop must exceed to be a cliff, and the scale of "
                   "the Hockney region search (default 5%: IMB prints no confidence band)")
@click.option("--latency", type=click.Choice(("avg", "max")), default="avg", show_default=True,
              help="IMB-MPI1 column: t_avg (mean over ranks) or t_max (slowest rank); IMB-NBC "
                   "tables always use t_pure")
@click.option("--max-regions", type=click.IntRange(1, 5), default=3, show_default=True,
              help="most protocol regions one Hockney fit may have")
@format_option("text", "table", "json",
               help="text (or table): tables on a terminal, tab-separated lines when piped")
def analyze(files: tuple[str, ...], collective: str, noise: float | None, latency: str,
            max_regions: int, fmt: str) -> None:
    """Hockney model (t_L, B, M_half per protocol region) and throughput cliffs of IMB-MPI1 /
    IMB-NBC outputs, also when the IMB table is embedded in other text."""
    report = analyze_files(files, collective, noise, latency, max_regions)
    render.emit(report, "json" if fmt == "json" else "text")
    if report.unreadable:  # the others were analyzed; the run still failed
        for reason in report.unreadable:
            click.echo(f"autotune: error: {reason}", err=True)
        sys.exit(InputError.exit_code)


def analyze_files(files: tuple[str, ...], collective: str = "auto", noise: float | None = None,
                  latency: str = "avg", max_regions: int = 3) -> AnalyzeReport:
    from ..analysis import read_imb_file

    tables: list[TableAnalysis] = []
    notes: list[str] = []
    unreadable: list[str] = []
    for path in files:
        try:
            imb_file = read_imb_file(path, latency)
        except InputError as exc:  # named, and the other files are still analyzed
            unreadable.append(str(exc))
            continue
        notes += [f"{path}: {line}" for line in imb_file.skipped]
        for imb in imb_file.curves:
            name = imb.collective if collective == "auto" else collective
            where = f"{path}: {imb.benchmark}, {imb.nprocs} processes"
            if name is None:
                notes.append(f"{where}: no effective-bytes model for {imb.benchmark}; "
                             "skipped (give --collective)")
                continue
            try:
                tables.append(_analyze(imb, name, noise, max_regions))
            except InputError as exc:
                notes.append(f"{where}: {exc}")
    if not tables:
        raise InputError("nothing to analyze: " + ("; ".join(unreadable + notes) or "no IMB table"))
    return AnalyzeReport(tuple(tables), tuple(notes), tuple(unreadable))


def _analyze(imb: ImbCurve, collective: str, noise: float | None,
             max_regions: int) -> TableAnalysis:
    from ..analysis import (curve_noise, find_cliffs, fit_hockney, throughput_mb_s,
                            volume_formula)

    volume = volume_formula(collective)
    if volume == "0":
        raise InputError(f"{collective} moves no payload: no throughput")
    fit = fit_hockney(imb.curve, collective, imb.nprocs, max_regions=max_regions, noise=noise)
    cliffs = find_cliffs(imb.curve, collective, imb.nprocs, noise)
    return TableAnalysis(imb, collective, volume, throughput_mb_s(imb.curve, collective,
                                                                  imb.nprocs),
                         fit, tuple(cliffs), curve_noise(imb.curve, noise))


# ----------------------------------------------------------------------------- text


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "inf"
    return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"


def _bytes(value: float) -> str:
    if math.isinf(value):
        return "inf"
    for unit, factor in (("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0)):
        if value >= factor:
            return f"{value / factor:.3g} {unit}"
    return f"{value:.0f} B"


def _sizes(low: int, high: int) -> str:
    return format_size(low) if low == high else f"{format_size(low)}..{format_size(high)}"


def _region_index(fit: HockneyFit, size: int) -> int:
    return fit.regions.index(fit.region_for(size)) + 1


def _size_rows(item: TableAnalysis) -> render.Table:
    imb, fit = item.imb, item.fit
    fell = {c.after_bytes: c for c in item.cliffs}
    # no "[...]" in headers: rich would read "[usec]" as markup and drop it
    columns = ["size", imb.column.replace("[usec]", " us"), "MB/s", "Hockney us", "region",
               "cliff"]
    if imb.nbc:
        columns += ["t_ovrl us", "t_CPU us", "overlap %"]
    rows = []
    for i, (size, t) in enumerate(zip(imb.curve.sizes, imb.curve.t_us)):
        cliff = fell.get(size)
        row = [format_size(size) if size else "0 B", f"{t:.2f}", _num(item.throughput[i]),
               f"{fit.predict_us(size):.2f}" if size else "-",
               str(_region_index(fit, size)) if size else "-",
               f"-{cliff.drop:.0%}" if cliff else ""]
        if imb.nbc:
            row += [_num(v[i]) for v in (imb.t_ovrl_us, imb.t_cpu_us, imb.overlap_pct) if v]
        rows.append(tuple(row))
    return render.Table(tuple(columns), tuple(rows))


def _hockney_rows(fit: HockneyFit) -> render.Table:
    rows = tuple((str(n), _sizes(r.min_bytes, r.max_bytes), str(r.points), _num(r.t_latency_us),
                  _num(r.bandwidth_mb_s), _bytes(r.m_half_bytes))
                 for n, r in enumerate(fit.regions, 1))
    return render.Table(("region", "sizes", "points", "t_L us", "B MB/s", "M_half"), rows)


def _cliff_rows(cliffs: tuple[Cliff, ...]) -> render.Table:
    rows = tuple((format_size(c.before_bytes), format_size(c.after_bytes),
                  _num(c.throughput_before_mb_s), _num(c.throughput_after_mb_s), f"{c.drop:.0%}",
                  f"{c.noise:.0%}") for c in cliffs)
    return render.Table(("before", "after", "MB/s before", "MB/s after", "drop", "noise"), rows)


@render.to_text.register
def _(result: AnalyzeReport) -> list[str | render.Table]:
    blocks: list[str | render.Table] = []
    for n, item in enumerate(result.tables):
        imb = item.imb
        cut = "" if imb.complete else " (cut: the output ended inside this table)"
        if n:
            blocks.append("")
        blocks.append(f"{imb.source}: {imb.benchmark}, {imb.nprocs} processes, {imb.column}; "
                      f"throughput = {item.volume}/t ({item.collective}){cut}")
        blocks += [f"  failed: {f}" for f in imb.failures]
        blocks.append(_size_rows(item))
        blocks.append(f"Hockney t = t_L + V/B, V = {item.volume} effective bytes; regions split "
                      f"where the data leaves one line by more than the {item.fit.noise:.0%} "
                      "noise")
        blocks.append(_hockney_rows(item.fit))
        if item.cliffs:
            blocks.append(f"cliffs: throughput falls by more than the noise "
                          f"({len(item.cliffs)})")
            blocks.append(_cliff_rows(item.cliffs))
        else:
            blocks.append(f"cliffs: none (no throughput fall above the {item.noise:.0%} noise)")
    if result.notes:
        blocks.append("")
        blocks += [f"note: {note}" for note in result.notes]
    return blocks


# ----------------------------------------------------------------------------- JSON


def _finite(value: float | None) -> float | None:
    """JSON has no infinity: an unbounded B or M_half (latency-bound region) is null."""
    return None if value is None or math.isinf(value) else value


@render.to_json.register
def _(result: AnalyzeReport) -> Any:
    out = []
    for item in result.tables:
        imb, fit = item.imb, item.fit
        sizes = []
        for i, (size, t) in enumerate(zip(imb.curve.sizes, imb.curve.t_us)):
            entry: dict[str, Any] = {"bytes": size, "t_us": t,
                                     "throughput_mb_s": item.throughput[i],
                                     "model_us": fit.predict_us(size) if size else None,
                                     "region": _region_index(fit, size) if size else None}
            if imb.nbc:
                entry.update(t_ovrl_us=imb.t_ovrl_us[i] if imb.t_ovrl_us else None,
                             t_cpu_us=imb.t_cpu_us[i] if imb.t_cpu_us else None,
                             overlap_pct=imb.overlap_pct[i] if imb.overlap_pct else None)
            sizes.append(entry)
        out.append({
            "source": imb.source, "benchmark": imb.benchmark, "nprocs": imb.nprocs,
            "collective": item.collective, "volume": item.volume, "column": imb.column,
            "complete": imb.complete, "failures": list(imb.failures), "noise": item.noise,
            "sizes": sizes,
            "hockney": {"noise": fit.noise, "regions": [
                {"min_bytes": r.min_bytes, "max_bytes": r.max_bytes, "points": r.points,
                 "t_latency_us": r.t_latency_us, "bandwidth_mb_s": _finite(r.bandwidth_mb_s),
                 "m_half_bytes": _finite(r.m_half_bytes)} for r in fit.regions]},
            "cliffs": [{"before_bytes": c.before_bytes, "after_bytes": c.after_bytes,
                        "throughput_before_mb_s": c.throughput_before_mb_s,
                        "throughput_after_mb_s": c.throughput_after_mb_s, "drop": c.drop,
                        "noise": c.noise, "t_before_us": c.t_before_us,
                        "t_after_us": c.t_after_us} for c in item.cliffs],
        })
    return {"tables": out, "notes": list(result.notes)}
