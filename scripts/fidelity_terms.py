#!/usr/bin/env python3
"""From runs of scripts/bench_agreement.py to the terms a claim carries: each benchmark's
standard uncertainty against IMB-MPI1 per collective, weighted over the sizes and per size
(autotune/benchmarks/fidelity.json, read by autotune/benchmarks/_fidelity.py).

Per configuration, d = the benchmark's median round score minus IMB's (log units). Part of d is
the rounds' own noise, n^2, which the term must not count: with a second IMB in the run
(`--search ...,imb`), n = the second IMB's median minus IMB's (what any second run differs by);
without one, n^2 = the variance of the benchmark's median plus that of IMB's, each bootstrapped
from its rounds (the same quantity, estimated from the spread instead of measured; a run with a
second IMB prints both, as a check). Pooled over every configuration of every run given for a
collective, the term is sqrt(max(0, mean(d^2 - n^2) + its standard error)): what the
benchmark's distance from IMB adds to the rounds' noise, at the most the runs cannot exclude (one
standard error up); a collective whose distance stays within the noise takes the benchmark's
largest term measured elsewhere, and says so. Per size the same, from the rounds' per-size log-ratios. Printed
per benchmark and collective; `--write` merges the terms into fidelity.json (other entries
kept), with where they were measured.

    .venv/bin/python scripts/fidelity_terms.py RUN.json [RUN.json ...] --write
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "autotune" / "benchmarks" / "fidelity.json"
NAMES = {"cbench": "cbench", "kernel": "mpi4py"}  # bench_agreement's --search -> registry name


def medians(rounds: list[float]) -> float:
    return statistics.median(rounds)


def median_variance(rounds: list[float], resamples: int = 400) -> float:
    """The variance of the rounds' median, bootstrapped (fixed seed: the figures repeat)."""
    data = np.asarray(rounds, dtype=float)
    if data.size < 2:
        return 0.0
    rng = np.random.default_rng(0)
    picks = rng.integers(0, data.size, size=(resamples, data.size))
    return float(np.var(np.median(data[picks], axis=1), ddof=1))


def noise_square(mine: list[float], ref: list[float], second: list[float] | None,
                 bootstrap: bool) -> float:
    """n^2 of one comparison: from the second IMB run when there is one (unless `bootstrap`),
    else the bootstrapped variances of both medians."""
    if second and not bootstrap:
        return (medians(second) - medians(ref)) ** 2
    return median_variance(mine) + median_variance(ref)


def squares(run: dict, bench: str, bootstrap: bool = False
            ) -> tuple[list[float], list[float], dict[int, list[float]], dict[int, list[float]]]:
    """(d^2, n^2) over the run's configurations, weighted and per size."""
    d2, n2 = [], []
    d2_size: dict[int, list[float]] = defaultdict(list)
    n2_size: dict[int, list[float]] = defaultdict(list)
    for row in run["rows"]:
        scores = row["scores"]
        mine, ref, second = (scores.get(k) for k in (f"search:{bench}", "imb", "search:imb"))
        if not mine or not ref:
            continue
        d2.append((medians(mine) - medians(ref)) ** 2)
        n2.append(noise_square(mine, ref, second, bootstrap))
        per = row.get("per_size", {})
        for size in per.get("imb", [{}])[0]:
            def at(key: str, s: str = size) -> list[float]:
                return [r[s] for r in per.get(key, []) if s in r]
            d2_size[int(size)].append((medians(at(f"search:{bench}")) - medians(at("imb"))) ** 2)
            n2_size[int(size)].append(noise_square(at(f"search:{bench}"), at("imb"),
                                                   at("search:imb"), bootstrap))
    return d2, n2, d2_size, n2_size


def term(d2: list[float], n2: list[float]) -> float:
    """sqrt of mean(d^2 - n^2) plus one standard error of that mean: a bias that the rounds'
    noise hides (10 rounds of allgather, where cbench sat closer to IMB than the noise floor) is
    taken at what the runs cannot exclude, not as zero."""
    if not d2 or len(d2) != len(n2):
        return 0.0
    excess = [a - b for a, b in zip(d2, n2)]
    spread = statistics.stdev(excess) / math.sqrt(len(excess)) if len(excess) > 1 else 0.0
    return math.sqrt(max(0.0, statistics.fmean(excess) + spread))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--write", action="store_true", help=f"merge into {DATA}")
    args = parser.parse_args()
    pooled: dict[tuple[str, str], list] = {}
    sources: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in args.runs:
        run = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz"
                         else path.read_text())
        second = "imb" in run.get("searches", [])
        for bench in run["searches"]:
            if bench not in NAMES:
                continue
            key = (NAMES[bench], run["collective"])
            parts = pooled.setdefault(key, [[], [], defaultdict(list), defaultdict(list)])
            d2, n2, d2s, n2s = squares(run, bench)
            if second:  # the check: the bootstrapped floor beside the measured one
                b2 = squares(run, bench, bootstrap=True)[1]
                print(f"{path.name} {NAMES[bench]}: noise floor by a second IMB "
                      f"{math.sqrt(statistics.fmean(n2)):.4f}, bootstrapped "
                      f"{math.sqrt(statistics.fmean(b2)):.4f} (RMS, log units)")
            parts[0] += d2
            parts[1] += n2
            for size, values in d2s.items():
                parts[2][size] += values
            for size, values in n2s.items():
                parts[3][size] += values
            sources[key].append(f"{run['rounds']} rounds at {run['time_per_size']:g} s per size "
                                f"({len(d2)} configurations; noise floor "
                                f"{'by a second IMB' if second else 'bootstrapped'})")
            cpu = run.get("cpu", "unknown CPU")
    if not pooled:
        return 1
    stored = json.loads(DATA.read_text()) if DATA.exists() else {"benchmarks": {}}
    values = {key: term(parts[0], parts[1]) for key, parts in pooled.items()}
    for (bench, collective), (d2, n2, d2s, n2s) in sorted(pooled.items()):
        value = values[(bench, collective)]
        unresolved = ""
        if value == 0:  # no distance beyond the rounds' noise: a bias no larger than elsewhere
            others = [(v, c) for (b, c), v in values.items() if b == bench and v > 0]
            if others:
                value, source = max(others)
                unresolved = (f"; its distance from IMB was within the noise of its rounds, so "
                              f"the {source} term stands in")
        per_size = {size: round(term(d2s[size], n2s.get(size, [])), 4) for size in sorted(d2s)}
        rms_d = math.sqrt(statistics.fmean(d2)) if d2 else 0.0
        rms_n = math.sqrt(statistics.fmean(n2)) if n2 else 0.0
        print(f"{bench} {collective}: term {value:.4f}{unresolved} (RMS distance from IMB {rms_d:.4f}, a "
              f"noise floor {rms_n:.4f}); per size: "
              + " ".join(f"{s}:{v:.3f}" for s, v in per_size.items()))
        measured = (f"{date.today().isoformat()}, {cpu}, 2 ranks, "
                    + "; ".join(sources[(bench, collective)])
                    + ", scripts/bench_agreement.py and scripts/fidelity_terms.py" + unresolved)
        stored["benchmarks"].setdefault(bench, {})[collective] = {
            "systematic": round(value, 4), "per_size": {str(s): v for s, v in per_size.items()},
            "measured": measured}
    if args.write:
        DATA.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        print(f"written: {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
