"""Replaying strategies on a grid: the grid file format, the replay executor (a candidate paired
with the default of the same pass), and the figures of `bench strategies` by their definitions."""
from __future__ import annotations

import json
import math
import statistics

import pandas as pd
import pytest

from autotune.errors import InputError
from autotune.launch._replay import ReplayExecutor, space_from_grid
from autotune.launch import Command, LaunchSpec
from autotune.replay import compare, replay_once, true_speedups
from autotune.storage._grid import config_key, read_grid
from tests.grids import KNOBS, OPTIMUM, SIZES, synthetic_rows, write_synthetic


@pytest.fixture
def grid(tmp_path):
    path = tmp_path / "synthetic.csv"
    write_synthetic(path)
    return read_grid(path)


def test_grid_file_round_trip_csv_and_parquet(tmp_path):
    rows = synthetic_rows(passes=2)
    for suffix in (".csv", ".parquet"):
        path = tmp_path / f"g{suffix}"
        write_synthetic(path, passes=2)
        grid = read_grid(path)
        assert grid.knobs == KNOBS and grid.passes == (0, 1) and grid.sizes == SIZES
        assert len(grid.t_us) == 16 and () in grid.t_us  # the untuned default: every cell empty
        first = rows[0]
        key = config_key({k: first[k] for k in KNOBS})
        assert grid.t_us[key][first["pass"]][first["size"]] == pytest.approx(first["t_us"])


@pytest.mark.parametrize("text, message", [
    ("pass,size,t_us,pml\n0,8,1.0,\n", r"missing column\(s\) start"),
    ("pass,start,size,t_us,pml\n0,1,8,fast,\n", "row 2: pass, size, t_us and start must be"),
    ("pass,start,size,t_us,pml\n0,1,8,-1,\n", "row 2: size and t_us must be positive"),
    ("pass,start,size,t_us,pml\n", "has no rows"),
    ("pass,start,size,t_us,benchmark,pml\n0,1,8,1.0,imb,\n0,1,8,0.9,mpi4py,ucx\n",
     r"rows measured by different benchmarks \(imb, mpi4py\)"),
])
def test_bad_grid_files_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_grid(path)


def test_the_benchmark_column_names_what_measured_the_grid_and_is_no_knob(tmp_path, grid):
    from autotune.storage import grid_rows, named_benchmark

    assert grid.benchmark == "" and "benchmark" not in grid.knobs  # a grid naming none
    path = tmp_path / "named.csv"
    assert named_benchmark(path) is None  # a new grid
    rows = [*grid_rows((), ("pml",), 0, 1.0, {8: 1.0}, "imb"),
            *grid_rows((("pml", "ucx"),), ("pml",), 0, 1.0, {8: 0.9}, "imb")]
    pd.DataFrame(rows).to_csv(path, index=False)
    named = read_grid(path)
    assert named.benchmark == "imb" and named.knobs == ("pml",) and len(named.t_us) == 2
    assert named_benchmark(path) == "imb"
    path.write_text("pass,start,size,t_us,benchmark,pml\n")  # a header alone: nothing measured
    assert named_benchmark(path) is None
    path.write_text("pass,start,size,t_us,pml\n0,1,8,1.0,\n")
    assert named_benchmark(path) == ""  # recorded before grids named their benchmark


def test_truth_is_the_median_over_passes_of_the_paired_log_ratio(grid):
    truth = true_speedups(grid)
    assert truth[()] == 1.0
    assert max(truth, key=truth.get) == OPTIMUM
    # by the definition, for one configuration, by hand
    config = (("coll_tuned_allreduce_algorithm", "1"),)
    per_pass = [sum(math.log(grid.t_us[config][p][s] / grid.t_us[()][p][s]) for s in SIZES)
                / len(SIZES) for p in grid.passes]
    assert truth[config] == pytest.approx(math.exp(-sorted(per_pass)[1]))


def test_replay_space_asks_ucx_knobs_only_under_pml_ucx(grid):
    space = space_from_grid(grid)
    tls = next(p for p in space.parameters if p.name == "UCX_TLS")
    assert tls.when == (("pml", ("ucx",)),)
    assert tls.choices == ("unset", "self,sm", "self,tcp") and tls.default == "unset"


