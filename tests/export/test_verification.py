"""What the export says about the independent check and the noise floor: both figures side by
side in the header, and the untuned stack recommended (settings commented out) when the check
disagrees with the search, unless --force. Hand-built SQLite studies."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import subprocess

import pytest

from autotune.export import best_config, env_file, json_file, mca_params_file
from autotune.status import study_status
from autotune.storage import (CONFIRMATION_ATTR, VERIFICATION_ATTR, BaselineLaunch,
                              StoredVerification, VerifiedSize, save_baseline)
from tests.storage import add_trial, controller_attrs, new_study

NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
SEARCH = ("confirmed against the default in interleaved rounds: speedup 1.105x (95% CI "
          "1.080x..1.130x)")
BELOW = ("the gain is below the noise floor: it shows only on average over many runs, not in a "
         "single run")


def check(agrees: bool, trial: int = 1, speedup: float = 1.06) -> StoredVerification:
    low, high = (1.02, 1.10) if agrees else (0.85, 0.97)
    return StoredVerification(
        benchmark="IMB-MPI1 (/opt/imb/IMB-MPI1)", independent=True, trial=trial, rounds=20,
        rounds_measured=20, speedup=speedup, speedup_interval=(low, high),
        sizes=(VerifiedSize(8, speedup, (low, high)),), search_speedup=math.exp(0.1),
        search_interval=(1.08, 1.13), agrees=agrees, finished=1.0)


@pytest.fixture
def study(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOTUNE_HOME", str(tmp_path / "home"))
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.0, env={}),
              value=0.0)
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=1.2), value=-math.log(1.2))
    study.set_user_attr(CONFIRMATION_ATTR, {
        "rounds": 3, "best_trial": 1, "finished": 1.0, "method": "t",
        "candidates": [{"trial": 1, "params": {}, "round_scores": [-0.1] * 3, "mean": -0.1,
                        "ci_low": -0.12, "ci_high": -0.08, "failed": "",
                        "speedup": math.exp(0.1), "speedup_interval": [1.08, 1.13]}]})
    return study


def add_noise(study, spread: float) -> None:
    """Eleven default launches in a row on the same hosts: ten A/A pairs of |log-ratio| spread."""
    for i in range(1, 12):
        t = 10.0 * math.exp(spread * (i % 2))
        save_baseline(study, BaselineLaunch(id=i, run_id="r", block=0, started=100.0 + i,
                                            seconds=0.5, t_max_us={8: t, 1024: t},
                                            hosts=["n1"]))


def test_an_agreeing_check_sits_next_to_the_search_figure(study):
    study.set_user_attr(VERIFICATION_ATTR, check(agrees=True).to_dict())
    best = best_config(study)
    assert best.verification == check(agrees=True) and not best.withheld
    text = env_file(best, NOW)
    lines = text.splitlines()
    at = lines.index(f"# {SEARCH}")
    assert lines[at + 1] == ("# independent check (IMB-MPI1, 20 rounds): speedup 1.06x (95% CI "
                             "1.02x..1.10x) \u2014 reproduces a gain, as the search claims (1.11x, "
                             "1.08x..1.13x)")
    assert "export UCX_TLS=self,sm" in lines and "NOT RECOMMENDED" not in text
    assert "noise floor" not in text  # fewer than 3 default-vs-default pairs: none shown


def test_a_disagreeing_check_recommends_the_untuned_stack(study, tmp_path):
    study.set_user_attr(VERIFICATION_ATTR, check(agrees=False, speedup=0.91).to_dict())
    best = best_config(study)
    assert best.disagrees and best.withheld
    text = env_file(best, NOW)
    assert "# NOT RECOMMENDED: the independent check disagrees with the search; use the untuned " \
           "stack: every setting below is commented out" in text
    assert f"# {SEARCH}" in text and "disagrees with the search (1.11x, 1.08x..1.13x)" in text
    assert not [line for line in text.splitlines() if not line.startswith("#")]
    assert "# export UCX_TLS=self,sm" in text and "# export OMPI_MCA_pml=ucx" in text
    path = tmp_path / "best.env"
    path.write_text(text)
    env = subprocess.run(["bash", "-c", f"source {path} && env"], capture_output=True, text=True,
                         check=True).stdout
    assert "UCX_TLS=" not in env and "OMPI_MCA_pml" not in env
    mca = mca_params_file(best, NOW)
    assert "# pml = ucx" in mca and "\npml = ucx" not in mca
    doc = json.loads(json_file(best, NOW))
    assert doc["recommended"] is False and doc["env"] == {} and doc["mca"] == {}
    assert doc["withheld"]["env"] == {"UCX_TLS": "self,sm"}
    assert doc["verification"]["agrees"] is False and doc["confirmed"]["speedup"] > 1


def test_force_writes_the_settings_and_says_so(study):
    study.set_user_attr(VERIFICATION_ATTR, check(agrees=False, speedup=0.91).to_dict())
    best = dataclasses.replace(best_config(study), force=True)
    text = env_file(best, NOW)
    assert "--force: the settings below are written anyway" in text
    assert "export UCX_TLS=self,sm" in text.splitlines()
    doc = json.loads(json_file(best, NOW))
    assert doc["forced"] is True and doc["mca"] == {"pml": "ucx"} and "withheld" not in doc


def test_a_check_of_another_trial_is_not_this_ones(study):
    study.set_user_attr(VERIFICATION_ATTR, check(agrees=False, trial=7).to_dict())
    best = best_config(study)
    assert best.verification is None and not best.withheld
    assert "independent check" not in env_file(best, NOW)


def test_noise_floor_in_header_and_status_and_a_gain_below_it(study, tmp_path):
    add_noise(study, 0.2)  # two default launches differ by up to 22%: the 1.105x claim is inside
    study.set_user_attr(VERIFICATION_ATTR, check(agrees=True).to_dict())
    text = env_file(best_config(study), NOW)
    assert ("# noise floor: two launches of the default differ by up to 22.1% (95th percentile "
            "of 10 default-vs-default launch pairs;") in text
    assert f"# {BELOW}" in text
    status = study_status(study, f"sqlite:///{tmp_path / 't.db'}")
    rendered = status.render()
    assert status.verification in rendered and "reproduces a gain" in status.verification
    assert status.noise_floor in rendered and BELOW in rendered and status.below_noise_floor
    assert "default trial vs its baseline" not in rendered
    data = status.to_dict()
    assert data["verification_detail"]["trial"] == 1 and data["noise_floor_detail"]["pairs"] == 10
    json.dumps(data)  # the JSON format carries it


def test_a_gain_above_the_noise_floor_is_not_flagged(study, tmp_path):
    add_noise(study, 0.01)
    text = env_file(best_config(study), NOW)
    assert "# noise floor: two launches of the default differ by up to 1.0%" in text
    assert BELOW not in text
    assert not study_status(study, f"sqlite:///{tmp_path / 't.db'}").below_noise_floor


def test_export_warns_once_on_stderr(study, tmp_path, autotune_cli):
    study.set_user_attr(VERIFICATION_ATTR, check(agrees=False, speedup=0.91).to_dict())
    url = f"sqlite:///{tmp_path / 't.db'}"
    proc = autotune_cli("export", "--storage", url, "-o", str(tmp_path / "x.env"), check=True)
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(
        "autotune: warning: the independent check disagrees with the search")
    assert "# export UCX_TLS=self,sm" in (tmp_path / "x.env").read_text()
    forced = autotune_cli("export", "--storage", url, "--force", check=True)
    assert "--force" in forced.stderr and "\nexport UCX_TLS=self,sm\n" in forced.stdout
    best = autotune_cli("best", "--storage", url, check=True).stdout
    assert "disagrees with the search" in best and "recommends the untuned stack" in best
    status = autotune_cli("status", "--storage", url, "--format", "json", check=True).stdout
    assert json.loads(status)["verification_detail"]["agrees"] is False
