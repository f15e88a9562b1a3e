"""The best configuration out of a real study, and every exporter's output as its reader sees it."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import subprocess

import pytest

from autotune.errors import InputError, StorageError
from autotune.export import (EXPORTERS, MPIRUN_ARGS_VAR, BestConfig, best_config, env_file,
                             json_file, mca_params_file)
from autotune.storage import CONFIRMATION_ATTR, StudyConfig
from tests.storage import CONFIG, add_trial, controller_attrs, new_study

NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
MCA_LINE = re.compile(r"^([A-Za-z0-9_]+) = (\S+)$")


def best(**overrides):
    fields = dict(study="s", trial=3, value=-0.1, speedup=1.105, is_default=False,
                  params={"UCX_TLS": "self,sm"}, env={"UCX_TLS": "self,sm"}, mca={"pml": "ucx"},
                  mpirun_args=("--map-by", "numa"), host={"host": "n1", "mpi": "Open MPI 4.1.4"},
                  context={"NPS": 2}, config=None, n_complete=4)
    fields.update(overrides)
    return BestConfig(**fields)


def _confirmation(best_trial):
    cands = [] if best_trial is None else [{
        "trial": best_trial, "params": {}, "round_scores": [-0.1] * 3, "mean": -0.1,
        "ci_low": -0.12, "ci_high": -0.08, "failed": "", "speedup": math.exp(0.1),
        "speedup_interval": [1.08, 1.13]}]
    return {"rounds": 3, "best_trial": best_trial, "candidates": cands, "finished": 1.0,
            "method": "t"}


@pytest.fixture
def study(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.0, env={}),
              value=0.0)
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=1.2), value=-math.log(1.2))
    add_trial(study, "self,tcp", attrs=controller_attrs(speedup=1.1, env={"UCX_TLS": "self,tcp"}),
              value=-math.log(1.1))
    add_trial(study, "self,tcp", "FAIL")
    return study


def test_best_config_of_a_stored_study(study):
    cfg = best_config(study)
    assert (cfg.trial, cfg.is_default, cfg.n_complete, cfg.confirmed) == (1, False, 3, False)
    assert cfg.speedup == 1.2 and cfg.value == pytest.approx(-math.log(1.2))
    assert cfg.env == {"UCX_TLS": "self,sm"} and cfg.mca == {"pml": "ucx"}
    assert cfg.mpirun_args == ("--map-by", "numa") and cfg.context == {"NPS": 1}
    assert cfg.config == StudyConfig.from_dict(CONFIG) and cfg.host["host"] == "n1"


def test_best_config_follows_the_confirmation(study):
    study.set_user_attr(CONFIRMATION_ATTR, _confirmation(2))
    cfg = best_config(study)
    assert cfg.trial == 2 and cfg.confirmed and cfg.confirmed_speedup == (
        pytest.approx(math.exp(0.1)), 1.08, 1.13)
    study.set_user_attr(CONFIRMATION_ATTR, _confirmation(None))
    cfg = best_config(study)
    assert cfg.trial == 0 and cfg.is_default and cfg.confirmed and cfg.confirmed_speedup is None
    assert "no candidate beat it beyond doubt" in env_file(cfg)


def test_a_confirmed_trial_the_search_pruned_is_exported_as_measured_in_the_confirmation(study):
    """The confirmation may race a one-knob change the search stopped early (strategy.screen):
    once it is confirmed, it is the export, and the file says where its figure comes from."""
    pruned = add_trial(study, "self,tcp", "PRUNED",
                       attrs=controller_attrs(state="PRUNED", env={"UCX_TLS": "self,tcp"}))
    study.set_user_attr(CONFIRMATION_ATTR, _confirmation(pruned))
    cfg = best_config(study)
    assert (cfg.trial, cfg.pruned, cfg.confirmed, cfg.n_complete) == (pruned, True, True, 3)
    assert cfg.env == {"UCX_TLS": "self,tcp"} and cfg.claimed == pytest.approx(math.exp(0.1))
    text = env_file(cfg, now=NOW)
    assert f"# trial {pruned}, stopped early in the search (3 trials completed)" in text
    assert "measured speedup" not in text and "export UCX_TLS=self,tcp" in text
    doc = json.loads(json_file(cfg, now=NOW))
    assert (doc["trial"], doc["pruned"], doc["speedup"], doc["value"]) == (pruned, True, None, None)
    assert doc["confirmed"]["speedup"] == pytest.approx(math.exp(0.1))


def test_a_confirmation_naming_a_failed_trial_is_a_storage_error(study):
    study.set_user_attr(CONFIRMATION_ATTR, _confirmation(3))  # trial 3 failed
    with pytest.raises(StorageError, match="trial 3, which is not a completed or pruned trial"):
        best_config(study)


@pytest.mark.parametrize("garbage", [_confirmation(9), {"best_trial": "two"}, ["x"]])
def test_garbled_confirmation_is_a_storage_error(study, garbage):
    study.set_user_attr(CONFIRMATION_ATTR, garbage)
    with pytest.raises(StorageError):
        best_config(study)


def test_no_completed_trial(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", "FAIL")
    with pytest.raises(InputError, match="no completed trial yet"):
        best_config(study)


def test_exporters_by_name():
    assert set(EXPORTERS) == {"env", "json", "mca-params", "ompi-rules", "mpich-json", "ucc-tune"}
    for name in ("env", "json", "mca-params"):  # the rule formats need a collective: own tests
        text = EXPORTERS[name].write(best())
        assert isinstance(text, str) and text.endswith("\n"), name


def test_env_file_exports_env_mca_and_mpirun_args():
    text = env_file(best())
    assert "export UCX_TLS=self,sm" in text and "export OMPI_MCA_pml=ucx" in text
    assert "export AUTOTUNE_MPIRUN_ARGS='--map-by numa'" in text
    measured_on = next(line for line in text.splitlines() if line.startswith("# measured on"))
    assert "NPS=2" in measured_on  # measured on nodes with this NPS (not settable)


def test_env_file_sources_in_bash(study, tmp_path):
    path = tmp_path / "best.env"
    path.write_text(env_file(best_config(study)))
    proc = subprocess.run(["bash", "-c", f"set -e; source {path}; env"], capture_output=True,
                          text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    env = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert env["UCX_TLS"] == "self,sm" and env["OMPI_MCA_pml"] == "ucx"
    assert env[MPIRUN_ARGS_VAR] == "--map-by numa"


def test_mca_params_file_parses_as_name_value(study):
    cfg = best_config(study)
    text = mca_params_file(cfg, now=NOW)
    settings = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert [MCA_LINE.match(line).groups() for line in settings] == [("pml", "ucx")]
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert comments[0] == "# autotune: best configuration of study s"
    assert any("Not expressible in this file" in line for line in comments)
    assert "#   export UCX_TLS=self,sm" in comments and "#   mpirun --map-by numa ..." in comments


def test_mca_params_without_mca_or_other_settings():
    text = mca_params_file(best(env={}, mca={}, mpirun_args=()), now=NOW)
    assert all(line.startswith("#") for line in text.splitlines())
    assert "sets no MCA parameter" in text and "Not expressible" not in text
    text = mca_params_file(best(env={}, mca={"coll_tuned_use_dynamic_rules": "1",
                                             "pml": "ucx"}, mpirun_args=()), now=NOW)
    assert [MCA_LINE.match(line).groups() for line in text.splitlines()
            if not line.startswith("#")] == [("coll_tuned_use_dynamic_rules", "1"), ("pml", "ucx")]


def test_json_export_loads(study):
    doc = json.loads(json_file(best_config(study), now=NOW))
    assert (doc["study"], doc["trial"], doc["speedup"], doc["confirmed"]) == ("s", 1, 1.2, None)
    assert doc["params"] == {"UCX_TLS": "self,sm"} and doc["env"] == {"UCX_TLS": "self,sm"}
    assert doc["mca"] == {"pml": "ucx"} and doc["mpirun_args"] == ["--map-by", "numa"]
    assert doc["context"] == {"NPS": 1} and doc["measured"]["sizes"] == [8, 1024]
    assert doc["exported"] == "2024-05-01T12:00:00+00:00"
    study.set_user_attr(CONFIRMATION_ATTR, _confirmation(2))
    doc = json.loads(json_file(best_config(study)))
    assert doc["trial"] == 2 and doc["confirmed"]["interval"] == [1.08, 1.13]


@pytest.mark.parametrize("exporter", sorted(EXPORTERS))
@pytest.mark.parametrize("overrides", [
    {"env": {"X=1; touch /tmp/pwned; Y": "1"}},
    {"env": {"UCX_TLS": "$(reboot)"}},
    {"env": {"LD_PRELOAD": "/tmp/evil.so"}},
    {"mca": {"plm_rsh_agent": "evil"}},
    {"mca": {"pml": "ucx\nplm_rsh_agent = evil"}},
    {"mpirun_args": ("--map-by", "numa", "/bin/sh")},
])
def test_unsafe_stored_settings_are_not_exported(exporter, overrides):
    with pytest.raises(StorageError, match="not safe to export"):
        EXPORTERS[exporter].write(best(**overrides))


@pytest.mark.parametrize("exporter", ["env", "mca-params"])
def test_header_fields_cannot_break_out_of_their_comment(exporter):
    text = EXPORTERS[exporter].write(best(study="s\ntouch /tmp/pwned", context={"NPS": "1\necho hi"}))
    allowed = ("#", "export ") if exporter == "env" else ("#", "pml = ")
    assert all(line.startswith(allowed) for line in text.splitlines())


def test_trailing_newline_in_a_stored_name_is_refused():
    with pytest.raises(StorageError):
        env_file(best(env={"UCX_TLS\n": "all"}))


def test_an_unconfirmed_best_is_labelled_and_a_slower_one_is_never_exported(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=0.97, env={}),
              value=0.03)  # the default's own noisy ratio to its interleaved reference
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=0.99), value=0.01)
    cfg = best_config(study)  # the lowest value is a candidate the search saw 1% slower
    assert cfg.is_default and cfg.trial == 0
    add_trial(study, "self,tcp", attrs=controller_attrs(speedup=1.2, env={"UCX_TLS": "self,tcp"}),
              value=-math.log(1.2))
    text = env_file(best_config(study), NOW)
    assert "# UNCONFIRMED: the search's own figure" in text and "export UCX_TLS=self,tcp" in text


def test_a_default_export_states_no_speedup_of_the_default_over_itself(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=0.514, env={}),
              value=0.665)  # a contended reading of the default against its own reference
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=0.9), value=0.1)
    text = env_file(best_config(study), NOW)
    assert "# 2 completed trials; exported: trial 0, the untuned stack itself" in text
    assert "0.514" not in text and "measured speedup" not in text


def test_the_kernels_test_hook_is_never_exported():
    with pytest.raises(StorageError, match="test-only hook"):
        env_file(best(mca={"mpi_autotune_test_corrupt_rank": "1"}))
