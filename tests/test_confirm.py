"""Confirmation re-measures the best candidates against the default with confidence intervals."""
import json
from pathlib import Path

import optuna
import pytest

from autotune.confirm import bootstrap_interval

ROOT = Path(__file__).resolve().parent.parent


def test_bootstrap_interval_brackets_the_mean():
    low, high = bootstrap_interval([-0.2, -0.25, -0.18, -0.22, -0.21], seed=1)
    assert low < -0.2 < high < 0
    assert bootstrap_interval([0.1, 0.1], seed=1) == (0.1, 0.1)


@pytest.mark.mpi
def test_confirmation_keeps_the_default_against_a_slow_candidate(autotune_cli, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text((ROOT / "tests/data/space-with-losers.yaml").read_text()
                     .replace('choices: [all, "self,tcp", self]', 'choices: [all, "self,tcp"]'))
    proc = autotune_cli("start", "--collective", "allreduce", "--ppn", "2", "--trials", "3",
                        "--space", str(space), "--sizes", "8:1k", "--repetitions", "3",
                        "--stages", "1", "--time-per-size", "0.003", "--no-prune", "--seed", "5",
                        "--confirm", "2", "--confirm-rounds", "3", "--no-check-live", "--foreground",
                        check=True)
    assert "confirming the best" in proc.stderr
    study = optuna.load_study(study_name="allreduce-1n2p-test-losers",
                              storage=f"sqlite:///{tmp_path / 'home' / 'autotune.db'}")
    confirmation = study.user_attrs["autotune.confirmation"]
    assert confirmation["rounds"] == 3 and confirmation["candidates"]
    by_trial = {c["trial"]: c for c in confirmation["candidates"]}
    for trial_number, cand in by_trial.items():
        assert len(cand["round_scores"]) == 3
        low, high = cand["speedup_interval"]
        assert low <= cand["speedup"] <= high
        if study.trials[trial_number].params["UCX_TLS"] == "self,tcp":
            assert high < 1.0  # surely slower than the default
    if all(study.trials[n].params["UCX_TLS"] == "self,tcp" for n in by_trial):
        assert confirmation["best_trial"] is None
        exported = autotune_cli("export", check=True).stdout
        assert "no candidate beat it beyond doubt" in exported
    status = json.loads(autotune_cli("status", "--format", "json", check=True).stdout)
    assert status["confirmation"]
