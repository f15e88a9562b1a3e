"""Overlap of a non-blocking collective with computation, per message size (IMB-NBC's columns).

Pure functions over the per-launch columns a study stores (benchmarks.NbcTiming): every column
of a size is summarised on its own, by the trimmed mean over launches that scores use (drop the
min and the max from 3 launches on), so one disturbed launch does not move the row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..collectives import NbcTiming
from ..objective import trimmed_mean


@dataclass(frozen=True)
class OverlapRow:
    """One size: trimmed means over launches of IMB-NBC's columns (us, and percent)."""

    size: int
    t_pure_us: float
    t_ovrl_us: float
    t_cpu_us: float
    overlap_pct: float
    launches: int


def overlap_rows(samples: Mapping[int, Sequence[NbcTiming]]) -> tuple[OverlapRow, ...]:
    """Per size (ascending), the trimmed mean of each column over its launches."""
    rows = []
    for size in sorted(samples):
        launches = samples[size]
        if not launches:
            continue
        rows.append(OverlapRow(
            size=int(size), t_pure_us=trimmed_mean(t.t_pure_us for t in launches),
            t_ovrl_us=trimmed_mean(t.t_ovrl_us for t in launches),
            t_cpu_us=trimmed_mean(t.t_cpu_us for t in launches),
            overlap_pct=trimmed_mean(t.overlap_pct for t in launches), launches=len(launches)))
    return tuple(rows)
