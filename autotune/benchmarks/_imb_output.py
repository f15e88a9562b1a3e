"""Parse IMB-MPI1 / IMB-NBC text output into tables, trusting nothing.

The text comes from a launched job: it may be cut (timeout, kill), mixed with MPI/UCX noise or
damaged. Every problem either gets a clear representation (failure rows, ``complete=False``) or
raises ImbOutputError naming the line; no other exception type leaves ``parse_imb_output``.
Standard library only, no mpi4py: the parser runs in the controller, not in the MPI job.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from autotune.errors import BenchmarkOutputError

from ._base import times_ordered

MAX_CHARS = 16 * 1024 * 1024  # a real IMB output is a few hundred KiB; more is not IMB's
MAX_LINES = 100_000  # a full IMB-MPI1 run at 2..512 processes prints < 10,000 lines
MAX_LINE = 4096  # longer rows are refused; other long lines (noise, banner) are cut
MAX_CELLS = 32
MAX_US = 1e12  # ~11.6 days per operation: anything larger is a damaged cell, not a timing
MAX_INT = 2**62
_FLOAT_CHARS = 40  # "%.2f" of DBL_MAX (IMB's "no rank reported" min) is 312 chars: refused
_MINMAX_SLACK = 1e-9  # printed values are rounded monotonically, so the order survives exactly
_FINALIZE = "# All processes entering MPI_Finalize"

_INT = re.compile(r"[0-9]{1,18}")
_FLOAT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,4})?"
                    r"|[-+]?(?:nan|inf(?:inity)?)", re.IGNORECASE)
_FAILURE = re.compile(r"[A-Za-z][A-Za-z-]{0,30}\.;?")  # IMB: "out-of-mem.;", "time-out.;" ...
_ROWLIKE = re.compile(r"[-+.]?[0-9]")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_BENCH = re.compile(r"#\s*Benchmarking\s+(\S+)")
_PROCS = re.compile(r"#\s*#processes\s*=\s*([0-9]{1,9})(?![0-9])")
_GROUPS = re.compile(r"#\s*\(\s*([0-9]{1,9})\s+groups\s+of\s+([0-9]{1,9})\s+process")
_WAITING = re.compile(r"#\s*\(\s*([0-9]{1,9})\s+additional\s+process(?:es)?\s+waiting")
_VERSION = re.compile(r"Intel\s*\(R\)\s*MPI\s+Benchmark(?:s|\s+Suite)\s+"
                      r"V?([0-9][0-9A-Za-z.]{0,31})")
_MAXLEN = re.compile(r"#\s*Maximum message length in bytes:\s*([0-9]{1,18})\s*$")

# header cell (lower case) -> ImbRow field; other header cells (Mbytes/sec, defects...) are ignored
_COLUMNS = {
    "group": "group", "#bytes": "bytes", "#repetitions": "repetitions",
    "t_min[usec]": "t_min_us", "t_max[usec]": "t_max_us", "t_avg[usec]": "t_avg_us",
    "t_ovrl[usec]": "t_ovrl_us", "t_pure[usec]": "t_pure_us", "t_cpu[usec]": "t_cpu_us",
    "overlap[%]": "overlap_pct",
}
_INT_FIELDS = ("group", "bytes", "repetitions")


class ImbOutputError(BenchmarkOutputError):
    """IMB output that cannot be trusted: the trial fails as a crash with this short detail."""


@dataclass(frozen=True)
class ImbRow:
    """One message size. A failure row (IMB printed e.g. "out-of-mem." instead of numbers) has
    ``failure`` set, ``repetitions == 0`` and no timings; IMB stops the benchmark after it."""

    bytes: int
    repetitions: int
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_avg_us: float | None = None
    t_ovrl_us: float | None = None
    t_pure_us: float | None = None
    t_cpu_us: float | None = None
    overlap_pct: float | None = None
    failure: str = ""
    group: int | None = None  # only in "-multi 1" output, whose header starts with "Group"


@dataclass(frozen=True)
class ImbTable:
    """One "# Benchmarking X / #processes = N" block. ``complete`` is False when the output ended
    inside the table (cut row, or no terminator and the announced maximum size not reached).
    Tables without a #bytes column (Barrier, Ibarrier) have ``bytes == 0`` rows."""

    benchmark: str
    processes: int
    rows: tuple[ImbRow, ...]
    waiting: int = 0
    complete: bool = True
    columns: tuple[str, ...] = ()  # the header cells as IMB printed them

    def row(self, nbytes: int, group: int | None = None) -> ImbRow:
        """The row for one size; ImbOutputError if IMB did not print it."""
        for r in self.rows:
            if r.bytes == nbytes and r.group == group:
                return r
        raise ImbOutputError(f"no {nbytes}-byte row in the {self.benchmark} table "
                             f"for {self.processes} processes")


