"""`autotune grid record` on this machine: a real grid, killed and resumed, with nothing lost or
measured twice; then replayed."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from autotune.storage._grid import read_grid

ROOT = Path(__file__).resolve().parent.parent
SPACE = ROOT / "tests" / "data" / "space-grid.yaml"

pytestmark = pytest.mark.mpi


def test_record_is_killed_and_resumed_without_losing_or_duplicating_rows(autotune_cli, tmp_path):
    import shutil
    import sys

    out = tmp_path / "grid.csv"
    args = ["grid", "record", "--collective", "allreduce", "--ppn", "2", "--space", str(SPACE),
            "--sizes", "8:1k", "--passes", "2", "--time-per-size", "0.003", "--seed", "3",
            "-o", str(out)]
    exe = shutil.which("autotune", path=str(Path(sys.executable).parent))
    env = dict(os.environ, AUTOTUNE_HOME=str(tmp_path / "home"))
    first = subprocess.Popen([exe, *args], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill it once a few launches are in the file
        if out.exists() and len(out.read_text().splitlines()) > 1 + 3 * 8:
            break
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    before = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert 0 < len(before) < 12 * 8

    proc = autotune_cli(*args, check=True, timeout=300)
    assert "found from before" in proc.stderr
    rows = pd.read_csv(out, dtype=str, keep_default_na=False)
    keys = list(zip(rows["coll_tuned_allreduce_algorithm"], rows["pass"], rows["size"]))
    # every (config, pass, size) exactly once: per round, 5 configurations and the default
    # before each group of 4 (--default-every 4: 2 groups, each a pass of its own)
    assert len(keys) == len(set(keys)) == (5 + 2) * 2 * 8
    complete = before.groupby(["coll_tuned_allreduce_algorithm", "pass"]).filter(
        lambda g: len(g) == 8)
    kept = set(zip(rows["coll_tuned_allreduce_algorithm"], rows["pass"], rows["size"], rows["t_us"]))
    assert set(zip(complete["coll_tuned_allreduce_algorithm"], complete["pass"],
                   complete["size"], complete["t_us"])) <= kept  # nothing recorded was lost
    assert set(rows["coll_tuned_allreduce_algorithm"]) == {"", "1", "2", "3", "4", "5"}

    grid = read_grid(out)
    assert grid.passes == (0, 1, 2, 3) and len(grid.t_us) == 6 and () in grid.t_us
    assert len(grid.t_us[()]) == 4 and all(len(p) == 2 for c, p in grid.t_us.items() if c)
    # --benchmark auto: IMB where it is found, else autotune's C benchmark, else the kernel; the
    # file names it on every row, the resumed run kept it, and a resume with another benchmark
    # is refused, file untouched
    assert grid.benchmark in ("imb", "cbench", "mpi4py")
    assert set(rows["benchmark"]) == {grid.benchmark}
    assert f"measured by {grid.benchmark};" in proc.stderr
    other = "imb" if grid.benchmark != "imb" else "mpi4py"
    text = out.read_text()
    refused = autotune_cli(*args, "--benchmark", other, timeout=60)
    assert refused.returncode != 0 and text == out.read_text()
    assert refused.stderr.strip().splitlines()[-1].endswith(
        f"was measured with --benchmark {grid.benchmark}, not {other}: resume it with that "
        "benchmark, or record into another file"), refused.stderr
    bench = autotune_cli("bench", "strategies", "--grid", str(out), "--strategy", "grid",
                         "--budget", "10", "--seeds", "2", check=True)
    assert bench.stdout.splitlines()[1].startswith("grid\t10\t")


def test_a_default_before_every_few_configurations_makes_each_group_a_pass():
    from autotune.recording import GridConfig, schedule

    configs = [GridConfig({}, ())] + [GridConfig({"a": i}, (("a", str(i)),)) for i in range(1, 8)]
    rounds = schedule(configs, passes=2, seed=1, default_every=3)
    assert len(rounds) == 2
    for r, launches in enumerate(rounds):
        assert sorted(c.key for _, c in launches if c.key) == sorted(c.key for c in configs[1:])
        ids = [p for p, _ in launches]
        assert ids == sorted(ids) and set(ids) == {3 * r, 3 * r + 1, 3 * r + 2}  # 7 in 3 groups
        for pass_ in set(ids):
            group = [c for p, c in launches if p == pass_]
            assert group[0].key == () and 1 <= len(group) - 1 <= 3  # the default first
    assert schedule(configs, 2, 1, 3) == rounds  # a resumed recording follows the same order
    once = schedule(configs, passes=2, seed=1, default_every=0)
    assert [sorted(p for p, _ in r) for r in once] == [[0] * 8, [1] * 8]


def test_a_grid_keeps_the_benchmark_it_names(tmp_path):
    from autotune.errors import InputError
    from autotune.recording import benchmark_for

    def found_here() -> str:
        return "imb"

    new = tmp_path / "new.csv"
    assert benchmark_for(new, "auto", found_here) == "imb"  # a new grid: what auto finds here
    assert benchmark_for(new, "mpi4py", found_here) == "mpi4py"
    named = tmp_path / "named.csv"
    named.write_text("pass,start,size,t_us,benchmark,pml\n0,1,8,1.0,mpi4py,\n")
    assert benchmark_for(named, "auto", found_here) == "mpi4py"  # not what auto finds now
    assert benchmark_for(named, "mpi4py", found_here) == "mpi4py"
    with pytest.raises(InputError, match="measured with --benchmark mpi4py, not imb"):
        benchmark_for(named, "imb", found_here)
    older = tmp_path / "older.parquet"  # recorded before grids named theirs, being resumed
    older.with_suffix(".partial.csv").write_text("pass,start,size,t_us,pml\n0,1,8,1.0,\n")
    with pytest.raises(InputError, match="does not name the benchmark that measured it"):
        benchmark_for(older, "auto", found_here)
    assert benchmark_for(older, "imb", found_here) == "imb"  # the user says what it was


class _Launches:
    """Stands in for a node group's measurer to test the file's handling: it says which
    configurations it was asked to launch and returns a made-up time per size."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def run_launch(self, settings, launch, seed, params, is_default):  # noqa: ANN001
        from types import SimpleNamespace

        self.asked.append(tuple(sorted(params.items())))
        return SimpleNamespace(started=1.0, t_max_us={s: 2.0 for s in launch.sizes})