def test_a_candidate_is_served_from_the_pass_of_its_default(grid):
    executor = ReplayExecutor(grid, seed=1)

    def launch(params, is_default):
        spec = LaunchSpec(nodes=1, ppn=2, program=("kernel",), params=tuple(params.items()),
                          is_default=is_default, sizes=(8, 64))
        return executor(Command(argv=("replay",), spec=spec), 10.0)

    for _ in range(10):
        launch({}, True)
        chosen = executor.current
        out = launch(dict(OPTIMUM), False)
        times = [json.loads(line[9:]) for line in out.stdout.splitlines() if '"size"' in line]
        assert [t["t_max_us"] for t in times] == [grid.t_us[OPTIMUM][chosen][s] for s in (8, 64)]
    missing = launch({"pml": "ob1"}, False)  # not in the grid: refused, and costs nothing
    assert missing.returncode == 1 and "MPI_Init" in missing.stderr
    assert executor.cost.launches == 20 and executor.cost.size_launches == 40
    assert executor.cost.default_launches == 10


def test_a_candidate_the_current_pass_lacks_keeps_the_ratio_to_its_own_default():
    """A grid recorded with a default every few configurations: each group is a pass. A
    candidate from another group is served at the current default's level."""
    from autotune.storage._grid import Grid

    grid = Grid(knobs=("a",))
    for pass_, level in ((0, 1.0), (1, 3.0)):  # the machine 3x slower during pass 1
        grid.add((), pass_, 8, 2.0 * level, 0.0)
        grid.add((), pass_, 64, 4.0 * level, 0.0)
    grid.add((("a", "x"),), 1, 8, 6.0 * 1.5, 0.0)  # 1.5x the default of its own pass
    grid.add((("a", "x"),), 1, 64, 12.0 * 0.5, 0.0)  # 2x faster than it there
    executor = ReplayExecutor(grid, seed=0)

    def launch(params, is_default):
        spec = LaunchSpec(nodes=1, ppn=2, program=("kernel",), params=tuple(params.items()),
                          is_default=is_default, sizes=(8, 64))
        out = executor(Command(argv=("replay",), spec=spec), 10.0)
        return {json.loads(line[9:])["size"]: json.loads(line[9:])["t_max_us"]
                for line in out.stdout.splitlines() if '"size"' in line}

    drawn = set()
    for _ in range(20):
        default = launch({}, True)
        drawn.add(executor.current)
        x = launch({"a": "x"}, False)
        assert x[8] / default[8] == pytest.approx(1.5) and x[64] / default[64] == pytest.approx(0.5)
    assert drawn == {0, 1}  # also against the default of the pass x was not measured in


def test_grid_strategy_finds_the_synthetic_optimum_with_zero_regret(grid):
    run = replay_once(grid, "grid", budget=30, seed=0)
    assert run.reported == OPTIMUM and run.regret_pp == 0.0 and not run.default_reported


def test_figures_follow_their_definitions(grid):
    figures, runs = compare(grid, ["random"], [3, 20], seeds=4)
    truth = true_speedups(grid)
    oracle = max(truth.values())
    for figure in figures:
        batch = [r for r in runs if r.budget == figure.budget]
        regrets = sorted((oracle - truth[r.reported]) * 100 for r in batch)
        assert [r.regret_pp for r in sorted(batch, key=lambda r: r.regret_pp)] == \
            pytest.approx(regrets)
        assert figure.regret_pp_median == pytest.approx((regrets[1] + regrets[2]) / 2)
        assert figure.default_reported_share == sum(r.reported == () for r in batch) / 4
        assert figure.launches_median == statistics.median(r.launches for r in batch)
        assert figure.size_launches_median == statistics.median(r.size_launches for r in batch)
    assert figures[0].size_launches_median < figures[1].size_launches_median