@dataclass(frozen=True)
class ImbOutput:
    """A whole run; ``finished`` only if IMB reached MPI_Finalize (otherwise it was cut)."""

    tables: tuple[ImbTable, ...]
    finished: bool
    version: str = ""

    def table(self, benchmark: str, processes: int) -> ImbTable:
        """The table of one benchmark (name case-insensitive) at one process count."""
        want = str(benchmark).lower()
        for t in self.tables:
            if t.benchmark.lower() == want and t.processes == processes:
                return t
        raise ImbOutputError(f"no {benchmark} table for {processes} processes in IMB output")


def parse_imb_output(text: str) -> ImbOutput:
    """Parse the whole stdout of one IMB run; ImbOutputError is the only exception it raises."""
    try:
        return _Parser().parse(text)
    except ImbOutputError:
        raise
    except Exception as exc:  # safety net: a parser bug must fail the trial, not the study
        raise ImbOutputError(f"IMB output not parsable (internal {type(exc).__name__})") from exc


class _Parser:
    """A line-by-line state machine: Benchmarking -> #processes -> header -> rows -> terminator."""

    def __init__(self) -> None:
        self.tables: list[ImbTable] = []
        self.keys: set[tuple[str, int]] = set()
        self.finished = False
        self.version = ""
        self.max_len: int | None = None
        self.lineno = 0
        self._reset()

    def _reset(self) -> None:
        self.name: str | None = None
        self.procs: int | None = None
        self.waiting = 0
        self.cols: list[str | None] | None = None  # set once the column header was read
        self.header: tuple[str, ...] = ()
        self.rows: list[ImbRow] = []
        self.seen: set[tuple[int | None, int]] = set()

    def fail(self, why: str) -> ImbOutputError:
        return ImbOutputError(f"IMB output line {self.lineno}: {why}")

    def parse(self, text: str) -> ImbOutput:
        if not isinstance(text, (str, bytes, bytearray)):
            raise ImbOutputError("IMB output is not text")
        if isinstance(text, (bytes, bytearray)) and len(text) <= MAX_CHARS:
            text = bytes(text).decode("utf-8", "replace")
        if len(text) > MAX_CHARS:
            raise ImbOutputError(f"IMB output larger than {MAX_CHARS // 2**20} MiB")
        if text.count("\n") >= MAX_LINES:
            raise ImbOutputError(f"IMB output has more than {MAX_LINES} lines")
        lines = text.split("\n")
        last = len(lines)  # a last line without "\n" is cut (or empty when the text ends in "\n")
        for n, raw in enumerate(lines, 1):
            self.lineno = n
            line = raw.rstrip("\r")
            if n == last and line.strip() != _FINALIZE:
                self._cut(line.strip())
                continue
            self._line(line)
        self._eof()
        if not self.tables:
            raise ImbOutputError("no benchmark table in IMB output")
        return ImbOutput(tuple(self.tables), self.finished, self.version)

    def _cut(self, line: str) -> None:
        """The last line had no newline: it is cut, so only what it starts with is trusted."""
        if self.cols is not None and line.startswith("#"):
            self._close(complete=True)  # the next section had begun: the table ended
        elif self.cols is not None and _ROWLIKE.match(line):
            self._close(complete=False)  # a row cut in the middle: drop it

    def _line(self, line: str) -> None:
        stripped = line.strip()
        if len(stripped) > MAX_LINE:
            if self.cols is not None and _ROWLIKE.match(stripped):
                raise self.fail(f"row longer than {MAX_LINE} characters")
            stripped = stripped[:MAX_LINE]
        cells = stripped.split()
        if self.cols is not None and _ROWLIKE.match(stripped):
            return self._row(cells)  # rows start with a digit, headers never do
        if "#repetitions" in [c.lower() for c in cells]:
            return self._header(cells)
        if not stripped:
            if self.cols is not None and "group" not in self.cols:
                self._close(complete=True)  # "-multi 1" tables have blank lines between sizes
            return
        if stripped.startswith("#"):
            if self.cols is not None:
                self._close(complete=True)
            return self._comment(stripped)
        # anything else (MPI/UCX warnings, PDF debris) is noise, inside or outside a table

    def _comment(self, line: str) -> None:
        if line == _FINALIZE:
            self.finished = True
        elif m := _BENCH.match(line):
            if self.name is not None and self.procs is not None:
                raise self.fail(f"{self.name} for {self.procs} processes has no column header")
            if not _NAME.fullmatch(m.group(1)):
                raise self.fail("benchmark name is not a name")
            self.name, self.procs, self.waiting = m.group(1), None, 0
        elif m := _PROCS.match(line) or _GROUPS.match(line):
            if self.name is None:
                raise self.fail("process count without a '# Benchmarking' line")
            if self.procs is not None:
                raise self.fail("second process count for one table")
            self.procs = int(m.group(m.lastindex or 1))
            if not 1 <= self.procs <= 10**8:
                raise self.fail(f"{self.procs} processes")
        elif m := _WAITING.match(line):
            if self.procs is not None:
                self.waiting = int(m.group(1))
        elif not self.tables and self.name is None:
            if (m := _VERSION.search(line)) and not self.version:
                self.version = m.group(1).rstrip(".")
            elif m := _MAXLEN.match(line):
                self.max_len = int(m.group(1))

    def _header(self, cells: list[str]) -> None:
        if self.cols is not None:
            raise self.fail("second column header in one table")
        if self.name is None or self.procs is None:
            raise self.fail("column header without '# Benchmarking' and '#processes' lines")
        if len(cells) > MAX_CELLS:
            raise self.fail(f"more than {MAX_CELLS} columns")
        cols = [_COLUMNS.get(c.lower()) for c in cells]
        known = [c for c in cols if c is not None]
        if len(known) != len(set(known)):
            raise self.fail("a column appears twice in the header")
        self.cols, self.header = cols, tuple(cells)
        self._check_key()

    def _check_key(self) -> None:
        if (str(self.name).lower(), self.procs) in self.keys:
            raise self.fail(f"second {self.name} table for {self.procs} processes")

    def _row(self, cells: list[str]) -> None:
        cols = self.cols or []
        if self.rows and self.rows[-1].failure:
            raise self.fail(f"row after the failure row '{self.rows[-1].failure}'")
        lead = 2 if "group" in cols else 1
        if len(cells) > lead and all(_INT.fullmatch(c) for c in cells[:lead]) \
                and _FAILURE.fullmatch(cells[lead]):
            group = int(cells[0]) if lead == 2 else None
            row = ImbRow(bytes=int(cells[lead - 1]), repetitions=0, group=group,
                         failure=cells[lead].rstrip(";"))
            return self._add(row)
        if len(cells) != len(cols):
            raise self.fail(f"{len(cells)} cells for {len(cols)} columns")
        values: dict[str, int | float] = {"bytes": 0, "repetitions": 0}
        for col, cell in zip(cols, cells):
            if col is None:
                continue
            if col in _INT_FIELDS:
                if not _INT.fullmatch(cell) or int(cell) > MAX_INT:
                    raise self.fail(f"{col} '{cell[:20]}' is not a sane integer")
                values[col] = int(cell)
            else:
                values[col] = self._time(col, cell)
        if not times_ordered(*(values.get(k) for k in ("t_min_us", "t_avg_us", "t_max_us")),
                             slack=_MINMAX_SLACK):
            raise self.fail("t_min <= t_avg <= t_max does not hold")
        self._add(ImbRow(**values))  # type: ignore[arg-type]

    def _time(self, col: str, cell: str) -> float:
        if len(cell) > _FLOAT_CHARS or not _FLOAT.fullmatch(cell):
            raise self.fail(f"{col} '{cell[:20]}' is not a number")
        value = float(cell)
        top = 100.0 + _MINMAX_SLACK if col == "overlap_pct" else MAX_US
        if not (math.isfinite(value) and 0.0 <= value <= top):
            raise self.fail(f"{col} '{cell[:20]}' is out of range")
        return value + 0.0  # "-0.00" -> 0.0

    def _add(self, row: ImbRow) -> None:
        key = (row.group, row.bytes)
        if key in self.seen:
            raise self.fail(f"second row for {row.bytes} bytes")
        self.seen.add(key)
        self.rows.append(row)

    def _close(self, complete: bool) -> None:
        if self.name is not None and self.procs is not None:
            self._check_key()
            self.keys.add((self.name.lower(), self.procs))
            self.tables.append(ImbTable(self.name, self.procs, tuple(self.rows), self.waiting,
                                        complete and self.cols is not None, self.header))
        self._reset()

    def _eof(self) -> None:
        """The output ended inside a table: it is complete only if it visibly reached its end."""
        if self.cols is None:
            return self._close(complete=False)
        rows, cols = self.rows, self.cols
        done = bool(rows) and (rows[-1].failure != "" or "bytes" not in cols or (
            "group" not in cols and self.max_len is not None and rows[-1].bytes >= self.max_len))
        self._close(complete=done)
