"""A real tiny study (real mpirun, 2 ranks, real SQLite) in which one configuration returns wrong
answers: it fails with `wrong-result`, is never launched again (in the run, nor after a resume)
and is never exported."""
import json

import optuna
import pytest

from autotune.storage import CONFIG_ATTR
from tests import cli_runner

pytestmark = pytest.mark.mpi

# The knob reaches the ranks as OMPI_MCA_mpi_autotune_test_corrupt_rank (mpirun exports every
# --mca value): a space may not set AUTOTUNE_* variables, but may set `mpi_` MCA parameters.
SPACE = """\
format: 1
name: test-wrong-result
parameters:
  - {name: mpi_autotune_test_corrupt_rank, apply: mca, choices: [unset, "1"], default: unset}
"""
KNOB = "mpi_autotune_test_corrupt_rank"
STUDY = "allreduce-1n2p-test-wrong-result"


@pytest.fixture(scope="module")
def study_run(tmp_path_factory, mpirun):
    home = tmp_path_factory.mktemp("home")
    (home / "space.yaml").write_text(SPACE)
    storage = f"sqlite:///{home / 'study.db'}"
    runner = cli_runner(home, home, storage)

    def cli(*args):
        return runner(*args, timeout=300, check=True)

    def start(trials):
        return cli("start", "--collective", "allreduce", "--nodes", "1", "--ppn", "2",
                   "--space", str(home / "space.yaml"), "--trials", str(trials),
                   "--sizes", "8:1024", "--repetitions", "3", "--stages", "1",
                   "--time-per-size", "0.002", "--seed", "1", "--foreground")

    first = start(3)
    resumed = start(2)
    return cli, first, resumed, optuna.load_study(study_name=STUDY, storage=storage)


def launched(study):
    return [t for t in study.trials if not t.user_attrs.get("skipped")]


def test_the_corrupting_configuration_fails_with_wrong_result(study_run):
    cli, first, _, _ = study_run
    rows = json.loads(cli("history", "--format", "json").stdout)
    bad = [r for r in rows if r[f"param.{KNOB}"] == "1" and r["fail_reason"] == "wrong-result"]
    assert len(bad) == 1 and bad[0]["state"] == "FAIL", rows
    said = first.stdout + first.stderr  # the progress lines
    assert "wrong-result: allreduce" in said and "rank 1 element 0" in said


def test_it_is_launched_once_and_never_again_even_after_a_resume(study_run):
    _, _, _, study = study_run
    corrupt = [t for t in launched(study) if t.params[KNOB] == "1"]
    assert len(corrupt) == 1, [(t.number, t.params, t.user_attrs.get("fail_reason"))
                               for t in study.trials]
    assert corrupt[0].user_attrs["fail_reason"] == "wrong-result"
    assert corrupt[0].user_attrs["fail_detail"].startswith("allreduce ")
    assert "rank 1 element 0 is 4, expected 3" in corrupt[0].user_attrs["fail_detail"]
    # the resumed run loaded it from the storage as known bad: no trial of it ran after it
    later = [t for t in study.trials if t.number > corrupt[0].number and t.params[KNOB] == "1"]
    assert all(t.user_attrs.get("skipped") for t in later)
    default = study.trials[0]
    assert default.user_attrs["is_default"] and default.state == optuna.trial.TrialState.COMPLETE


def test_export_never_carries_it(study_run):
    cli, _, _, _ = study_run
    exported = json.loads(cli("export", "--format", "json").stdout)
    assert exported["params"] == {KNOB: "unset"} and exported["mca"] == {}
    env_text = cli("export", "--format", "env").stdout
    assert "corrupt" not in env_text.lower().replace(f"{KNOB}=unset", "")


def test_a_search_timed_by_imb_has_each_configuration_checked(tmp_path, mpirun):
    """IMB-MPI1 checks no results: `--benchmark auto` picks it where found (here via --imb-dir),
    and one launch of autotune's C benchmark (built with mpicc here) after each configuration's
    first checks its results."""
    from tests.benchmarks.test_imb import IMB_DIR

    (tmp_path / "space.yaml").write_text(SPACE + """\
  - {name: coll_tuned_allreduce_algorithm, apply: mca, choices: [0, 3], default: 0,
     implies: {coll_tuned_use_dynamic_rules: 1}}
""")
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    run = cli_runner(tmp_path, tmp_path, storage)
    started = run("start", "--collective", "allreduce", "--nodes", "1", "--ppn", "2",
                  "--space", str(tmp_path / "space.yaml"), "--strategy", "grid", "--trials", "4",
                  "--sizes", "8:1024",
                  "--repetitions", "3", "--stages", "1", "--time-per-size", "0.002", "--seed", "1",
                  "--confirm", "0", "--imb-dir", str(IMB_DIR), "--foreground", timeout=300,
                  check=True)
    assert "benchmark: IMB-MPI1 (" in started.stderr + started.stdout
    study = optuna.load_study(study_name=STUDY, storage=storage)
    assert study.user_attrs[CONFIG_ATTR]["benchmark"].startswith("IMB-MPI1 (")
    by_params = {(t.params[KNOB], t.params["coll_tuned_allreduce_algorithm"]): t
                 for t in study.trials}
    default, corrupt, clean = by_params["unset", 0], by_params["1", 0], by_params["unset", 3]

    def checks(trial):
        return [la for la in trial.user_attrs["launches"] if la.get("purpose") == "result-check"]

    # the untuned stack is the reference, not checked; a trial's first launch is IMB's
    assert default.state == optuna.trial.TrialState.COMPLETE and not checks(default)
    for trial in (corrupt, clean):
        launches = trial.user_attrs["launches"]
        assert str(IMB_DIR / "IMB-MPI1") in launches[0]["argv"]
        assert len(checks(trial)) == 1 and "/cbench-" in " ".join(checks(trial)[0]["argv"])
        assert checks(trial)[0]["t_max_us"] == {}  # the checker's timings are not scored
    assert corrupt.state == optuna.trial.TrialState.FAIL
    assert corrupt.user_attrs["fail_reason"] == "wrong-result"
    assert "rank 1 element 0 is 4, expected 3" in corrupt.user_attrs["fail_detail"]
    # a right result passes: the trial is scored on IMB's times (complete or pruned as it fares)
    assert clean.state != optuna.trial.TrialState.FAIL and not checks(clean)[0]["failure"]
    assert clean.user_attrs["raw_us"] and clean.user_attrs["launches"][0]["t_max_us"]
    # the check is shown as what it is: in the trial's line and as a purpose of its own
    assert "+1 result check)" in started.stderr + started.stdout
    from autotune.report import seconds_data
    from autotune.storage import load_baselines, stored_config, trial_records

    parts = {p.label: p for p in seconds_data(trial_records(study), load_baselines(study), None,
                                              stored_config(study)).parts}
    assert parts["result checks"].launches == 3  # the three configurations besides the default