def test_bench_strategies_cli_prints_table_json_and_plot(autotune_cli, tmp_path):
    path = tmp_path / "g.csv"
    write_synthetic(path)
    plot = tmp_path / "regret.png"
    proc = autotune_cli("bench", "strategies", "--grid", str(path), "--strategy", "grid,random",
                        "--budget", "5,20", "--seeds", "2", "--format", "json", "--plot",
                        str(plot), check=True)
    rows = json.loads(proc.stdout)
    assert {(r["strategy"], r["budget"]) for r in rows} == {("grid", 5), ("grid", 20),
                                                            ("random", 5), ("random", 20)}
    assert set(rows[0]) == {"strategy", "budget", "regret_pp_median", "regret_pp_p90",
                            "launches_median", "size_launches_median", "default_reported_share"}
    assert next(r for r in rows if r["strategy"] == "grid" and r["budget"] == 20)[
        "regret_pp_median"] == 0.0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = autotune_cli("bench", "strategies", "--grid", str(path), "--strategy", "grid",
                         "--budget", "20", "--seeds", "1", check=True).stdout.splitlines()
    assert table[0].split("\t")[:2] == ["strategy", "budget"] and table[1].startswith("grid\t20\t")


def test_staged_sweep_fixes_each_step_then_sweeps_the_next(grid):
    run = replay_once(grid, "staged", budget=40, seed=0)
    # step 1 (pml x UCX_TLS) picks ucx over shared memory, step 3 then finds algorithm 3
    assert run.reported == OPTIMUM and run.regret_pp == 0.0
    grid_run = replay_once(grid, "grid", budget=40, seed=0)
    assert run.size_launches < grid_run.size_launches  # fewer points than every configuration


# ------------------------------------------------------- warm start (campaign neighbours)

def _neighbour_grid(tmp_path, name="neighbour.csv", rename=None, seed=1):
    """The synthetic case recorded again with other noise (a neighbouring case); `rename` maps
    knob columns to another case's names (e.g. the allgather algorithm)."""
    import pandas as pd

    rows = synthetic_rows(seed=seed)
    for row in rows:
        for old, new in (rename or {}).items():
            row[new] = row.pop(old)
    path = tmp_path / name
    pd.DataFrame(rows).to_csv(path, index=False)
    return read_grid(path)


def test_warm_params_are_queued_after_the_default_and_measured_first(grid):
    from autotune.replay import replay_study

    warm = [dict(OPTIMUM), {"pml": "unset", "coll_tuned_allreduce_algorithm": "2"}]
    run, study = replay_study(grid, "tpe", budget=4, seed=0, warm=warm)
    trials = sorted(study.trials, key=lambda t: t.number)
    assert trials[0].user_attrs.get("is_default") and config_key(trials[0].params) == ()
    assert [config_key(t.params) for t in trials[1:3]] == [OPTIMUM, (
        ("coll_tuned_allreduce_algorithm", "2"),)]
    assert all(t.user_attrs.get("warm_start") == "warm start" for t in trials[1:3])
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials[:3])  # measured, in order
    assert "warm_start" not in trials[3].user_attrs  # then the sampler
    assert run.warm_started == (OPTIMUM, (("coll_tuned_allreduce_algorithm", "2"),))
    cold = replay_study(grid, "tpe", budget=4, seed=0)[1]
    assert not any("warm_start" in t.user_attrs for t in cold.trials)


