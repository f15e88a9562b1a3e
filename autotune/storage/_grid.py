"""A recorded grid: real measurements of every configuration of a small space, in passes, in a
documented file format that users can also write from their own measurements.

One row per (configuration, pass, size), CSV or Parquet by suffix:
- `pass` (int): the unit of pairing, one launch of the untuned default and the launches it is
  the reference of (a whole pass over the configurations, or the few measured right after the
  default: `grid record --default-every`); `start` (unix seconds of the launch), `size`
  (bytes), `t_us` (time per call, max over ranks);
- one column per knob, named exactly as the knob (`pml`, `UCX_TLS`, ...), values as the shipped
  spaces spell them; an empty cell means "not set" (the MPI's own default). The row whose knob
  cells are all empty is the untuned default;
- optionally `benchmark`: what measured the rows (`imb`, `mpi4py`), one value for the whole file.
  `grid record` writes it, so that a resumed recording never mixes two benchmarks; grids
  recorded before it, and users' own, may leave it out.
"""

from __future__ import annotations

import io
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..files import (GRID_CSV_MAX_BYTES, GRID_PARQUET_MAX_BYTES, check_input_file,
                     read_bytes_input)

FIXED_COLUMNS = ("pass", "start", "size", "t_us")
BENCHMARK_COLUMN = "benchmark"  # optional; not a knob
SUFFIXES = (".csv", ".parquet")
Config = tuple[tuple[str, str], ...]  # (knob, value) for the knobs set; () is the untuned default


def config_key(values: Mapping[str, Any]) -> Config:
    """The configuration a row (or a trial's params) stands for: knobs set, sorted; "not set"
    (empty, None, NaN, "unset") is left out."""
    out = []
    for name, value in values.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        text = _text(value)
        if text not in ("", "unset"):
            out.append((str(name), text))
    return tuple(sorted(out))


def _text(value: Any) -> str:
    """Values as spaces spell them: 3 not 3.0, true/false as 1/0 like MCA booleans."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


@dataclass
class Grid:
    """Measurements by configuration, pass and size: t_us[config][pass][size]."""

    knobs: tuple[str, ...]
    t_us: dict[Config, dict[int, dict[int, float]]] = field(default_factory=dict)
    benchmark: str = ""  # what measured it, where the file says (its `benchmark` column)
    started: dict[tuple[Config, int], float] = field(default_factory=dict)

    @property
    def default(self) -> Config:
        return ()

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(sorted({s for passes in self.t_us.values() for sizes in passes.values()
                             for s in sizes}))

    @property
    def passes(self) -> tuple[int, ...]:
        return tuple(sorted({p for passes in self.t_us.values() for p in passes}))

    def add(self, config: Config, pass_: int, size: int, t_us: float, start: float) -> None:
        self.t_us.setdefault(config, {}).setdefault(pass_, {})[size] = t_us
        self.started.setdefault((config, pass_), start)

    def choices(self) -> dict[str, tuple[str, ...]]:
        """Every knob's values in the grid, "unset" first where some rows leave it empty."""
        out: dict[str, tuple[str, ...]] = {}
        for knob in self.knobs:
            values = {dict(c).get(knob, "unset") for c in self.t_us}
            out[knob] = tuple(sorted(values, key=lambda v: (v != "unset", _sort_key(v))))
        return out

    def truth(self, weights: Mapping[int, float]) -> dict[Config, float]:
        """Each configuration's true score: the median over passes of its weighted mean
        log-ratio to the default of the same pass (lower is faster; the default is 0)."""
        default = self.t_us.get(self.default)
        if not default:
            raise InputError("the grid has no untuned default (a row with every knob empty)")
        total = sum(weights.values())
        truth = {}
        for config, passes in self.t_us.items():
            scores = []
            for pass_, sizes in passes.items():
                ref = default.get(pass_, {})
                common = [s for s in sizes if s in ref and s in weights]
                if common and len(common) == len([s for s in weights if weights[s] > 0]):
                    scores.append(sum(weights[s] * math.log(sizes[s] / ref[s]) for s in common)
                                  / total)
            if scores:
                truth[config] = statistics.median(scores)
        return truth


def _sort_key(value: str) -> tuple:
    from ..units import parse_size

    try:
        return (0, int(value))
    except ValueError:
        pass
    try:
        return (1, parse_size(value))
    except Exception:  # noqa: BLE001 - any non-size value sorts by text
        return (2, value)


def read_grid(path: str | Path) -> Grid:
    """Load and check a grid file; any problem is one InputError naming the file and the row."""
    import pandas as pd

    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise InputError(f"grid {path}: use a .csv or .parquet file")
    try:
        if path.suffix == ".csv":
            data = read_bytes_input(path, "grid", GRID_CSV_MAX_BYTES)
            frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        else:
            check_input_file(path, "grid", GRID_PARQUET_MAX_BYTES)
            frame = pd.read_parquet(path).astype(str).replace({"None": "", "nan": ""})
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read grid {path}: {exc}") from None
    missing = [c for c in FIXED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"grid {path}: missing column(s) {', '.join(missing)} "
                         f"(needs {', '.join(FIXED_COLUMNS)} and one column per knob)")
    knobs = tuple(c for c in frame.columns if c not in (*FIXED_COLUMNS, BENCHMARK_COLUMN))
    benchmarks = sorted(set(frame[BENCHMARK_COLUMN])) if BENCHMARK_COLUMN in frame else [""]
    if len(benchmarks) > 1:
        raise InputError(f"grid {path}: rows measured by different benchmarks "
                         f"({', '.join(b or 'none named' for b in benchmarks)}): a grid compares "
                         "configurations measured one way")
    grid = Grid(knobs=knobs, benchmark=benchmarks[0] if benchmarks else "")
    for index, row in enumerate(frame.itertuples(index=False), start=2):
        record = dict(zip(frame.columns, row))
        try:
            pass_, size = int(record["pass"]), int(record["size"])
            t_us, start = float(record["t_us"]), float(record["start"] or 0)
        except ValueError:
            raise InputError(f"grid {path} row {index}: pass, size, t_us and start must be "
                             "numbers") from None
        if size <= 0 or not math.isfinite(t_us) or t_us <= 0:
            raise InputError(f"grid {path} row {index}: size and t_us must be positive")
        grid.add(config_key({k: record[k] for k in knobs}), pass_, size, t_us, start)
    if not grid.t_us:
        raise InputError(f"grid {path} has no rows")
    return grid


def grid_rows(config: Config, knobs: tuple[str, ...], pass_: int, start: float,
              t_us: Mapping[int, float], benchmark: str = "") -> list[dict[str, Any]]:
    """The rows of one launch, in the file's column order (a `benchmark` column where one is
    named)."""
    values = dict(config)
    named = {BENCHMARK_COLUMN: benchmark} if benchmark else {}
    return [{"pass": pass_, "start": round(start, 3), "size": size, "t_us": t, **named,
             **{k: values.get(k, "") for k in knobs}} for size, t in sorted(t_us.items())]


def named_benchmark(path: Path) -> str | None:
    """What the grid CSV file at `path` says measured it, from its header and first row: None
    for a new grid (no file, an empty one, or a `benchmark` column with no row yet), "" for a
    file whose columns name no benchmark."""
    import pandas as pd

    if not path.exists() or path.stat().st_size == 0:
        return None
    try:
        head = pd.read_csv(path, dtype=str, keep_default_na=False, nrows=1)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read grid {path}: {exc}") from None
    if BENCHMARK_COLUMN not in head.columns:
        return ""
    return None if head.empty else str(head[BENCHMARK_COLUMN].iloc[0])
