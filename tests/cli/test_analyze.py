"""`autotune analyze FILE...` on the IMB outputs in shared/fixtures/imb and on the IMB-NBC table
embedded in seeds/004, as a user runs it (installed script, standard output a pipe)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import cli_runner
from tests.cli import assert_one_line_error
from tests import SHARED

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted(str(p) for p in (SHARED / "fixtures" / "imb").glob("*.txt"))
SEED004 = str(SHARED / "seeds" / "004_e6f5c80db9a46652.txt")
HOCKNEY_HEADER = "region\tsizes\tpoints\tt_L us\tB MB/s\tM_half"
CLIFF_HEADER = "before\tafter\tMB/s before\tMB/s after\tdrop\tnoise"
BOX = set("─│┃━┏┓┗┛┡┩└┘├┤┬┴┼╇╈═║")


@pytest.fixture(scope="module")
def cli(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("analyze")
    return cli_runner(tmp / "home", tmp)


@pytest.fixture(scope="module")
def text(cli):
    assert len(FIXTURES) == 3, FIXTURES
    return cli("analyze", *FIXTURES, SEED004, check=True).stdout


@pytest.fixture(scope="module")
def data(cli):
    return json.loads(cli("analyze", *FIXTURES, SEED004, "--format", "json", check=True).stdout)


def blocks(text):
    """Per table: its heading line -> its lines."""
    out: dict[str, list[str]] = {}
    for chunk in text.strip().split("\n\n"):
        lines = chunk.splitlines()
        out[lines[0]] = lines[1:]
    return out


def test_every_table_gets_a_hockney_table_and_its_cliffs(text):
    assert "\x1b" not in text and not BOX & set(text)  # piped: plain tab-separated tables
    tables = blocks(text)
    assert len(tables) == 3 + 1 + 9  # allgather, alltoall | allreduce | iallreduce | seed 2..512
    for heading, lines in tables.items():
        assert HOCKNEY_HEADER in lines, heading
        assert any(line.startswith("cliffs: ") for line in lines), heading
        regions = lines[lines.index(HOCKNEY_HEADER) + 1:]
        regions = regions[:next(i for i, line in enumerate(regions) if line.startswith("cliffs"))]
        assert 1 <= len(regions) <= 3 and all(len(r.split("\t")) == 6 for r in regions), heading
    heading = next(h for h in tables if "004_" in h and "Iallreduce, 2 processes" in h)
    assert "t_pure[usec]" in heading and "throughput = 2M/t (allreduce)" in heading
    lines = tables[heading]
    header = lines[0].split("\t")
    assert header[:2] == ["size", "t_pure us"]
    assert header[-3:] == ["t_ovrl us", "t_CPU us", "overlap %"]
    row = next(line.split("\t") for line in lines if line.startswith("1 KiB\t"))
    assert row[1] == "9.17" and row[5] == "-34%" and row[-3:] == ["25.13", "9.25", "0"]
    cliffs = lines[lines.index(CLIFF_HEADER) + 1:]
    assert "512 B\t1 KiB\t340.2\t223.3\t34%\t5%" in cliffs


def test_fixture_cliff_and_regions(text):
    tables = blocks(text)
    (allgather,) = [v for h, v in tables.items() if "Allgather, 2 processes, t_avg[usec]" in h]
    assert allgather[allgather.index(CLIFF_HEADER) + 1].startswith("2 KiB\t4 KiB\t")
    (allreduce,) = [v for h, v in tables.items() if "allreduce-np2.txt: Allreduce" in h]
    assert "cliffs: none (no throughput fall above the 5% noise)" in allreduce


def test_json_holds_curves_fits_and_cliffs(data):
    tables = data["tables"]
    assert len(tables) == 13 and data["notes"] == []
    seed = [t for t in tables if t["source"] == SEED004]
    assert [t["nprocs"] for t in seed] == [2, 4, 8, 16, 32, 64, 128, 256, 512]
    first = seed[0]
    assert (first["benchmark"], first["collective"], first["volume"]) == ("Iallreduce",
                                                                         "allreduce", "2M")
    assert (512, 1024) in {(c["before_bytes"], c["after_bytes"]) for c in first["cliffs"]}
    size = next(s for s in first["sizes"] if s["bytes"] == 1024)
    assert (size["t_us"], size["t_ovrl_us"], size["t_cpu_us"], size["overlap_pct"]) == (
        9.17, 25.13, 9.25, 0.0)
    assert size["throughput_mb_s"] == pytest.approx(2048 / 9.17)
    for table in tables:
        regions = table["hockney"]["regions"]
        assert regions and regions[0]["min_bytes"] > 0
        assert sum(r["points"] for r in regions) == len([s for s in table["sizes"]
                                                         if s["bytes"] > 0])
        for r in regions:
            assert r["t_latency_us"] >= 0
            assert r["bandwidth_mb_s"] is None or r["bandwidth_mb_s"] > 0  # null: unbounded
            if r["bandwidth_mb_s"] is not None:
                assert r["m_half_bytes"] == pytest.approx(r["bandwidth_mb_s"] * r["t_latency_us"])
    allgather = next(t for t in tables if t["benchmark"] == "Allgather")
    assert allgather["volume"] == "M*np" and allgather["column"] == "t_avg[usec]"
    assert [(c["before_bytes"], c["after_bytes"]) for c in allgather["cliffs"]] == [(2048, 4096)]


def test_options_change_the_model_and_the_noise(cli):
    allgather = FIXTURES[0]
    assert "allgather" in allgather
    loose = json.loads(cli("analyze", allgather, "--noise", "20%", "--format", "json",
                           check=True).stdout)
    assert all(t["cliffs"] == [] and t["noise"] == 0.2 for t in loose["tables"])
    as_bcast = json.loads(cli("analyze", allgather, "--collective", "bcast", "--latency", "max",
                              "--max-regions", "1", "--format", "json", check=True).stdout)
    first = as_bcast["tables"][0]
    assert (first["collective"], first["volume"], first["column"]) == ("bcast", "M",
                                                                       "t_max[usec]")
    assert len(first["hockney"]["regions"]) == 1


def test_the_copy_of_the_seed_table_in_tests_data_reads_the_same(cli):
    copy = json.loads(cli("analyze", str(ROOT / "tests/data/imb-nbc-seed004.txt"),
                          "--max-regions", "1", "--format", "json", check=True).stdout)
    assert [t["nprocs"] for t in copy["tables"]] == [2, 4, 8, 16, 32, 64, 128, 256, 512]


def test_bad_input_is_one_line_naming_the_file(cli, tmp_path):
    paper = tmp_path / "paper.txt"
    paper.write_text("An abstract.\nNo benchmark here.\n")
    proc = cli("analyze", str(paper))
    assert proc.returncode == 2
    assert_one_line_error(proc, f"{paper}: no benchmark table in IMB output")
    proc = cli("analyze", str(tmp_path / "missing.txt"))
    assert proc.returncode == 2
    assert_one_line_error(proc, "cannot read IMB output")
    proc = cli("analyze", FIXTURES[0], "--noise", "2")
    assert proc.returncode == 2 and "between 0 and 1" in proc.stderr
    proc = cli("analyze", FIXTURES[0], "--collective", "nonsense")
    assert proc.returncode == 2 and "nonsense" in proc.stderr
    proc = cli("analyze")
    assert proc.returncode == 2 and "FILE" in proc.stderr


def test_a_table_without_a_volume_model_is_a_note_not_a_failure(cli, tmp_path):
    text = Path(FIXTURES[1]).read_text()  # the allreduce fixture
    assert "Benchmarking Allreduce" in text
    path = tmp_path / "uniband.txt"
    path.write_text(text.replace("Benchmarking Allreduce", "Benchmarking Uniband"))
    proc = cli("analyze", str(path), FIXTURES[1], "--max-regions", "1")
    assert proc.returncode == 0, proc.stderr
    assert "note: " in proc.stdout and "no effective-bytes model for Uniband" in proc.stdout
    alone = cli("analyze", str(path))
    assert_one_line_error(alone, "nothing to analyze")
    forced = cli("analyze", str(path), "--collective", "pingpong", "--max-regions", "1",
                 check=True)
    assert "throughput = M/t (pingpong)" in forced.stdout


def test_a_file_without_a_table_is_named_and_the_others_are_still_analyzed(cli, tmp_path):
    paper = tmp_path / "paper.txt"
    paper.write_text("An abstract.\nNo benchmark here.\n")
    proc = cli("analyze", FIXTURES[0], str(paper), FIXTURES[1], "--max-regions", "1")
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"autotune: error: {paper}: no benchmark table in IMB output"
    analyzed = {line.split(":")[0] for line in proc.stdout.splitlines()
                if line.startswith("/") and "processes" in line}
    assert analyzed == {FIXTURES[0], FIXTURES[1]}
    as_json = cli("analyze", str(paper), FIXTURES[1], "--max-regions", "1", "--format", "json")
    assert as_json.returncode == 2 and str(paper) in as_json.stderr
    assert {t["source"] for t in json.loads(as_json.stdout)["tables"]} == {FIXTURES[1]}
