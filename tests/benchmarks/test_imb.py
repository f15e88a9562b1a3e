"""IMB-MPI1 as a benchmark: the argv of a launch, and its output read into per-size t_max."""
from pathlib import Path

import pytest

from autotune.benchmarks import BenchmarkRequest, make_benchmark
from autotune.benchmarks._imb import ImbBenchmark
from autotune.errors import BenchmarkOutputError, EnvironmentProblem, InputError
from tests import SHARED

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = SHARED / "fixtures" / "imb"
IMB_DIR = (SHARED / "tools" / "imb").resolve()  # autotune stores it resolved


def request(sizes, collective="allreduce", ranks=2):
    return BenchmarkRequest(collective=collective, sizes=tuple(sizes), ranks=ranks,
                            time_per_size=0.02, seed=1)


def test_argv_uses_msglog_for_a_run_of_powers_of_two(tmp_path):
    imb = ImbBenchmark(str(IMB_DIR), msglen_dir=tmp_path)
    argv = imb.program(request([8, 16, 32, 64]))
    assert argv[0] == str(IMB_DIR / "IMB-MPI1")
    assert argv[1:3] == ("-msglog", "3:6")
    assert argv[argv.index("-npmin") + 1] == "2" and argv[-1] == "Allreduce"
    assert not list(tmp_path.iterdir())


def test_argv_uses_a_msglen_file_for_other_sizes(tmp_path):
    imb = ImbBenchmark(str(IMB_DIR), msglen_dir=tmp_path, mem_gb=2.3, off_cache="39,64",
                       numactl=True)
    argv = imb.program(request([8, 100, 4096], collective="alltoall", ranks=4))
    assert argv[:3] == ("numactl", "-l", str(IMB_DIR / "IMB-MPI1"))
    path = Path(argv[argv.index("-msglen") + 1])
    assert path.read_text() == "8\n100\n4096\n"
    assert argv[argv.index("-mem") + 1] == "2.3" and argv[argv.index("-off_cache") + 1] == "39,64"
    assert argv[argv.index("-npmin") + 1] == "4" and argv[-1] == "Alltoall"


@pytest.mark.parametrize("options", [{"mem_gb": 0.0}, {"mem_gb": float("nan")},
                                     {"off_cache": "39;rm -rf"}, {"off_cache": "-x"}])
def test_bad_options_are_refused(options):
    with pytest.raises(InputError):
        ImbBenchmark(str(IMB_DIR), **options)


def test_check_names_a_missing_imb(tmp_path):
    with pytest.raises(EnvironmentProblem, match="IMB-MPI1 not found"):
        ImbBenchmark(str(tmp_path)).check()
    ImbBenchmark(str(IMB_DIR)).check()
    with pytest.raises(InputError, match="options of --benchmark imb"):
        make_benchmark("mpi4py", imb_dir=str(IMB_DIR))


def test_parse_reads_t_max_per_requested_size():
    text = (FIXTURES / "imb-mpi1-allreduce-np2.txt").read_text()
    out = ImbBenchmark(str(IMB_DIR)).parse(text, request([8, 4096, 1048576]))
    assert set(out.timings) == {8, 4096, 1048576}
    assert out.timings[1048576].t_max_us == 215.36 and out.timings[1048576].iters == 40
    assert out.timings[8].t_min_us == 0.53 and out.timings[8].t_avg_us == 0.59
    assert out.hosts == ()  # IMB does not say where ranks ran: the landing is not checked


def test_parse_picks_the_collective_of_a_multi_benchmark_output():
    text = (FIXTURES / "imb-mpi1-allgather-alltoall-np2.txt").read_text()
    imb = ImbBenchmark(str(IMB_DIR))
    gather = imb.parse(text, request([1024], collective="allgather"))
    alltoall = imb.parse(text, request([1024], collective="alltoall"))
    assert gather.timings[1024].t_max_us != alltoall.timings[1024].t_max_us


@pytest.mark.parametrize("mutate, message", [
    (lambda t: t.split("       131072")[0], "no result for 1048576"),
    (lambda t: t.replace("#processes = 2", "#processes = 4"), "no Allreduce table for 2"),
    (lambda t: t.replace("      1048576           40       215.13       215.36       215.25",
                         "      1048576 out-of-mem.; increase -mem"), "out-of-mem"),
    (lambda t: "MPI_Init failed\n", "table"),
])
def test_parse_failures_are_benchmark_output_errors(mutate, message):
    text = mutate((FIXTURES / "imb-mpi1-allreduce-np2.txt").read_text())
    with pytest.raises(BenchmarkOutputError, match=message):
        ImbBenchmark(str(IMB_DIR)).parse(text, request([8, 1048576]))


@pytest.mark.mpi
def test_real_study_with_imb_stores_imb_t_max(autotune_cli, tmp_path):
    import json

    import optuna

    autotune_cli("start", "--collective", "allreduce", "--ppn", "2", "--trials", "3",
                 "--sizes", "8:4k", "--repetitions", "3", "--stages", "1", "--confirm", "0",
                 "--time-per-size", "0.005", "--seed", "1", "--benchmark", "imb",
                 "--imb-dir", str(IMB_DIR), "--foreground", check=True)
    storage = f"sqlite:///{tmp_path / 'home' / 'autotune.db'}"
    study = optuna.load_study(study_name="allreduce-1n2p-openmpi-ucx+openmpi-tuned",
                              storage=storage)
    complete = [t for t in study.trials if t.user_attrs.get("raw_us")]
    assert complete and complete[0].user_attrs["is_default"]
    for trial in complete:
        measuring = [la for la in trial.user_attrs["launches"] if not la.get("purpose")]
        checking = [la for la in trial.user_attrs["launches"] if la.get("purpose")]
        # IMB checks no results: the kernel checks every configuration but the untuned stack's
        assert [la["purpose"] for la in checking] == ([] if trial.user_attrs["is_default"]
                                                      else ["result-check"])
        for launch in measuring:
            argv = launch["argv"]
            assert str(IMB_DIR / "IMB-MPI1") in argv and argv[-1] == "Allreduce"
            assert argv[argv.index("-msglog") + 1] == "3:12"
            # IMB's own repetition count (-iter fitted to 5 ms at ~2 us a call), not the kernel's
            assert set(launch["iters"].values()) == {2500}
            assert sorted(map(int, launch["t_max_us"])) == [2 ** k for k in range(3, 13)]
    history = json.loads(autotune_cli("history", "--format", "json", check=True).stdout)
    rows = [r for r in history if r["trial"] == complete[0].number]
    # the default's two rounds (the screen strategy completes it there; later default launches
    # are trials of their own)
    assert len(rows) == 10 and all(len(json.loads(r["t_us"])) == 2 for r in rows)


def test_an_unwritable_size_list_is_an_environment_problem(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    imb = ImbBenchmark(str(IMB_DIR), msglen_dir=blocker / "imb")  # a folder under a file
    with pytest.raises(EnvironmentProblem, match="cannot write IMB's size list"):
        imb.program(request([8, 100]))
