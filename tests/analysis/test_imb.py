"""IMB outputs a user already has, as curves: IMB-MPI1 and IMB-NBC files, and an IMB-NBC table
embedded in a paper's text (seeds/004: rows without leading spaces, PDF debris around)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotune.analysis import imb_curves, read_imb_file
from autotune.errors import InputError
from tests import SHARED

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = SHARED / "fixtures" / "imb"
SEED004 = SHARED / "seeds" / "004_e6f5c80db9a46652.txt"
SEED004_COPY = ROOT / "tests" / "data" / "imb-nbc-seed004.txt"

HEAD = """# Benchmarking Allreduce
# #processes = 2
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
"""


def test_imb_mpi1_files_give_t_avg_curves_per_table():
    both = read_imb_file(FIXTURES / "imb-mpi1-allgather-alltoall-np2.txt")
    assert [(c.benchmark, c.nprocs, c.collective) for c in both.curves] == [
        ("Allgather", 2, "allgather"), ("Alltoall", 2, "alltoall")]
    assert both.version == "2021.11"
    (allreduce,) = read_imb_file(FIXTURES / "imb-mpi1-allreduce-np2.txt").curves
    assert allreduce.column == "t_avg[usec]" and not allreduce.nbc and allreduce.complete
    curve = allreduce.curve
    assert curve.sizes[:3] == (0, 4, 8) and curve.sizes[-1] == 2**20 and len(curve.sizes) == 20
    assert curve.t_us[curve.sizes.index(8192)] == 6.12  # t_avg; t_min 5.37, t_max 6.88
    assert curve.low_us is None  # IMB prints the spread over ranks, not a confidence band
    (slowest,) = read_imb_file(FIXTURES / "imb-mpi1-allreduce-np2.txt", latency="max").curves
    assert slowest.column == "t_max[usec]" and slowest.curve.t_us[12] == 6.88


def test_imb_nbc_files_give_t_pure_and_keep_overlap_columns():
    (nbc,) = read_imb_file(FIXTURES / "imb-nbc-iallreduce-np2.txt").curves
    assert (nbc.benchmark, nbc.collective, nbc.column) == ("Iallreduce", "allreduce",
                                                           "t_pure[usec]")
    i = nbc.curve.sizes.index(4096)
    assert nbc.curve.t_us[i] == 6.68
    assert (nbc.t_ovrl_us[i], nbc.t_cpu_us[i], nbc.overlap_pct[i]) == (12.93, 6.90, 9.48)


@pytest.mark.parametrize("path", [SEED004, SEED004_COPY])
def test_the_table_embedded_in_seed004_is_read(path):
    imb = read_imb_file(path)
    assert [c.nprocs for c in imb.curves] == [2, 4, 8, 16, 32, 64, 128, 256, 512]
    assert {c.benchmark for c in imb.curves} == {"Iallreduce"} and imb.version == "4.0.0"
    first, last = imb.curves[0], imb.curves[-1]
    assert len(first.curve.sizes) == 22 and first.curve.sizes[-1] == 4 * 2**20
    assert first.curve.t_us[first.curve.sizes.index(1024)] == 9.17  # "1024 1000 25.13 9.17 ..."
    assert last.t_ovrl_us[-1] == 19036.89 and last.overlap_pct[-1] == 68.81
    assert all(c.complete for c in imb.curves)


def test_the_raw_seed_and_its_copy_give_the_same_curves():
    raw, copy = read_imb_file(SEED004), read_imb_file(SEED004_COPY)
    assert [c.curve.t_us for c in raw.curves] == [c.curve.t_us for c in copy.curves]


def test_failure_rows_are_left_out_and_reported():
    text = (HEAD + "            0         1000         0.04         0.05         0.04\n"
                   "            8         1000         0.53         0.66         0.59\n"
                   "           16         1000         0.54         0.56         0.55\n"
                   "           32 out-of-mem.;\n")
    (curve,) = imb_curves(text, "mem.txt").curves
    assert curve.curve.sizes == (0, 8, 16) and curve.failures == ("32 bytes: out-of-mem.",)


def test_a_cut_output_is_read_and_marked_incomplete():
    text = "# Maximum message length in bytes:   1024\n" + HEAD + (
        "            8         1000         0.53         0.66         0.59\n"
        "           16         1000   0.5")
    (curve,) = imb_curves(text, "cut.txt").curves
    assert curve.curve.sizes == (8,) and not curve.complete


def test_tables_without_sizes_are_skipped_with_a_note():
    barrier = ("# Benchmarking Barrier\n# #processes = 2\n"
               " #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]\n"
               "         1000         0.50         0.60         0.55\n\n")
    ok = HEAD + "            8         1000         0.53         0.66         0.59\n\n"
    imb = imb_curves(barrier + ok, "mixed.txt")
    assert [c.benchmark for c in imb.curves] == ["Allreduce"]
    assert imb.skipped == ("Barrier, 2 processes: no message sizes",)
    with pytest.raises(InputError, match=r"^only-barrier.txt: no IMB table with message sizes "
                                         r"\(only Barrier\)$"):
        imb_curves(barrier, "only-barrier.txt")


@pytest.mark.parametrize("text, message", [
    ("just a paper\nwith no table\n", "no benchmark table in IMB output"),
    ("", "no benchmark table in IMB output"),
    (HEAD + "            8         1000         0.53         0.66\n\n",
     "IMB output line 5: 4 cells for 5 columns"),
    (HEAD + "            8         1000         0.93         0.66         0.59\n\n",
     "t_min <= t_avg <= t_max does not hold"),
])
def test_files_without_a_usable_table_are_one_line_input_errors(tmp_path, text, message):
    path = tmp_path / "in.txt"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_imb_file(path)
    assert str(err.value).startswith(f"{path}: ") and message in str(err.value)
    assert "\n" not in str(err.value)


def test_unreadable_inputs_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="cannot read IMB output .*missing"):
        read_imb_file(tmp_path / "missing")
    with pytest.raises(InputError, match="not a regular file"):
        read_imb_file(tmp_path)
    (tmp_path / "bin").write_bytes(b"\xff\xfe# Benchmarking")
    with pytest.raises(InputError, match="not UTF-8"):
        read_imb_file(tmp_path / "bin")
    with pytest.raises(InputError, match="latency"):
        imb_curves(HEAD, "x", latency="min")