def test_warm_params_are_adapted_to_the_target_space(grid):
    from autotune.campaign._warm import Candidate
    from autotune.replay import adapt_warm, replay_study

    space = space_from_grid(grid)
    entries = adapt_warm([
        # another collective's winner: its algorithm knob is not a knob here, nor UCX_RNDV_THRESH
        Candidate({"pml": "ucx", "UCX_TLS": "self,sm", "UCX_RNDV_THRESH": "64kb",
                   "coll_tuned_allgather_algorithm": "6"}, "allgather-1n2p: confirmed winner",
                  winner=True),
        # values this grid never measured: back to the knob's default
        {"pml": "ucx", "UCX_TLS": "rc,sm", "coll_tuned_allreduce_algorithm": "9"},
        # the same once adapted as the first: queued once
        {"pml": "ucx", "UCX_TLS": "self,sm"},
        # pml=ob1 is not a value here -> unset, and UCX_TLS is then inactive: the default, skipped
        {"pml": "ob1", "UCX_TLS": "self,sm"},
    ], space)
    assert [e.params for e in entries] == [
        {"pml": "ucx", "UCX_TLS": "self,sm", "coll_tuned_allreduce_algorithm": "unset"},
        {"pml": "ucx", "UCX_TLS": "unset", "coll_tuned_allreduce_algorithm": "unset"}]
    assert entries[0].note == "allgather-1n2p: confirmed winner"
    assert any("coll_tuned_allgather_algorithm" in d for d in entries[0].dropped)
    assert any("UCX_RNDV_THRESH" in d for d in entries[0].dropped)
    assert any(d.startswith("UCX_TLS=rc,sm") for d in entries[1].dropped)
    run, study = replay_study(grid, "tpe", budget=3, seed=0, warm=[
        {"pml": "ucx", "UCX_TLS": "self,sm", "coll_tuned_allgather_algorithm": "6"}])
    assert config_key(study.trials[1].params) == (("UCX_TLS", "self,sm"), ("pml", "ucx"))
    assert run.warm_started == ((("UCX_TLS", "self,sm"), ("pml", "ucx")),)


def test_warm_start_from_a_neighbour_reaches_its_best_within_len_warm_plus_one(grid, tmp_path):
    from autotune.campaign._warm import case_candidates
    from autotune.replay import replay_study

    neighbour = _neighbour_grid(tmp_path)
    source, study = replay_study(neighbour, "grid", budget=30, seed=0)
    assert source.reported == OPTIMUM  # the neighbour's true best, confirmed
    warm = case_candidates(study, "neighbour")
    assert warm[0].winner and config_key(warm[0].params) == OPTIMUM and len(warm) <= 3
    truth = true_speedups(grid)
    goal = (max(truth.values()) - truth[OPTIMUM]) * 100
    cold_regrets = []
    for seed in range(3):
        run = replay_once(grid, "tpe", budget=len(warm) + 1, seed=seed, truth=truth, warm=warm)
        assert run.regret_pp <= goal + 1e-9 and run.reported == OPTIMUM
        assert run.launches > 0 and run.warm_started[0] == OPTIMUM
        cold_regrets.append(replay_once(grid, "tpe", budget=len(warm) + 1, seed=seed,
                                        truth=truth).regret_pp)
    assert max(cold_regrets) > goal  # the same budget cold does not always get there


def test_replay_once_without_warm_is_unchanged(grid):
    from autotune.replay import replay_study

    a = replay_once(grid, "tpe", budget=6, seed=3)
    b, _ = replay_study(grid, "tpe", budget=6, seed=3, warm=())
    assert a == b and a.warm_started == ()


def test_replay_fits_with_one_blas_thread_whatever_the_machine(grid, monkeypatch):
    """A multi-threaded BLAS sums in another order and flips near-tied decisions, so a seed's
    trajectory must not depend on how many cores run the replay."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from autotune.controller import Controller

    seen: list[int] = []
    run = Controller.run

    def recording_run(self, budget):
        seen.extend(pool["num_threads"] for pool in threadpool_info())
        return run(self, budget)

    monkeypatch.setattr(Controller, "run", recording_run)
    with threadpool_limits(limits=2):
        replay_once(grid, "screen", 4, seed=0)
    assert seen and set(seen) == {1}


def test_a_replay_can_price_the_kernels_uncertainty_against_imb(grid):
    """As judged, a replay's claims carry no benchmark's bias (the grid's own truth is the
    reference); asked to, its confirmation is widened as a kernel-timed study's would be."""
    from autotune.endgame.confirm import CLAIMED
    from autotune.replay import ReplaySettings, replay_study
    from autotune.storage import stored_confirmation

    def claim(systematic):
        _, study = replay_study(grid, "grid", 30, 0, ReplaySettings(systematic=systematic))
        stored = stored_confirmation(study)
        best = next(c for c in stored.candidates if c.verdict == CLAIMED)
        return stored.systematic, best.speedup_interval

    (none, plain), (some, wide) = claim(0.0), claim(0.03)
    assert none == 0.0 and some == 0.03
    assert wide[0] < plain[0] and wide[1] > plain[1]
