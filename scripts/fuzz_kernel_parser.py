#!/usr/bin/env python3
"""Fuzz the mpi4py-kernel output parser: only a sane result or its own error may come out.

Mutates real kernel output (tests/data/kernel-output-*.txt, 4 sizes on 2 ranks) with a seeded RNG:
the IMB fuzzer's text edits (truncations, byte flips/inserts/deletes, duplicated/dropped/swapped
lines, garbage) plus record-level damage (a field set to a huge integer, NaN/Infinity, 1e400,
5e-324, a wrong type; t_min and t_max swapped; deeply nested or overlong `AUTOTUNE` lines;
duplicated, dropped and cut records). Each case goes to parse_kernel_output and counts as
accepted, rejected (a LaunchFailure: BenchmarkOutputError, or WrongResult), insane (accepted but
implausible: a size not requested, iters outside 1..1e12, a time non-finite or outside
[1e-4, 1e9] us, t_min <= t_avg <= t_max broken) or uncaught (by exception type, including what
only the parser's last-resort safety net caught). Exits 1 if anything was insane or uncaught.
tests/benchmarks/test_kernel_parser_fuzz.py imports the same functions.

    .venv/bin/python scripts/fuzz_kernel_parser.py --cases 100000 --seed 0
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import random
import sys
import time
from collections import Counter
from pathlib import Path

from autotune.benchmarks import parse_kernel_output
from autotune.benchmarks._base import BenchmarkOutput
from autotune.errors import LaunchFailure

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = sorted((ROOT / "tests/data").glob("kernel-output-*.txt"))
SIZES = (8, 64, 1024, 65536)  # what the corpus files were launched with
RANKS = 2
PREFIX = "AUTOTUNE "
SLACK = 1e-9

_spec = importlib.util.spec_from_file_location("fuzz_imb_parser",
                                               Path(__file__).resolve().parent / "fuzz_imb_parser.py")
imb_fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(imb_fuzz)  # reuse its text mutations

FIELDS = ("kind", "size", "iters", "t_max_us", "t_min_us", "t_avg_us", "ranks", "hosts", "time",
          "loop_us", "self_call_us", "loop_spread_us", "self_call_spread_us", "sizes",
          "mpi_library", "loop_overhead_us")
WEIRD_JSON = (
    "9" * 400, "-" + "9" * 400, "1" + "0" * 308, "10" * 12, "1e400", "-1e400", "1e308", "1e300",
    "5e-324", "1e-10", "NaN", "Infinity", "-Infinity", "true", "false", "null", '"8"', '"fast"',
    "[]", "{}", "[8]", "-1", "0", "0.0", "-0.0", "8.0", "8.5", "1e12", "1000000000001",
    "18446744073709551616", "2147483648", "3", "1", '"' + "x" * 5000 + '"', '"\\u0000"',
)
KINDS = ('"start"', '"size"', '"overhead"', '"done"', '"wrong-result"', '"boom"', "null", "7")


def load_corpus(paths=DEFAULT_CORPUS) -> list[str]:
    return [Path(p).read_text(encoding="utf-8", errors="surrogateescape") for p in paths]


def _record_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.startswith(PREFIX)]


def _set_field(line: str, key: str, raw: str) -> str:
    """The record with one field's JSON text replaced (added if missing), built as text so
    values json.dumps cannot write (400-digit ints are fine, NaN literals too) get in."""
    try:
        record = json.loads(line[len(PREFIX):])
        if not isinstance(record, dict):
            return line
        parts = [f"{json.dumps(k)}: {raw if k == key else json.dumps(v)}"
                 for k, v in record.items()]
    except (ValueError, RecursionError):  # a line an earlier edit already broke
        return line
    if key not in record:
        parts.append(f"{json.dumps(key)}: {raw}")
    return PREFIX + "{" + ", ".join(parts) + "}"


def _edit_records(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    recs = _record_lines(lines)
    i = rng.choice(recs) if recs else rng.randrange(len(lines))
    op = rng.randrange(11)
    if op >= 9:  # a plausible-looking change of one number: often still a valid output
        key = rng.choice(("size", "iters", "t_max_us", "t_min_us", "t_avg_us", "ranks", "sizes"))
        factor = rng.choice((0.5, 0.999, 1.0000001, 2, 1e3, 1e-3, 0))
        try:
            r = json.loads(lines[i][len(PREFIX):])
            if key in r and isinstance(r[key], (int, float)):
                r[key] = type(r[key])(r[key] * factor)
                lines[i] = PREFIX + json.dumps(r)
        except (ValueError, TypeError, AttributeError, RecursionError, OverflowError):
            pass
    elif op == 0:  # one field gets an absurd or wrongly typed value
        key = rng.choice(FIELDS[1:])
        lines[i] = _set_field(lines[i], key, rng.choice(WEIRD_JSON))
    elif op == 1:
        lines[i] = _set_field(lines[i], "kind", rng.choice(KINDS))
    elif op == 2:  # t_min > t_max, or t_avg outside them
        try:
            r = json.loads(lines[i][len(PREFIX):])
            a, b = rng.sample(("t_min_us", "t_max_us", "t_avg_us"), 2)
            r[a], r[b] = r[b] * rng.choice((1, 1.5, 10)), r[a]
            lines[i] = PREFIX + json.dumps(r)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError):
            pass  # a record an earlier edit already broke
    elif op == 3:  # deep nesting, the RecursionError of issue 13
        depth = rng.choice((100, 1000, 5000, 50000, 200000))
        opener = rng.choice(("[", "{\"a\":", "[{\"a\":"))
        lines.insert(i, PREFIX + opener * depth + ("1" + "]" * depth if opener == "[" else ""))
    elif op == 4:  # a duplicated record, or a record repeated many times
        lines[i:i] = [lines[i]] * rng.choice((1, 1, 2, 100))
    elif op == 5 and len(lines) > 1:
        del lines[i]
    elif op == 6:  # a record cut in the middle (and maybe continued by the next)
        lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
        if rng.random() < 0.5 and i + 1 < len(lines):
            lines[i:i + 2] = [lines[i] + lines[i + 1]]
    elif op == 7:  # an overlong record
        lines.insert(i, PREFIX + '{"kind": "size", "pad": "' + "x" * rng.choice((70000, 10**6))
                     + '"}')
    else:  # a record with a huge integer appended, as the poison hook prints
        lines.insert(i, _set_field(lines[i], rng.choice(("size", "iters", "t_max_us", "time")),
                                   "9" * rng.choice((309, 400, 5000))))
    return "\n".join(lines)


def mutate(rng: random.Random, text: str) -> str:
    """One to three edits, record-level or (about one time in three) the IMB fuzzer's text
    edits."""
    for _ in range(rng.choice((1, 1, 2, 3))):
        text = imb_fuzz.mutate(rng, text) if rng.random() < 0.35 else _edit_records(rng, text)
    return text


def check_sane(out: BenchmarkOutput) -> None:
    """What an accepted result must satisfy; AssertionError otherwise."""
    assert isinstance(out, BenchmarkOutput), "accepted something that is no BenchmarkOutput"
    assert out.ranks == RANKS and isinstance(out.ranks, int), out.ranks
    assert sorted(out.timings) == sorted(SIZES), f"sizes {sorted(out.timings)}"
    assert out.hosts and all(isinstance(h, str) for h in out.hosts), out.hosts
    assert isinstance(out.mpi_library, str)
    assert out.started is None or (isinstance(out.started, float | int)
                                   and math.isfinite(out.started)), out.started
    for size, t in out.timings.items():
        assert t.size == size and type(size) is int, t
        assert type(t.iters) is int and 1 <= t.iters <= 10**12, t
        for v in (t.t_min_us, t.t_avg_us, t.t_max_us):
            assert isinstance(v, float) and not isinstance(v, bool), t
            assert math.isfinite(v) and 1e-4 <= v <= 1e9, t
        assert t.t_min_us <= t.t_avg_us * (1 + SLACK) + SLACK, t
        assert t.t_avg_us <= t.t_max_us * (1 + SLACK) + SLACK, t


def run_case(text: str, parse=parse_kernel_output) -> str:
    """'accepted' or 'rejected'; raises whatever else the parser let out, or met only in its
    last-resort safety net (a bug even though callers never see it), or AssertionError."""
    try:
        out = parse(text, SIZES, RANKS)
    except LaunchFailure as exc:
        if exc.__cause__ is not None:  # the parser's safety net caught one of its own bugs
            raise exc.__cause__
        return "rejected"
    check_sane(out)
    return "accepted"


def fuzz(corpus: list[str], cases: int, seed: int,
         parse=parse_kernel_output) -> tuple[Counter, list[str]]:
    """Counts per outcome ('accepted', 'rejected', 'insane', 'uncaught <Type>') and examples:
    the IMB fuzz loop, run with this script's mutations and kernel-output checks."""
    return imb_fuzz.fuzz(corpus, cases, seed, run=lambda text: run_case(text, parse),
                         mutate_with=mutate)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("corpus", nargs="*", type=Path,
                        help=f"kernel outputs for sizes {SIZES} on {RANKS} ranks (default: "
                             "tests/data/kernel-output-*.txt)")
    args = parser.parse_args()
    corpus = load_corpus(args.corpus or DEFAULT_CORPUS)
    start = time.perf_counter()
    counts, examples = fuzz(corpus, args.cases, args.seed)
    return imb_fuzz.report(corpus, args.cases, args.seed, counts, examples,
                           time.perf_counter() - start, "own error")


if __name__ == "__main__":
    sys.exit(main())
