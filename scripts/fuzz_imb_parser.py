#!/usr/bin/env python3
"""Fuzz the IMB output parser: only a sane result or ImbOutputError may come out.

Mutates the real IMB fixtures (truncations, byte flips/inserts/deletes, duplicated/dropped/swapped
lines, absurd numbers, IMB-looking and garbage lines) with a seeded RNG, feeds each case to
parse_imb_output and counts: accepted, rejected (ImbOutputError), insane (accepted but a time is
not finite/>= 0, t_min <= t_avg <= t_max fails, ...) and uncaught (by exception type). Exits 1 if
anything was insane or uncaught. tests/benchmarks/test_imb_output.py imports the same functions.

    .venv/bin/python scripts/fuzz_imb_parser.py --cases 100000 --seed 0
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
import time
from collections import Counter
from pathlib import Path

from autotune.benchmarks._imb_output import ImbOutput, ImbOutputError, parse_imb_output

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = (sorted((ROOT.parent / "shared/fixtures/imb").glob("*.txt"))
                  + [ROOT / "tests/data/imb-nbc-seed004.txt"])
TIME_FIELDS = ("t_min_us", "t_max_us", "t_avg_us", "t_ovrl_us", "t_pure_us", "t_cpu_us",
               "overlap_pct")
SLACK = 1e-9

WEIRD_NUMBERS = (
    "nan", "-nan", "NaN", "inf", "-inf", "Infinity", "-1.00", "-0.00", "1e301", "1e400", "1e-400",
    "9" * 400, "9" * 400 + ".00", "1" + "0" * 308 + ".00", "0x10", "1_000", "\u0663", "\uff11",
    "+5", ".", "-", "", "1e", "1.2.3", "2147483648", "18446744073709551616", "0", "000000",
    "4294967296", "-2147483648", "1e99999", "12345678901234567890123",
)
SNIPPETS = (
    "     4194304 out-of-mem.; needed X=   0.017 GB; use flag \"-mem X\" or MAX_MEM_USAGE>=X",
    "     8388608 time-out.; Time limit (secs_per_sample * msg_sizes_list_len) is over",
    "         1024 int-overflow.; The production rank*size caused int overflow for given sample",
    "       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]",
    "       #bytes #repetitions t_ovrl[usec] t_pure[usec]  t_CPU[usec]   overlap[%]",
    " #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]",
    "        Group       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]",
    "       #bytes #repetitions       t[usec]   Mbytes/sec     defects",
    "# Benchmarking Allreduce ", "# Benchmarking Barrier", "# Benchmarking Multi-Allreduce",
    "# #processes = 2 ", "# #processes = 0", "# #processes = 999999999999", "# #processes = -4",
    "# ( 1 additional process waiting in MPI_Barrier)",
    "# ( 99999999999 additional processes waiting in MPI_Barrier)",
    "# ( 2 groups of 1 processes each running simultaneous ) ",
    "# All processes entering MPI_Finalize", "#" + "-" * 77, "", "   ", "\r", "|", "?",
    "--------------------------------------------------------------------------",
    "[host:01234] [[1234,1],0] mca_btl_tcp_endpoint: WARNING ...",
    "[1700000000.000000] [host:1234:0]  ucp_context.c:1100 UCX  WARN  transport 'x' not available",
    "            8         1000         0.50         0.40         0.45",
    "            8         1000         0.40         0.50         0.45         7.00      extra",
    "         1000         0.34         0.34         0.34",
    "            4         1000         2.79         1.58         1.66       126.68",
    "#    Intel(R) MPI Benchmarks 2021.11, MPI-1 part", "# Maximum message length in bytes:   8",
    "x" * 5000, "9 " * 3000, "(" * 6000, "[{" * 3000 + "}]" * 3000, "\x00" * 100, "\ufeff#bytes",
    "\udcff\udcfe garbage \u2028 \x0b\x0c\x1c\x1d\x85", "#" * 5000,
)
GARBAGE = ("\x00", "\r", "\n", "\t", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\udcff", "\ufffd",
           "#", "-", "+", ".", "e", "E", " ", "0", "1", "9", "n", "a", "[", "%", "(", "\u0663", "é")


def load_corpus(paths=DEFAULT_CORPUS) -> list[str]:
    return [Path(p).read_text(encoding="utf-8", errors="surrogateescape") for p in paths]


def _rand_text(rng: random.Random, n: int) -> str:
    if rng.random() < 0.5:
        return "".join(rng.choice(GARBAGE) for _ in range(n))
    return rng.randbytes(n).decode("utf-8", "surrogateescape")


def _edit_lines(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(6)
    if op == 0:
        lines.insert(i, lines[j])  # duplicate a line
    elif op == 1 and len(lines) > 1:
        del lines[i]
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:
        lines.insert(i, rng.choice(SNIPPETS))
    elif op == 4:  # replace one cell by an absurd or malformed number
        cells = lines[i].split()
        if cells:
            cells[rng.randrange(len(cells))] = rng.choice(WEIRD_NUMBERS)
            lines[i] = "  ".join(cells)
    else:
        lines[i:i] = [lines[j]] * rng.randint(2, 50)  # a repeated block
    return "\n".join(lines)


def mutate(rng: random.Random, text: str) -> str:
    """One to four random edits; the first may be a truncation, the usual real-world damage."""
    for _ in range(rng.randint(1, 4)):
        if not text:
            text = _rand_text(rng, rng.randint(0, 50))
            continue
        pos = rng.randrange(len(text) + 1)
        op = rng.randrange(8)
        if op == 0:
            text = text[:pos]
        elif op == 1:
            text = text[:pos] + rng.choice(GARBAGE) + text[pos + 1:]
        elif op == 2:
            text = text[:pos] + _rand_text(rng, rng.randint(1, 20)) + text[pos:]
        elif op == 3:
            text = text[:pos] + text[pos + rng.randint(1, 200):]
        elif op == 4:
            text = text[:pos] + chr(ord(text[pos]) ^ (1 << rng.randrange(7))) + text[pos + 1:] \
                if pos < len(text) and ord(text[pos]) < 128 else text
        else:
            text = _edit_lines(rng, text)
    return text


def check_sane(out: ImbOutput) -> None:
    """What an accepted result must satisfy; AssertionError otherwise."""
    assert isinstance(out, ImbOutput) and out.tables, "accepted without tables"
    keys = set()
    for t in out.tables:
        assert isinstance(t.benchmark, str) and t.benchmark, t
        assert isinstance(t.processes, int) and t.processes >= 1, t.processes
        assert isinstance(t.waiting, int) and t.waiting >= 0, t.waiting
        assert (t.benchmark.lower(), t.processes) not in keys, "two tables with one key"
        keys.add((t.benchmark.lower(), t.processes))
        sizes = set()
        for r in t.rows:
            assert isinstance(r.bytes, int) and r.bytes >= 0 and isinstance(r.repetitions, int) \
                and r.repetitions >= 0, r
            assert (r.group, r.bytes) not in sizes, f"duplicate size {r.bytes}"
            sizes.add((r.group, r.bytes))
            values = [getattr(r, f) for f in TIME_FIELDS]
            if r.failure:
                assert all(v is None for v in values), r
            for v in values:
                assert v is None or (isinstance(v, float) and math.isfinite(v) and v >= 0), r
            assert r.overlap_pct is None or r.overlap_pct <= 100 + SLACK, r
            order = [v for v in (r.t_min_us, r.t_avg_us, r.t_max_us) if v is not None]
            assert all(a <= b * (1 + SLACK) + SLACK for a, b in itertools.pairwise(order)), r


def run_case(text: str) -> str:
    """'accepted' or 'rejected'; raises whatever else the parser let out, or met only in its
    last-resort safety net (a bug even though callers never see it), or AssertionError."""
    try:
        out = parse_imb_output(text)
    except ImbOutputError as exc:
        if exc.__cause__ is not None:  # the parser's safety net caught one of its own bugs
            raise exc.__cause__
        return "rejected"
    check_sane(out)
    return "accepted"


def fuzz(corpus: list[str], cases: int, seed: int, run=None,
         mutate_with=None) -> tuple[Counter, list[str]]:
    """Counts per outcome ('accepted', 'rejected', 'insane', 'uncaught <Type>') and examples.
    `run` (text -> outcome) and `mutate_with` default to this script's IMB ones; the kernel
    output fuzz (fuzz_kernel_parser.py) passes its own."""
    run = run or run_case
    mutate_with = mutate_with or mutate
    rng = random.Random(seed)
    counts: Counter = Counter()
    examples: list[str] = []
    for _ in range(cases):
        text = mutate_with(rng, rng.choice(corpus))
        try:
            counts[run(text)] += 1
        except AssertionError as exc:
            counts["insane"] += 1
            examples.append(f"insane: {str(exc)[:200]} in {text[:300]!r}")
        except BaseException as exc:  # counting what escaped is the point
            if isinstance(exc, KeyboardInterrupt):
                raise
            counts[f"uncaught {type(exc).__name__}"] += 1
            examples.append(f"{type(exc).__name__}: {str(exc)[:200]} in {text[:300]!r}")
    return counts, examples


def report(corpus: list[str], cases: int, seed: int, counts: Counter, examples: list[str],
           seconds: float, rejected_as: str) -> int:
    """Print the figures; exit status 1 when anything escaped or was accepted insane."""
    bad = {k: v for k, v in counts.items() if k.startswith("uncaught") or k == "insane"}
    print(f"corpus:   {len(corpus)} files")
    print(f"cases:    {cases} (seed {seed})")
    print(f"accepted: {counts['accepted']}")
    print(f"rejected: {counts['rejected']} ({rejected_as})")
    print(f"insane:   {counts['insane']}")
    print("uncaught: " + (", ".join(f"{k[9:]}={v}" for k, v in sorted(bad.items())
                                    if k != "insane") or "0"))
    print(f"seconds:  {seconds:.1f}")
    for line in examples[:5]:
        print("  " + line)
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("corpus", nargs="*", type=Path, help="IMB outputs (default: fixtures)")
    args = parser.parse_args()
    corpus = load_corpus(args.corpus or DEFAULT_CORPUS)
    start = time.perf_counter()
    counts, examples = fuzz(corpus, args.cases, args.seed)
    return report(corpus, args.cases, args.seed, counts, examples,
                  time.perf_counter() - start, "ImbOutputError")


if __name__ == "__main__":
    sys.exit(main())
