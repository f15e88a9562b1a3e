"""IMB-MPI1 / IMB-NBC output a user already has -> curves (the only I/O of autotune.analysis).

The text goes through the hardened run parser (autotune.benchmarks._imb_output), which also finds
tables embedded in other text (a paper, a mail: seeds/004), since it keys on the "# Benchmarking"
and "#bytes ... #repetitions" lines and ignores everything else.

Latency column: IMB-NBC tables give t_pure (the collective alone, without the overlapped
computation), the other columns (t_ovrl, t_CPU, overlap%) are kept per size for display.
IMB-MPI1 tables give t_avg (the mean over ranks, IMB's own choice for its Mbytes/sec) by default,
t_max (the slowest rank, what autotune's studies optimise) on request. IMB prints no confidence
band (t_min..t_max is the spread over ranks, not over repetitions), so IMB curves have none and
are judged against the default noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..benchmarks import MAX_CHARS, ImbOutputError, ImbRow, ImbTable, parse_imb_output
from ..errors import InputError
from ..files import read_text_input
from ._curves import Curve, collective_name

LATENCIES = ("avg", "max")


@dataclass(frozen=True)
class ImbCurve:
    """One IMB table (benchmark x #processes) as a curve, plus the columns shown beside it."""

    source: str
    benchmark: str  # as IMB printed it, e.g. "Iallreduce"
    nprocs: int
    collective: str | None  # the volume-model name (allreduce for Iallreduce), None if unknown
    column: str  # the IMB column the curve's times come from, e.g. "t_pure[usec]"
    curve: Curve
    t_ovrl_us: tuple[float | None, ...] | None = None  # IMB-NBC only, per size of the curve
    t_cpu_us: tuple[float | None, ...] | None = None
    overlap_pct: tuple[float | None, ...] | None = None
    complete: bool = True  # False: the output ended inside this table
    failures: tuple[str, ...] = ()  # e.g. "4194304 bytes: out-of-mem"

    @property
    def nbc(self) -> bool:
        return self.t_ovrl_us is not None


@dataclass(frozen=True)
class ImbFile:
    source: str
    version: str
    curves: tuple[ImbCurve, ...]
    skipped: tuple[str, ...] = ()  # tables without message sizes (Barrier), one line each


def read_imb_file(path: str | Path, latency: str = "avg") -> ImbFile:
    """Read and parse one IMB output file; InputError naming the file if it holds no table."""
    text = read_text_input(path, "IMB output", MAX_CHARS)
    return imb_curves(text, str(path), latency)


def imb_curves(text: str, source: str, latency: str = "avg") -> ImbFile:
    """The curves of every IMB table in text (pure; `source` names the text in messages)."""
    if latency not in LATENCIES:
        raise InputError(f"latency {latency!r}: choose from {', '.join(LATENCIES)}")
    try:
        output = parse_imb_output(text)
    except ImbOutputError as exc:
        detail = exc.detail.removeprefix("benchmark output: ")
        raise InputError(f"{source}: {detail}") from None
    curves, skipped = [], []
    for table in output.tables:
        curve = _table_curve(table, source, latency)
        if curve is None:
            skipped.append(f"{table.benchmark}, {table.processes} processes: no message sizes")
        else:
            curves.append(curve)
    if not curves:
        raise InputError(f"{source}: no IMB table with message sizes "
                         f"(only {', '.join(sorted({t.benchmark for t in output.tables}))})")
    return ImbFile(source, output.version, tuple(curves), tuple(skipped))


def _column(table: ImbTable, latency: str) -> tuple[str, str] | None:
    """(ImbRow field, IMB header cell) of the latency column, or None."""
    header = {c.lower(): c for c in table.columns}
    order = ["t_pure[usec]", f"t_{latency}[usec]", "t_avg[usec]", "t_max[usec]", "t_ovrl[usec]"]
    for cell in order:
        if cell in header:
            return cell.removesuffix("[usec]") + "_us", header[cell]
    return None


def _table_curve(table: ImbTable, source: str, latency: str) -> ImbCurve | None:
    column = _column(table, latency)
    if column is None or not any(c.lower() == "#bytes" for c in table.columns):
        return None
    field, header = column
    failures = tuple(f"{r.bytes} bytes: {r.failure}" for r in table.rows if r.failure)
    by_size: dict[int, ImbRow] = {}
    for row in table.rows:  # "-multi" output: one row per group and size; keep the slowest
        value = getattr(row, field)
        if row.failure or value is None:
            continue
        kept = by_size.get(row.bytes)
        if kept is None or value > getattr(kept, field):
            by_size[row.bytes] = row
    if not by_size:
        return None
    rows = [by_size[size] for size in sorted(by_size)]
    label = f"{Path(source).name}: {table.benchmark} np={table.processes}"
    curve = Curve(label, tuple(r.bytes for r in rows), tuple(getattr(r, field) for r in rows))
    nbc = field == "t_pure_us"
    return ImbCurve(
        source=source, benchmark=table.benchmark, nprocs=table.processes,
        collective=collective_name(table.benchmark), column=header, curve=curve,
        t_ovrl_us=tuple(r.t_ovrl_us for r in rows) if nbc else None,
        t_cpu_us=tuple(r.t_cpu_us for r in rows) if nbc else None,
        overlap_pct=tuple(r.overlap_pct for r in rows) if nbc else None,
        complete=table.complete, failures=failures)
