"""The mpi4py-kernel output parser gives a sane result or its own error (a LaunchFailure), never
another exception and never an implausible timing (issue 13; scripts/fuzz_kernel_parser.py runs
the same fuzz at 10^5 cases)."""
import importlib.util
import json
from pathlib import Path

import pytest

from autotune.benchmarks import parse_kernel_output
from autotune.benchmarks._base import check_timing
from autotune.collectives import SizeTiming
from autotune.errors import BenchmarkOutputError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("fuzz_kernel_parser",
                                               ROOT / "scripts/fuzz_kernel_parser.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

REAL = (ROOT / "tests/data/kernel-output-allreduce.txt").read_text()


def parse(text):
    return parse_kernel_output(text, fuzz.SIZES, fuzz.RANKS)


def with_record(text, record_text, before="done"):
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if f'"kind": "{before}"' in line)
    return "\n".join(lines[:at] + [record_text] + lines[at:])


def replace_field(key, raw, size=8):
    lines = REAL.splitlines()
    i = next(i for i, line in enumerate(lines) if f'"size": {size},' in line)
    lines[i] = fuzz._set_field(lines[i], key, raw)
    return "\n".join(lines)


def test_the_real_output_is_accepted_and_sane():
    fuzz.check_sane(parse(REAL))


@pytest.mark.parametrize("text, match", [
    (with_record(REAL, "AUTOTUNE " + "[" * 100000), "longer than"),
    (with_record(REAL, "AUTOTUNE " + "[" * 20000), "nested too deeply"),
    (with_record(REAL, fuzz._set_field(REAL.splitlines()[2], "iters", "9" * 400)),
     "integer with 400 digits"),
    (replace_field("t_max_us", "1" + "0" * 400), "integer with 401 digits"),
    (replace_field("t_max_us", "1e400"), "non-finite"),
    (replace_field("t_max_us", "NaN"), "non-finite number NaN"),
    (replace_field("t_min_us", "-Infinity"), "non-finite number -Infinity"),
    (replace_field("t_max_us", "5e-324"), "t_max_us"),
    (replace_field("t_max_us", "1e300"), "implausibly large"),
    (replace_field("t_max_us", "0.5"), "t_min <= t_avg <= t_max"),
    (replace_field("t_avg_us", "0.1"), "t_min <= t_avg <= t_max"),
    (replace_field("iters", "true"), "not a number"),
    (replace_field("iters", "12.5"), "not an integer"),
    (replace_field("iters", "0"), "positive"),
    (replace_field("iters", "1000000000001"), "implausibly large"),
    (replace_field("size", "8.0"), "not an integer"),
    (replace_field("size", "16"), "unrequested"),
    (with_record(REAL, REAL.splitlines()[0], before="size"), "second start"),
    (REAL + "\n" + REAL.splitlines()[-1], "second done"),
])
def test_malformed_or_implausible_records_are_output_errors(text, match):
    with pytest.raises(BenchmarkOutputError, match=match):
        parse(text)


def test_what_the_poison_hook_prints_is_an_output_error():
    record = {"kind": "size", "size": 8, "iters": 10**400, "t_max_us": 1.0, "t_min_us": 1.0,
              "t_avg_us": 1.0}
    with pytest.raises(BenchmarkOutputError, match="integer with 401 digits in a record"):
        parse(with_record(REAL, "AUTOTUNE " + json.dumps(record)))


def test_times_that_agree_to_rounding_are_accepted():
    t = 1.547261174533879
    check_timing(SizeTiming(size=8, iters=1, t_min_us=t, t_avg_us=t * (1 + 1e-12), t_max_us=t))


def test_fuzz_mutations_give_a_sane_result_or_an_output_error():
    counts, examples = fuzz.fuzz(fuzz.load_corpus(), 10_000, seed=7)
    bad = {k: v for k, v in counts.items() if k.startswith("uncaught") or k == "insane"}
    assert not bad, (bad, examples[:3])
    assert counts["accepted"] > 500 and counts["rejected"] > 5000, counts  # both paths exercised


def test_fuzz_helpers_detect_insane_results():
    out = parse(REAL)
    t = out.timings[8]
    for bad in (SizeTiming(8, t.iters, t.t_min_us, t.t_min_us, t.t_max_us),  # t_max < t_min
                SizeTiming(8, t.iters, 1e300, 1e300, 1e300),
                SizeTiming(8, 0, t.t_max_us, t.t_min_us, t.t_avg_us)):
        with pytest.raises(AssertionError):
            fuzz.check_sane(type(out)(ranks=2, hosts=out.hosts,
                                      timings={**out.timings, 8: bad}))
