"""How far each benchmark reads a configuration's speedup from IMB-MPI1's reading, as measured,
per collective (fidelity.json, written by scripts/fidelity_terms.py from runs of
scripts/bench_agreement.py; docs/evidence/kernel-fidelity.md has the runs).

A claim is about the gain a user will see, and IMB-MPI1 is the reference for that: a claim
timed by another benchmark carries that benchmark's disagreement with IMB in its interval
(endgame/confirm.py). Rounds shrink noise, not a disagreement of method, so the term is
measured apart from the claim, where the claim is made: per benchmark and collective, and per
size for the per-size rules stage. The term is what the benchmark's distance from IMB adds
beyond the distance of a second, independent IMB run in the same rounds (the noise floor of
the comparison). A collective with no measurement is said to have none, and the largest term
measured for that benchmark stands in."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("fidelity.json")


@dataclass(frozen=True)
class Disagreement:
    """A benchmark's standard uncertainty (log units) against IMB-MPI1 for one collective: of the
    weighted speedup (`systematic`) and per size (`per_size`); `measured`: where and how, or
    why there is no measurement (`stand_in`: the value is another collective's)."""

    systematic: float
    per_size: dict[int, float] = field(default_factory=dict)
    measured: str = ""
    stand_in: bool = False

    def size_term(self, sizes: list[int] | tuple[int, ...]) -> float:
        """The term of a band of sizes: the mean of its sizes' terms (each size's where it was
        measured, else the weighted term), so a band is no more certain than its sizes."""
        if not sizes:
            return self.systematic
        return sum(self.per_size.get(s, self.systematic) for s in sizes) / len(sizes)


NONE = Disagreement(0.0, measured="")


@cache
def _table() -> dict[str, dict[str, Disagreement]]:
    try:
        raw = json.loads(DATA.read_text())
    except (OSError, ValueError):
        return {}
    table: dict[str, dict[str, Disagreement]] = {}
    for bench, collectives in raw.get("benchmarks", {}).items():
        for collective, entry in collectives.items():
            value = float(entry["systematic"])
            if not math.isfinite(value) or value < 0:
                continue
            table.setdefault(bench, {})[collective] = Disagreement(
                value, {int(s): float(v) for s, v in entry.get("per_size", {}).items()},
                measured=str(entry.get("measured", "")))
    return table


def disagreement(benchmark: str, collective: str, fallback: float) -> Disagreement:
    """The measured term of `benchmark` for `collective`; where none was measured, the largest
    measured for the benchmark (else `fallback`) stands in, and the note says so."""
    mine = _table().get(benchmark, {})
    if collective in mine:
        found = mine[collective]
        return Disagreement(found.systematic, found.per_size,
                            f"measured for {collective}: {found.measured}")
    largest = max((d.systematic for d in mine.values()), default=fallback)
    return Disagreement(largest, {}, f"not measured for {collective}: the largest term measured "
                                     f"for this benchmark stands in", stand_in=True)
