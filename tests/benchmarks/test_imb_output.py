"""The IMB output parser: real outputs parse to the right numbers; damaged ones give a sane
result or ImbOutputError, never another exception (fuzzed with scripts/fuzz_imb_parser.py)."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

from autotune.benchmarks._imb_output import (
    ImbOutput,
    ImbOutputError,
    ImbRow,
    ImbTable,
    parse_imb_output,
)
from autotune.errors import BenchmarkOutputError
from tests import SHARED

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = SHARED / "fixtures" / "imb"
SEED004 = ROOT / "tests/data/imb-nbc-seed004.txt"

_spec = importlib.util.spec_from_file_location("fuzz_imb_parser",
                                               ROOT / "scripts/fuzz_imb_parser.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

BANNER = """\
#----------------------------------------------------------------
#    Intel(R) MPI Benchmarks 2021.11, MPI-1 part
#----------------------------------------------------------------
# Minimum message length in bytes:   0
# Maximum message length in bytes:   {maxlen}
#
"""
FINALIZE = "\n\n# All processes entering MPI_Finalize\n\n"

# Real outputs of /work/shared/tools/imb on this machine (banner shortened).
# mpirun -np 2 IMB-MPI1 -msglog 3:4 -npmin 1 -time 0.1 allreduce barrier
GROUPS = BANNER.format(maxlen=16) + """
#----------------------------------------------------------------
# Benchmarking Allreduce 
# #processes = 1 
# ( 1 additional process waiting in MPI_Barrier)
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0         1000         0.03         0.03         0.03
            8         1000         0.04         0.04         0.04
           16         1000         0.04         0.04         0.04

#----------------------------------------------------------------
# Benchmarking Allreduce 
# #processes = 2 
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0         1000         0.03         0.03         0.03
            8         1000         0.37         0.48         0.43
           16         1000         0.35         0.48         0.41

#---------------------------------------------------
# Benchmarking Barrier 
# #processes = 1 
# ( 1 additional process waiting in MPI_Barrier)
#---------------------------------------------------
 #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
         1000         0.00         0.00         0.00

#---------------------------------------------------
# Benchmarking Barrier 
# #processes = 2 
#---------------------------------------------------
 #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
         1000         0.37         0.37         0.37
""" + FINALIZE

# mpirun -np 2 IMB-MPI1 -msglog 20:23 -npmin 2 -mem 0.01 -time 0.1 alltoall allreduce
OUT_OF_MEM = BANNER.format(maxlen=8388608) + """
#----------------------------------------------------------------
# Benchmarking Alltoall 
# #processes = 2 
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0         1000         0.03         0.05         0.04
      1048576           40       163.52       166.93       165.22
      2097152           20       364.76       368.75       366.76
      4194304 out-of-mem.; needed X=   0.017 GB; use flag "-mem X" or MAX_MEM_USAGE>=X (IMB_mem_info.h)

#----------------------------------------------------------------
# Benchmarking Allreduce 
# #processes = 2 
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0         1000         0.03         0.03         0.03
      1048576           40       209.34       210.07       209.71
      2097152           20       498.56       499.93       499.25
      4194304           10       955.34       957.83       956.58
      8388608 out-of-mem.; needed X=   0.017 GB; use flag "-mem X" or MAX_MEM_USAGE>=X (IMB_mem_info.h)
""" + FINALIZE

# mpirun -np 2 IMB-MPI1 -msglog 3:4 -multi 1 -npmin 1 -time 0.1 allreduce
MULTI = BANNER.format(maxlen=16) + """
#-----------------------------------------------------------------------------
# Benchmarking Multi-Allreduce 
# ( 2 groups of 1 processes each running simultaneous ) 
# Group  0:     0
# 
# Group  1:     1
# 
#-----------------------------------------------------------------------------
        Group       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]

            0            0         1000         0.03         0.03         0.03
            1            0         1000         0.03         0.03         0.03

            0            8         1000         0.03         0.03         0.03
            1            8         1000         0.03         0.03         0.03

            0           16         1000         0.03         0.03         0.03
            1           16         1000         0.03         0.03         0.03

