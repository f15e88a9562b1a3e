import textwrap

import pytest

from autotune.errors import SpaceError
from autotune.space import available_spaces, load_space


def test_every_shipped_space_loads():
    assert available_spaces(), "no shipped spaces found"
    for name in available_spaces():
        space = load_space(name)
        assert space.parameters and space.digest


def test_defaults_follow_conditions_and_collective():
    space = load_space("openmpi-local")
    defaults = space.defaults("allreduce")
    assert defaults["coll_tuned_allreduce_algorithm"] == 0
    assert "coll_tuned_allreduce_algorithm_segmentsize" not in defaults  # inactive: algorithm 0
    assert not any(name.startswith("coll_tuned_bcast") for name in defaults)


def test_settings_apply_fixed_params_and_implications():
    space = load_space("openmpi-local")
    params = {**space.defaults("allreduce"), "UCX_RNDV_THRESH": "8kb",
              "coll_tuned_allreduce_algorithm": 5, "coll_tuned_allreduce_algorithm_segmentsize": 4096}
    settings = space.settings(params, "allreduce")
    env, mca = dict(settings.env), dict(settings.mca)
    assert env["UCX_RNDV_THRESH"] == "8kb"
    assert mca["pml"] == "ucx" and mca["pml_ucx_devices"] == "any"
    assert mca["coll_tuned_use_dynamic_rules"] == "1"  # implied by forcing an algorithm
    assert mca["coll_tuned_allreduce_algorithm_segmentsize"] == "4096"
    default_mca = dict(space.settings(space.defaults("allreduce"), "allreduce").mca)
    assert "coll_tuned_use_dynamic_rules" not in default_mca


def test_settings_reject_values_outside_the_space():
    space = load_space("openmpi-local")
    with pytest.raises(SpaceError, match="not one of its choices"):
        space.settings({"UCX_TLS": "self,tcp;reboot"}, "allreduce")


class FixedTrial:
    """Stands in for optuna.Trial: returns the first choice, records what was asked."""

    def __init__(self):
        self.asked = []

    def suggest_categorical(self, name, choices):
        self.asked.append(name)
        return choices[-1]

    def suggest_int(self, name, low, high, step=1, log=False):
        self.asked.append(name)
        return low


def test_suggest_asks_conditional_parameter_only_when_active():
    space = load_space("openmpi-local")
    trial = FixedTrial()
    params = space.suggest(trial, "allreduce")
    assert params["coll_tuned_allreduce_algorithm"] == 6  # last choice: rabenseifner
    assert "coll_tuned_allreduce_algorithm_segmentsize" not in trial.asked


def test_composed_spaces_refuse_duplicate_parameters(tmp_path):
    path = tmp_path / "a.yaml"
    path.write_text(VALID)
    with pytest.raises(SpaceError, match="defined twice"):
        load_space(f"{path}+{path}")


VALID = textwrap.dedent("""\
    name: t
    parameters:
      - {name: UCX_TLS, apply: env, choices: [all, "self,sm"], default: all}
    """)


@pytest.mark.parametrize("body, message", [
    ("name: t\nparameters:\n  - {name: LD_PRELOAD, apply: env, choices: [a, b], default: a}\n",
     "deny-listed"),
    ("name: t\nparameters:\n  - {name: plm_rsh_agent, apply: mca, choices: [a, b], default: a}\n",
     "deny-listed"),
    ("name: t\nparameters:\n  - {name: UCX_TLS, apply: env, choices: [all, 'a;b'], default: all}\n",
     "characters outside"),
    ("name: t\nparameters:\n  - {name: UCX_TLS, apply: env, choices: [all, '-x'], default: all}\n",
     "starts with '-'"),
    ("name: t\nparameters:\n  - {name: UCX_TLS, apply: env, choices: [all, sm], default: tcp}\n",
     "not one of the choices"),
    ("name: t\nparameters:\n  - {name: X, apply: env, type: int, low: 9, high: 1, default: 5}\n",
     "inverted range"),
    ("name: t\nname: u\nparameters: []\n", "duplicate key"),
    ("name: t\nparameters:\n  - !!python/object:os.system {}\n", "invalid YAML"),
    ("name: t\nx: &a [1]\ny: *a\nparameters: []\n", "aliases are not allowed"),
    ("name: t\nparameters:\n  - {name: UCX_TLS, apply: shell, choices: [a, b], default: a}\n",
     "apply: must be one of"),
    ("name: t\nparameters:\n  - {name: A, apply: env, choices: [a, b], default: a, when: {B: [1]}}\n",
     "not an earlier parameter"),
    ("name: t\nparameters:\n  - {name: A, apply: env, choices: [a, b]}\n", "default: required"),
    ("name: t\nparameters: []\n", "at least one parameter"),
    ("- 1\n", "mapping at the top level"),
])
def test_malformed_or_unsafe_spaces_are_rejected(tmp_path, body, message):
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    with pytest.raises(SpaceError, match=message) as info:
        load_space(str(path))
    assert str(path) in str(info.value)  # the message names the file


def test_nul_byte_is_rejected(tmp_path):
    path = tmp_path / "nul.yaml"
    path.write_bytes(VALID.encode().replace(b"default: all", b"default: a\x00ll"))
    with pytest.raises(SpaceError, match="NUL"):
        load_space(str(path))


def test_unknown_space_name():
    with pytest.raises(SpaceError, match="unknown search space"):
        load_space("no-such-space")
