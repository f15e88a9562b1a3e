"""The user's program as the benchmark: its metric read from its output (or its wall time), one
value per launch under APP_RUN, and bad input refused with one line."""

from __future__ import annotations

import pytest

from autotune.benchmarks import APP_RUN, AppBenchmark, BenchmarkRequest, make_benchmark
from autotune.errors import BenchmarkOutputError, EnvironmentProblem, InputError

REQUEST = BenchmarkRequest(collective="allreduce", sizes=(APP_RUN,), ranks=2, time_per_size=0.0,
                           seed=0)
LAMMPS = ("Loop time of 1.14399 on 2 procs for 250 steps with 4000 atoms\n"
          "Performance: 94406.4 tau/day, 218.533 timesteps/s\n")


def test_the_metric_is_the_last_match_of_the_group():
    bench = AppBenchmark(("lmp", "-in", "in.melt"), r"Loop time of ([0-9.]+)")
    out = bench.parse_run("Loop time of 9.0\n" + LAMMPS, 3.2, REQUEST)
    assert list(out.timings) == [APP_RUN] and out.timings[APP_RUN].t_max_us == 1.14399
    assert bench.program(REQUEST) == ("lmp", "-in", "in.melt")  # argv as given, no shell


def test_a_rate_is_scored_by_its_reciprocal():
    bench = AppBenchmark(("lmp",), r"([0-9.]+) timesteps/s", higher_is_better=True)
    assert bench.parse_run(LAMMPS, 1.0, REQUEST).timings[APP_RUN].t_max_us == pytest.approx(
        1 / 218.533)
    assert "higher is better" in bench.describe()


def test_wall_time_is_the_launch_s():
    bench = AppBenchmark(("lmp",), "wall")
    assert bench.parse_run("anything", 2.5, REQUEST).timings[APP_RUN].t_max_us == 2.5
    assert bench.describe() == "app: lmp; metric: wall time of the launch (s)"


@pytest.mark.parametrize("text, message", [
    ("nothing here", "is not in the output"),
    ("Loop time of -3", "is not in the output"),  # the regex asks for digits and dots
    ("Loop time of ...", "not a number"),
])
def test_a_missing_or_bad_metric_is_a_bad_output(text, message):
    bench = AppBenchmark(("lmp",), r"Loop time of ([0-9.]+)")
    with pytest.raises(BenchmarkOutputError, match=message):
        bench.parse_run(text, 1.0, REQUEST)


@pytest.mark.parametrize("kw, message", [
    ({"command": ()}, "needs the program after --"),
    ({"metric": "Loop time of [0-9.]+"}, "needs exactly one group"),
    ({"metric": "(a)(b)"}, "needs exactly one group"),
    ({"metric": "Loop (["}, "not a regex"),
    ({"metric": "wall", "higher_is_better": True}, "a wall time is better lower"),
])
def test_bad_input_is_one_line(kw, message):
    args = {"command": ("lmp",), "metric": r"t ([0-9.]+)", **kw}
    with pytest.raises(InputError, match=message):
        AppBenchmark(args.pop("command"), **args)


def test_a_program_that_does_not_exist_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(EnvironmentProblem, match="no-such-app: command not found on PATH"):
        AppBenchmark(("no-such-app",)).check()
    with pytest.raises(EnvironmentProblem, match="./run.sh: not found or not executable"):
        AppBenchmark(("./run.sh",)).check()


def test_a_program_after_dashes_is_only_for_the_app_benchmark():
    with pytest.raises(InputError, match="a program after -- is the benchmark of --benchmark app"):
        make_benchmark("mpi4py", app_command=("lmp",))
    assert make_benchmark("app", app_command=("lmp",), metric=None).metric == "wall"