#-----------------------------------------------------------------------------
# Benchmarking Allreduce 
# #processes = 2 
#-----------------------------------------------------------------------------
        Group       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]

            0            0         1000         0.03         0.03         0.03

            0            8         1000         0.39         0.44         0.42

            0           16         1000         0.33         0.41         0.37
""" + FINALIZE

# mpirun -np 2 IMB-NBC -msglog 3:5 -npmin 2 -time 0.1 iallreduce iallreduce_pure ibarrier
NBC_PURE = BANNER.format(maxlen=32).replace("MPI-1", "MPI-NBC") + """
#-----------------------------------------------------------------------------
# Benchmarking Iallreduce 
# #processes = 2 
#-----------------------------------------------------------------------------
       #bytes #repetitions t_ovrl[usec] t_pure[usec]  t_CPU[usec]   overlap[%]
            0         1000         0.31         0.04         0.24         0.00
            8         1000         1.60         0.99         0.93        32.13
           16         1000         1.59         1.06         0.91        35.27
           32         1000         2.29         1.11         1.52        22.87

#----------------------------------------------------------------
# Benchmarking Iallreduce_pure 
# #processes = 2 
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0         1000         0.03         0.04         0.03
            8         1000         0.50         1.01         0.76
           16         1000         0.51         1.05         0.78
           32         1000         0.53         1.08         0.80

#----------------------------------------------------------------
# Benchmarking Ibarrier 
# #processes = 2 
#----------------------------------------------------------------
 #repetitions t_ovrl[usec] t_pure[usec]  t_CPU[usec]   overlap[%]
         1000         0.64         0.43         0.23         4.20
""" + FINALIZE

SAMPLES = {"groups": GROUPS, "out-of-mem": OUT_OF_MEM, "multi": MULTI, "nbc-pure": NBC_PURE}


def fixture(name: str) -> str:
    path = FIXTURES / name
    assert path.is_file(), f"missing shared IMB fixture {path}"
    return path.read_text()


def all_texts() -> dict[str, str]:
    texts = {p.name: p.read_text() for p in sorted(FIXTURES.glob("*.txt"))}
    assert len(texts) >= 3, f"IMB fixtures missing in {FIXTURES}"
    return {**texts, SEED004.name: SEED004.read_text(), **SAMPLES}


# A small table to damage in the malformed cases below; {row} is replaced by the test.
BASE = BANNER.format(maxlen=16) + """
#----------------------------------------------------------------
# Benchmarking Allreduce 
# #processes = 2 
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0         1000         0.04         0.05         0.04
{row}
           16         1000         0.54         0.56         0.55
