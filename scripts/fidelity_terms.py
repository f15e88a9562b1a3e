#!/usr/bin/env python3
"""From runs of scripts/bench_agreement.py to the terms a claim carries: each benchmark's
standard uncertainty against IMB-MPI1 per collective, weighted over the sizes and per size
(autotune/benchmarks/fidelity.json, read by autotune/benchmarks/_fidelity.py).

A run must include a second IMB (`--search ...,imb`): its distance from IMB in the same rounds is
the noise floor of the comparison. Per configuration, d = the benchmark's median round score
minus IMB's (log units), and n = the second IMB's minus IMB's; pooled over every configuration
of every run given for a collective, the term is sqrt(max(0, mean(d^2) - mean(n^2))): what the
benchmark's distance from IMB adds to the distance any second IMB run has. Per size the same,
from the rounds' per-size log-ratios. Printed per benchmark and collective; `--write` merges the
terms into fidelity.json (other entries kept), with where they were measured.

    .venv/bin/python scripts/fidelity_terms.py RUN.json [RUN.json ...] --write
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "autotune" / "benchmarks" / "fidelity.json"
NAMES = {"cbench": "cbench", "kernel": "mpi4py"}  # bench_agreement's --search -> registry name


def medians(rounds: list[float]) -> float:
    return statistics.median(rounds)


def squares(run: dict, bench: str) -> tuple[list[float], list[float], dict[int, list[float]],
                                             dict[int, list[float]]]:
    """(d^2, n^2) over the run's configurations, weighted and per size."""
    d2, n2 = [], []
    d2_size: dict[int, list[float]] = defaultdict(list)
    n2_size: dict[int, list[float]] = defaultdict(list)
    for row in run["rows"]:
        scores = row["scores"]
        mine, ref, second = (scores.get(k) for k in (f"search:{bench}", "imb", "search:imb"))
        if not mine or not ref or not second:
            continue
        d2.append((medians(mine) - medians(ref)) ** 2)
        n2.append((medians(second) - medians(ref)) ** 2)
        per = row.get("per_size", {})
        for size in per.get("imb", [{}])[0]:
            def at(key: str, s: str = size) -> float:
                return medians([r[s] for r in per[key] if s in r])
            d2_size[int(size)].append((at(f"search:{bench}") - at("imb")) ** 2)
            n2_size[int(size)].append((at("search:imb") - at("imb")) ** 2)
    return d2, n2, d2_size, n2_size


def term(d2: list[float], n2: list[float]) -> float:
    return math.sqrt(max(0.0, statistics.fmean(d2) - statistics.fmean(n2))) if d2 and n2 else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--write", action="store_true", help=f"merge into {DATA}")
    args = parser.parse_args()
    pooled: dict[tuple[str, str], list] = {}
    sources: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in args.runs:
        run = json.loads(path.read_text())
        if "imb" not in run.get("searches", []):
            print(f"{path}: no second IMB in this run (--search ...,imb): skipped", file=sys.stderr)
            continue
        for bench in run["searches"]:
            if bench not in NAMES:
                continue
            key = (NAMES[bench], run["collective"])
            parts = pooled.setdefault(key, [[], [], defaultdict(list), defaultdict(list)])
            d2, n2, d2s, n2s = squares(run, bench)
            parts[0] += d2
            parts[1] += n2
            for size, values in d2s.items():
                parts[2][size] += values
            for size, values in n2s.items():
                parts[3][size] += values
            sources[key].append(f"{run['rounds']} rounds at {run['time_per_size']:g} s per size "
                                f"({len(d2)} configurations)")
            cpu = run.get("cpu", "unknown CPU")
    if not pooled:
        return 1
    stored = json.loads(DATA.read_text()) if DATA.exists() else {"benchmarks": {}}
    for (bench, collective), (d2, n2, d2s, n2s) in sorted(pooled.items()):
        value = term(d2, n2)
        per_size = {size: round(term(d2s[size], n2s.get(size, [])), 4) for size in sorted(d2s)}
        rms_d = math.sqrt(statistics.fmean(d2)) if d2 else 0.0
        rms_n = math.sqrt(statistics.fmean(n2)) if n2 else 0.0
        print(f"{bench} {collective}: term {value:.4f} (RMS distance from IMB {rms_d:.4f}, a "
              f"second IMB's {rms_n:.4f}); per size: "
              + " ".join(f"{s}:{v:.3f}" for s, v in per_size.items()))
        measured = (f"{date.today().isoformat()}, {cpu}, 2 ranks, "
                    + "; ".join(sources[(bench, collective)])
                    + ", scripts/bench_agreement.py and scripts/fidelity_terms.py")
        stored["benchmarks"].setdefault(bench, {})[collective] = {
            "systematic": round(value, 4), "per_size": {str(s): v for s, v in per_size.items()},
            "measured": measured}
    if args.write:
        DATA.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"written: {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
