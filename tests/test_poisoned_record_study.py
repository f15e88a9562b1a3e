"""Issue 13: one bad thing costs one trial, never the run.

A real tiny study (real mpirun, 2 ranks, real SQLite, `autotune start --foreground`) in which one
configuration makes the kernel print a poisoned record (a size record whose iters is a 400-digit
integer: an OverflowError that ended the run before): that trial fails as `crash` naming the
record's problem, every other trial completes, the run exits 0. And on canned records (no MPI): an
unexpected exception while measuring one trial fails that trial as `internal`, the run goes on.
"""
import json

import optuna
import pytest

from tests import cli_runner

# The knob reaches the ranks as OMPI_MCA_mpi_autotune_test_poison_record (mpirun exports every
# --mca value); only "1" poisons: "2" is an ordinary configuration that must complete.
SPACE = """\
format: 1
name: test-poisoned-record
parameters:
  - {name: mpi_autotune_test_poison_record, apply: mca, choices: [unset, "1", "2"],
     default: unset}
"""
KNOB = "mpi_autotune_test_poison_record"


@pytest.fixture(scope="module")
def study_run(tmp_path_factory, mpirun):
    home = tmp_path_factory.mktemp("home")
    (home / "space.yaml").write_text(SPACE)
    storage = f"sqlite:///{home / 'study.db'}"
    runner = cli_runner(home, home, storage)

    def cli(*args):
        return runner(*args, timeout=300, check=False)

    run = cli("start", "--collective", "allreduce", "--nodes", "1", "--ppn", "2",
              "--space", str(home / "space.yaml"), "--trials", "3", "--strategy", "grid",
              "--sizes", "8:64", "--repetitions", "3", "--stages", "1",
              "--time-per-size", "0.002", "--seed", "1", "--foreground")
    history = cli("history", "--format", "json")
    return run, history, optuna.load_study(study_name="allreduce-1n2p-test-poisoned-record", storage=storage)


@pytest.mark.mpi
def test_a_poisoned_record_fails_one_trial_and_the_run_goes_on(study_run):
    run, history, study = study_run
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    assert "internal error" not in run.stdout + run.stderr
    # one history row per trial and size: one per trial here
    rows = list({r["trial"]: r for r in json.loads(history.stdout) if not r.get("skipped")}.values())
    failed = [r for r in rows if r["state"] == "FAIL"]
    assert len(failed) == 1, rows
    assert failed[0][f"param.{KNOB}"] == "1"
    assert failed[0]["fail_reason"] == "crash", failed[0]
    detail = study.trials[failed[0]["trial"]].user_attrs["fail_detail"]
    assert "benchmark output: integer with 401 digits in a record" in detail, detail
    others = [r for r in rows if r is not failed[0]]
    assert sorted(r[f"param.{KNOB}"] for r in others) == ["2", "unset"], rows
    assert all(r["state"] == "COMPLETE" for r in others), rows


# ------------------------------------------- an unexpected exception in one trial (no MPI)

def test_an_unexpected_exception_fails_one_trial_as_internal(monkeypatch, tmp_path):
    from tests import test_controller as canned

    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))

    class OneBug(canned.CannedExecutor):
        def __call__(self, command, timeout):
            params = dict(command.spec.params)
            if not command.spec.is_default and params.get("coll_tuned_allreduce_algorithm") == 4:
                raise ZeroDivisionError("planted bug")
            return super().__call__(command, timeout)

    monkeypatch.setattr(canned, "CannedExecutor", OneBug)
    study, summary, _, _ = canned.run_study(seed=3, trials=8, tmp_path=tmp_path)
    launched = [t for t in study.trials if not t.user_attrs.get("skipped")]
    bad = [t for t in launched if t.params.get("coll_tuned_allreduce_algorithm") == 4]
    assert bad, "the sampler never proposed algorithm 4: pick another seed"
    for trial in bad:
        assert trial.state == optuna.trial.TrialState.FAIL
        assert trial.user_attrs["fail_reason"] == "internal"
        assert "ZeroDivisionError: planted bug" in trial.user_attrs["fail_detail"]
    good = [t for t in launched if t not in bad]
    assert len(launched) == 8 and all(t.state == optuna.trial.TrialState.COMPLETE for t in good)