""" + FINALIZE
GOOD_ROW = "            8         1000         0.53         0.66         0.59"


def with_row(row: str) -> str:
    return BASE.replace("{row}", row)


# ---------------------------------------------------------------- real outputs, exact values


def test_allreduce_fixture_values():
    out = parse_imb_output(fixture("imb-mpi1-allreduce-np2.txt"))
    assert (out.finished, out.version, len(out.tables)) == (True, "2021.11", 1)
    t = out.table("Allreduce", 2)
    assert (t.benchmark, t.processes, t.waiting, t.complete, len(t.rows)) == \
        ("Allreduce", 2, 0, True, 20)
    assert t.columns == ("#bytes", "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]")
    assert t.row(1048576) == ImbRow(1048576, 40, t_min_us=215.13, t_max_us=215.36, t_avg_us=215.25)
    assert t.row(0).t_min_us == 0.04 and t.row(0).repetitions == 1000
    assert t.row(8192).t_max_us == 6.88 and t.row(65536).repetitions == 640
    assert [r.bytes for r in t.rows][:3] == [0, 4, 8]
    assert all(r.t_ovrl_us is None and r.failure == "" for r in t.rows)


def test_allgather_alltoall_fixture_values():
    out = parse_imb_output(fixture("imb-mpi1-allgather-alltoall-np2.txt"))
    assert [(t.benchmark, t.processes, len(t.rows), t.complete) for t in out.tables] == \
        [("Allgather", 2, 20, True), ("Alltoall", 2, 20, True)]
    assert out.table("Allgather", 2).row(262144).t_avg_us == 26.89
    alltoall = out.table("ALLTOALL", 2)  # case-insensitive
    assert alltoall.row(65536) == ImbRow(65536, 640, t_min_us=8.90, t_max_us=9.01, t_avg_us=8.96)
    assert alltoall.row(1).t_max_us == 0.54
    with pytest.raises(ImbOutputError, match="no Allreduce table for 2 processes"):
        out.table("Allreduce", 2)
    with pytest.raises(ImbOutputError):
        out.table("Alltoall", 4)
    with pytest.raises(ImbOutputError, match="no 3-byte row"):
        alltoall.row(3)


def test_nbc_fixture_values():
    out = parse_imb_output(fixture("imb-nbc-iallreduce-np2.txt"))
    t = out.table("iallreduce", 2)
    assert (out.finished, out.version, len(t.rows), t.complete) == (True, "2021.11", 18, True)
    assert t.row(4) == ImbRow(4, 1000, t_ovrl_us=2.79, t_pure_us=1.58, t_cpu_us=1.66,
                              overlap_pct=26.68)
    assert t.row(262144) == ImbRow(262144, 160, t_ovrl_us=140.90, t_pure_us=71.71,
                                   t_cpu_us=72.24, overlap_pct=4.21)
    assert t.row(16384).overlap_pct == 0.0 and t.row(0).t_min_us is None


def test_seed004_nbc_table_2_to_512_processes():
    text = SEED004.read_text()
    assert text.startswith("# Source: /work/shared/seeds/004")
    out = parse_imb_output(text)
    assert (out.finished, out.version) == (False, "4.0.0")  # a PDF excerpt, no MPI_Finalize
    assert [t.processes for t in out.tables] == [2 ** k for k in range(1, 10)]
    assert [t.waiting for t in out.tables] == [512 - 2 ** k for k in range(1, 10)]
    assert all(t.benchmark == "Iallreduce" and len(t.rows) == 22 for t in out.tables)
    # the last table ends in PDF debris with no terminator: complete since it reached the
    # announced maximum message length (4194304)
    assert all(t.complete for t in out.tables)
    assert out.table("Iallreduce", 2).row(4194304) == ImbRow(
        4194304, 10, t_ovrl_us=7861.61, t_pure_us=6294.99, t_cpu_us=6681.63, overlap_pct=76.55)
    assert out.table("Iallreduce", 512).row(4) == ImbRow(
        4, 1000, t_ovrl_us=33.53, t_pure_us=21.75, t_cpu_us=21.94, overlap_pct=46.32)
    assert out.table("Iallreduce", 64).row(32).t_ovrl_us == 73.38
    assert out.table("Iallreduce", 64).row(512).overlap_pct == 10.64


def test_several_process_groups_waiting_and_barrier():
    out = parse_imb_output(GROUPS)
    assert [(t.benchmark, t.processes, t.waiting) for t in out.tables] == [
        ("Allreduce", 1, 1), ("Allreduce", 2, 0), ("Barrier", 1, 1), ("Barrier", 2, 0)]
    assert out.table("Allreduce", 1).row(16).t_avg_us == 0.04
    assert out.table("Allreduce", 2).row(8) == ImbRow(8, 1000, t_min_us=0.37, t_max_us=0.48,
                                                      t_avg_us=0.43)
    barrier = out.table("Barrier", 2)  # no #bytes column: one row with bytes 0
    assert barrier.columns[0] == "#repetitions" and barrier.complete
    assert barrier.rows == (ImbRow(0, 1000, t_min_us=0.37, t_max_us=0.37, t_avg_us=0.37),)


def test_failure_rows_end_their_table():
    out = parse_imb_output(OUT_OF_MEM)
    alltoall, allreduce = out.tables
    assert alltoall.rows[-1] == ImbRow(4194304, 0, failure="out-of-mem.")
    assert alltoall.row(2097152).t_max_us == 368.75 and alltoall.complete
    assert allreduce.row(8388608).failure == "out-of-mem."
    assert allreduce.row(4194304).t_avg_us == 956.58
    # cut right after a failure row: IMB stops the benchmark there, so the table is whole
    cut = OUT_OF_MEM[:OUT_OF_MEM.index("(IMB_mem_info.h)\n\n#---") + 17]
    assert parse_imb_output(cut).tables[0].complete


@pytest.mark.parametrize("line, failure", [
    (("     4194304 time-out.; Time limit (secs_per_sample * msg_sizes_list_len) is over; use "
      "\"-time X\" or SECS_PER_SAMPLE=X (IMB_settings.h) to increase time limit."), "time-out."),
    ("        16 int-overflow.; The production rank*size caused int overflow for given sample",
     "int-overflow."),
])
def test_other_failure_rows(line, failure):
    text = BASE.replace("{row}", line).replace(
        "           16         1000         0.54         0.56         0.55\n", "")
    t = parse_imb_output(text).tables[0]
    assert [r.bytes for r in t.rows] == [0, int(line.split()[0])]
    assert t.rows[-1] == ImbRow(t.rows[-1].bytes, 0, failure=failure) and t.complete


def test_row_after_failure_row_is_rejected():
    with pytest.raises(ImbOutputError, match="after the failure row"):
        parse_imb_output(with_row("            8 out-of-mem.; needed X= 1 GB"))


def test_multi_groups_keep_the_group_column():
    out = parse_imb_output(MULTI)
    multi = out.table("multi-allreduce", 1)
    assert len(multi.rows) == 6 and multi.complete and multi.columns[0] == "Group"
    assert multi.row(8, group=1) == ImbRow(8, 1000, t_min_us=0.03, t_max_us=0.03,
                                           t_avg_us=0.03, group=1)
    assert out.table("Allreduce", 2).row(16, group=0).t_max_us == 0.41


def test_nbc_pure_and_ibarrier():
    out = parse_imb_output(NBC_PURE)
    assert out.table("Iallreduce_pure", 2).row(32).t_max_us == 1.08
    assert out.table("Iallreduce", 2).row(8).t_pure_us == 0.99
    assert out.table("Ibarrier", 2).rows == (
        ImbRow(0, 1000, t_ovrl_us=0.64, t_pure_us=0.43, t_cpu_us=0.23, overlap_pct=4.20),)


# ---------------------------------------------------------------- tolerated damage


def test_cut_mid_row_drops_the_row_and_marks_the_table():
    text = fixture("imb-mpi1-allreduce-np2.txt")
    cut = text[:text.index("215.13") + 3]
    out = parse_imb_output(cut)
    t = out.table("Allreduce", 2)
    assert (t.complete, out.finished, len(t.rows), t.rows[-1].bytes) == (False, False, 19, 524288)


def test_cut_between_rows_or_before_rows():
    text = fixture("imb-mpi1-allreduce-np2.txt")
    t = parse_imb_output(text[:text.index("      1048576")]).tables[0]
    assert (t.complete, len(t.rows)) == (False, 19)  # maximum (1048576) not reached
    t = parse_imb_output(text[:text.index("            0 ")]).tables[0]
    assert (t.complete, t.rows) == (False, ())
    t = parse_imb_output(text[:text.index("#----", text.index("#processes"))]).tables[0]
    assert (t.processes, t.complete, t.rows, t.columns) == (2, False, (), ())


def test_noise_lines_inside_and_outside_tables_are_skipped():
    noise = ("[1700000000.1] [host:1:0] ucp_context.c:1 UCX  WARN  not available\n"
             "--------------------------------------------------------------------------\n"
             "WARNING: something\n|\n?")
    t = parse_imb_output(noise + "\n" + with_row(noise + "\n" + GOOD_ROW)).tables[0]
    assert [r.bytes for r in t.rows] == [0, 8, 16] and t.complete


def test_unknown_and_reordered_columns_follow_the_header():
    text = BASE.replace("       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]",
                        " #repetitions t_max[usec] Mbytes/sec #bytes t_min[usec] t_avg[usec] x")
    text = text.replace("{row}\n", "     1000 0.66 12.3 8 0.53 0.59 junk\n")
    text = text.replace("0         1000         0.04         0.05         0.04",
                        "1000 0.05 0 0 0.04 0.04 -")
    text = text.replace("16         1000         0.54         0.56         0.55",
                        "1000 0.56 9 16 0.54 0.55 +")
    t = parse_imb_output(text).tables[0]
    assert t.row(8) == ImbRow(8, 1000, t_min_us=0.53, t_max_us=0.66, t_avg_us=0.59)


def test_crlf_no_final_newline_negative_zero():
    text = with_row("            8         1000         -0.00         0.00         0.00")
    out = parse_imb_output(text.replace("\n", "\r\n").rstrip())
    assert out.finished and out.tables[0].row(8).t_min_us == 0.0
    assert str(out.tables[0].row(8).t_min_us) == "0.0"


def test_long_noise_lines_are_cut_not_fatal():
    assert parse_imb_output("# " + "x" * 100_000 + "\n" + GROUPS).tables
    t = parse_imb_output(with_row("[host] " + "x" * 100_000 + "\n" + GOOD_ROW)).tables[0]
    assert [r.bytes for r in t.rows] == [0, 8, 16]


def test_bytes_input_is_decoded():
    assert parse_imb_output(GROUPS.encode() + b"\xff\xfe").tables


def test_error_is_a_benchmark_output_error():
    with pytest.raises(BenchmarkOutputError) as info:
        parse_imb_output("")
    assert info.value.reason == "crash" and "no benchmark table in IMB output" in str(info.value)


# ---------------------------------------------------------------- rejected damage


@pytest.mark.parametrize("row, match", [
    ("            8         1000         0.53         abc         0.59", "not a number"),
    ("            8         1000         0.53         0.66", "4 cells for 5 columns"),
    ("            8         1000         0.53         0.66         0.59    1.0", "6 cells"),
    ("            8         1000          nan         0.66         0.59", "out of range"),
    ("            8         1000         -nan         0.66         0.59", "out of range"),
    ("            8         1000         0.53          inf         0.59", "out of range"),
    ("            8         1000        -1.00         0.66         0.59", "out of range"),
    ("            8         1000         0.53        1e301         0.59", "out of range"),
    ("            8         1000         0.53        1e400         0.59", "out of range"),
    ("            8         1000 " + "1" + "0" * 308 + ".00 1.0 1.0", "not a number"),
    (" " + "9" * 400 + "         1000         0.53         0.66         0.59", "not a sane int"),
    ("            8  " + "9" * 400 + ".5         0.53         0.66         0.59", "not a sane"),
    ("            8         1000         0.66         0.53         0.59", "t_min <= t_avg"),
    ("            8         1000         0.53         0.66         0.70", "t_min <= t_avg"),
    ("            8         1000         0.60         0.66         0.59", "t_min <= t_avg"),
    ("            0         1000         0.04         0.05         0.04", "second row for 0 b"),
    ("            8         1000         \u0663.53         0.66         0.59", "not a number"),
    ("            8         1_000         0.53         0.66         0.59", "not a sane int"),
    ("            8         1000         0x10         0.66         0.59", "not a number"),
    ("            8         1000         0.53         0.66 " + "0" * 5000 + "1", "row longer than"),
    ("       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]", "second column header"),
])
def test_malformed_rows_are_rejected_naming_the_line(row, match):
    with pytest.raises(ImbOutputError, match=r"line 14: .*" + match):
        parse_imb_output(with_row(row))


def test_nbc_overlap_above_100_is_rejected():
    text = fixture("imb-nbc-iallreduce-np2.txt").replace("26.68\n", "126.68\n")
    with pytest.raises(ImbOutputError, match="overlap_pct '126.68' is out of range"):
        parse_imb_output(text)


@pytest.mark.parametrize("text, match", [pytest.param(t, m, id=i) for i, t, m in [
    ("empty", "", "no benchmark table"),
    ("banner", BANNER.format(maxlen=8) + FINALIZE, "no benchmark table"),
    ("garbage", "garbage\n\x00\xff" * 100, "no benchmark table"),
    ("nested", "(" * 200_000 + "[{" * 100_000 + "\n" + "}" * 3000, "no benchmark table"),
    ("header-alone", "  #bytes #repetitions  t_min[usec]  t_max[usec]\n", "without '# Bench"),
    ("procs-alone", "# #processes = 2\n", "without a '# Benchmarking' line"),
    ("no-header", "# Benchmarking Allreduce\n# #processes = 2\n# Benchmarking Bcast\n",
     "has no column header"),
    ("procs-twice", "# Benchmarking Allreduce\n# #processes = 2\n# #processes = 4\n",
     "second process count"),
    ("procs-0", "# Benchmarking Allreduce\n# #processes = 0\n", "0 processes"),
    ("bad-name", "# Benchmarking Allre\x00duce\n", "not a name"),
    ("table-twice", GROUPS + GROUPS, "second Allreduce table for 1 processes"),
    ("cut-twice", GROUPS + "# Benchmarking Barrier\n# #processes = 2\n", "second Barrier"),
    ("16MiB", "x" * (16 * 1024 * 1024 + 1), "larger than 16 MiB"),
    ("16MiB-bytes", b"x" * (16 * 1024 * 1024 + 1), "larger than 16 MiB"),
    ("many-lines", "#\n" * 100_000 + GROUPS, "more than 100000 lines"),
    ("none", None, "not text"),
    ("int", 12, "not text"),
]])
def test_unusable_outputs_are_rejected(text, match):
    with pytest.raises(ImbOutputError, match=match):
        parse_imb_output(text)


def test_header_with_a_column_twice_is_rejected():
    text = with_row(GOOD_ROW).replace("t_avg[usec]", "t_min[usec]")
    with pytest.raises(ImbOutputError, match="line 12: a column appears twice"):
        parse_imb_output(text)


# ---------------------------------------------------------------- fuzzing (10,000 cases)

TRUNCATIONS_PER_TEXT = 400  # x 8 texts = 3,200 truncation cases
MUTATION_CASES = 10_000 - 8 * TRUNCATIONS_PER_TEXT


def _same_table_prefix(cut: ImbTable, full: ImbTable) -> None:
    assert cut.rows == full.rows[:len(cut.rows)], "a truncation changed a row"
    if cut.complete:
        assert cut.rows == full.rows, "a cut table claims to be complete"
    if cut.columns:
        assert (cut.columns, cut.waiting) == (full.columns, full.waiting)


def test_fuzz_truncations_give_prefixes_of_the_full_result():
    """Cut anywhere, the output gives the full result's tables, each a prefix of the real one,
    complete only when nothing of it is missing; or 'no benchmark table'."""
    rng = random.Random(20260101)
    texts = all_texts()
    assert len(texts) == 8
    for name, text in texts.items():
        full = parse_imb_output(text)
        points = {i + 1 for i, ch in enumerate(text) if ch == "\n"}  # every line boundary ...
        assert len(points) < TRUNCATIONS_PER_TEXT
        while len(points) < TRUNCATIONS_PER_TEXT:  # ... and random points inside lines
            points.add(rng.randrange(len(text) + 1))
        for pos in sorted(points):
            cut = text[:pos]
            try:
                out = parse_imb_output(cut)
            except ImbOutputError as exc:
                assert "no benchmark table" in str(exc), (name, pos, exc)
                continue
            fuzz.check_sane(out)
            assert not out.finished or "MPI_Finalize" in cut
            assert [(t.benchmark, t.processes) for t in out.tables] == \
                [(t.benchmark, t.processes) for t in full.tables][:len(out.tables)], (name, pos)
            for t in out.tables:
                _same_table_prefix(t, full.table(t.benchmark, t.processes))


def test_fuzz_mutations_give_a_sane_result_or_imb_output_error():
    corpus = list(all_texts().values())
    counts, examples = fuzz.fuzz(corpus, MUTATION_CASES, seed=7)
    assert sum(counts.values()) == MUTATION_CASES
    assert set(counts) <= {"accepted", "rejected"}, (counts, examples[:5])
    assert counts["accepted"] > MUTATION_CASES // 10 and counts["rejected"] > MUTATION_CASES // 10


def test_fuzz_helpers_detect_insane_results():
    bad = ImbOutput((ImbTable("Allreduce", 2, (ImbRow(8, 1, t_min_us=2.0, t_max_us=1.0),)),),
                    finished=True)
    with pytest.raises(AssertionError):
        fuzz.check_sane(bad)
    bad = ImbOutput((ImbTable("Allreduce", 2, (ImbRow(8, 1, t_avg_us=float("nan")),)),), True)
    with pytest.raises(AssertionError):
        fuzz.check_sane(bad)