def test_recording_into_a_finished_parquet_grid_resumes_it_instead_of_overwriting(tmp_path):
    from autotune.measure import MeasurementPlan
    from autotune.recording import record
    from autotune.space import TrialContext, load_space

    space, ctx = load_space(str(SPACE)), TrialContext("allreduce", 1)
    plan = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8, 64), repetitions=1,
                           stages=1, time_per_size=0.01)
    out = tmp_path / "grid.parquet"
    first = _Launches()
    record(out, space, ctx, {}, plan, first, passes=1, seed=3, benchmark="mpi4py")
    finished = pd.read_parquet(out)
    assert len(first.asked) == 6 and len(finished) == 6 * 2
    assert not out.with_suffix(".partial.csv").exists()

    again = _Launches()  # the same file, one pass more: only the new pass is measured
    progress = record(out, space, ctx, {}, plan, again, passes=2, seed=3, benchmark="mpi4py")
    assert progress.resumed == 6 and progress.done == 6 and len(again.asked) == 6
    grown = pd.read_parquet(out)
    assert len(grown) == 2 * 6 * 2 and set(grown["pass"]) == {"0", "1"}
    kept = grown[grown["pass"] == "0"].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept, finished)  # the first pass's rows, untouched

    asked_again = _Launches()  # nothing missing: nothing measured, nothing lost
    record(out, space, ctx, {}, plan, asked_again, passes=1, seed=3, benchmark="mpi4py")
    assert asked_again.asked == [] and len(pd.read_parquet(out)) == len(grown)
