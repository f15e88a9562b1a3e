"""Studies whose benchmark is the user's own program (`--benchmark app`), for real: LAMMPS's melt
example (Debian's lammps, lammps-examples) through the local launcher, scored by the Loop time it
prints; then `best`, `verify` with the application and the report. And an application that
fails for some configurations (exit code, hang, no metric): each a failed trial with its reason,
the study goes on, nothing is left running."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

ROOT = Path(__file__).resolve().parents[2]
MELT = Path("/usr/share/lammps/examples/melt/in.melt")
LOOP_TIME = r"Loop time of ([0-9.]+)"
LAMMPS = ("lmp", "-in", "in.melt", "-log", "none")

pytestmark = pytest.mark.mpi


def autotune(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).parent / "autotune")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, AUTOTUNE_HOME=str(cwd / "home")))


def stored(cwd: Path, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{cwd / 'home' / 'autotune.db'}")


@pytest.fixture
def melt(tmp_path) -> Path:
    if not shutil.which("lmp") or not MELT.is_file():
        pytest.fail("LAMMPS is not installed: bash scripts/install.sh --test installs it")
    shutil.copy(MELT, tmp_path / "in.melt")  # the user's input, in the user's directory
    return tmp_path


def test_a_lammps_study_is_scored_by_its_loop_time(melt):
    proc = autotune(melt, "start", "--collective", "allreduce", "--nodes", "1", "--ppn", "2",
                    "--benchmark", "app", "--metric", LOOP_TIME, "--trials", "3",
                    "--repetitions", "3", "--no-prune", "--seed", "1", "--confirm", "1",
                    "--confirm-rounds", "2", "--confirm-max-rounds", "2", "--foreground", "--",
                    *LAMMPS)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "the untuned stack's launch of the application gave" in proc.stderr
    assert "one value per launch (the application's metric), 3 launches per trial" in proc.stderr
    name = "allreduce-1n2p-openmpi-ucx+openmpi-tuned-app-lmp"
    study = stored(melt, name)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 3
    for trial in done:
        for launch in trial.user_attrs["launches"]:
            assert launch["argv"][-len(LAMMPS):] == list(LAMMPS)  # argv as given, no shell
            (value,) = launch["t_max_us"].values()
            assert 0.001 < value < 60  # seconds of LAMMPS's loop, as it printed them
    best = autotune(melt, "best", "--study", name)
    assert best.returncode == 0, best.stderr
    assert f"measured: app: lmp -in in.melt -log none; metric: the number matched by " \
           f"'{LOOP_TIME}' (lower is better)" in best.stdout
    report = autotune(melt, "report", "--study", name, "-o", str(melt / "report"))
    assert report.returncode == 0, report.stderr
    page = (melt / "report" / "index.html").read_text()
    assert "The application&#x27;s metric" in page or "The application's metric" in page
    assert not (melt / "report" / "latency.png").exists()  # no message sizes to plot
    if study.user_attrs.get("autotune.confirmation", {}).get("best_trial") is None:
        # nothing beat the untuned stack in so few rounds: name a candidate, as confirm.py
        # stores it, so that verify has a claim to check (its launches are all real)
        from autotune.storage import CONFIRMATION_ATTR

        candidate = next(t for t in done if not t.user_attrs.get("is_default"))
        study.set_user_attr(CONFIRMATION_ATTR, {
            "rounds": 2, "best_trial": candidate.number, "finished": 1.0, "method": "t",
            "candidates": [{"trial": candidate.number, "params": {}, "round_scores": [],
                            "failed": "", "speedup": 1.05, "speedup_interval": [1.01, 1.1]}]})
    refused = autotune(melt, "verify", "--study", name, "--rounds", "2")
    assert refused.returncode != 0 and "give its command after --" in refused.stderr
    check = autotune(melt, "verify", "--study", name, "--rounds", "2", "--metric", LOOP_TIME,
                     "--timeout-floor", "120", "--format", "json", "--", *LAMMPS)
    assert check.returncode in (0, 4), check.stderr  # 4: the check contradicts the claim
    assert json.loads(check.stdout)["benchmark"].startswith("app: lmp -in in.melt")


def test_an_application_that_fails_is_a_failed_trial_with_its_reason(tmp_path):
    app = (sys.executable, str(ROOT / "tests" / "data" / "fake_app.py"))
    proc = autotune(tmp_path, "start", "--collective", "allreduce", "--nodes", "1", "--ppn", "2",
                    "--space", str(ROOT / "tests" / "data" / "space-grid.yaml"), "--strategy",
                    "grid", "--benchmark", "app", "--metric", r"elapsed ([0-9.]+)", "--trials",
                    "6", "--repetitions", "3", "--no-prune", "--timeout-floor", "5", "--confirm",
                    "0", "--no-check-live", "--foreground", "--", *app)
    assert proc.returncode == 0, proc.stderr[-3000:]
    study = stored(tmp_path, "allreduce-1n2p-test-grid-app-python")
    reasons = {t.params["coll_tuned_allreduce_algorithm"]: (t.state.name,
                                                            t.user_attrs.get("fail_reason"),
                                                            t.user_attrs.get("fail_detail", ""))
               for t in study.trials}
    assert {a: r[:2] for a, r in reasons.items()} == {
        0: ("COMPLETE", None), 1: ("COMPLETE", None), 2: ("COMPLETE", None),
        3: ("FAIL", "crash"), 4: ("FAIL", "timeout"), 5: ("FAIL", "crash")}, reasons
    assert "exited with code 3" in reasons[3][2] and "not in the output" in reasons[5][2]
    left = subprocess.run(["pgrep", "-f", "fake_app.py"], capture_output=True, text=True).stdout
    assert left.strip() == "", left
