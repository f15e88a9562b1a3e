from autotune.errors import SpaceError
from autotune.probe import Capabilities, NumaLayout
from autotune.space import TrialContext, load_space, resolve

import pytest

ALLREDUCE = TrialContext("allreduce", 1)
CAPS = Capabilities(mpi_family="openmpi", mpi_version="4.1.4",
                    components={"coll": ["tuned"], "pml": ["ob1", "ucx"]},
                    mca_defaults={"pml_ucx_devices": "mlx*"},  # no Mellanox device: ob1 in force
                    enumerators={f"coll_tuned_{c}_algorithm": list(range(8))
                                 for c in ("allreduce", "allgather", "alltoall", "bcast", "reduce")},
                    ucx_transports={"self": ["memory0"], "posix": ["memory"]},
                    numa=NumaLayout(1, 1, 2))


def resolved(name, ctx=ALLREDUCE):
    return resolve(load_space(name), CAPS, ctx).space


def test_defaults_follow_conditions_collective_and_scope():
    space = load_space("openmpi-ucx+openmpi-tuned")
    defaults = space.defaults(ALLREDUCE, {"NPS": 2})
    assert defaults["coll_tuned_allreduce_algorithm"] == 0
    assert "coll_tuned_allreduce_algorithm_segmentsize" not in defaults  # inactive: algorithm 0
    assert not any(name.startswith("coll_tuned_bcast") for name in defaults)
    assert defaults["pml"] == "unset"  # the untuned stack: Open MPI picks the pml
    assert not any(name.startswith("UCX_") for name in defaults)  # UCX knobs need pml ucx
    assert defaults["NPS"] == 2  # context: the allocation's value
    ucx = space.defaults(ALLREDUCE) | {"pml": "ucx"}
    single = {p.name for p in space.for_context(ALLREDUCE) if p.active(ucx)}
    assert "UCX_RNDV_THRESH" in single and "UCX_RNDV_THRESH_INTER" not in single  # 1 node
    multi = {p.name for p in space.for_context(TrialContext("allreduce", 2)) if p.active(ucx)}
    assert "UCX_RNDV_THRESH" not in multi and "UCX_RNDV_THRESH_INTER" in multi


def test_the_default_configuration_sets_nothing():
    space = resolved("openmpi-ucx+openmpi-tuned")
    settings = space.settings(space.defaults(ALLREDUCE, {"NPS": 1}), ALLREDUCE)
    assert settings == type(settings)()  # no env, no MCA, no mpirun argument


def test_pml_ucx_brings_its_companions_where_ob1_is_in_force():
    result = resolve(load_space("openmpi-ucx"), CAPS, ALLREDUCE)
    assert result.in_force == {"pml": "ob1"}
    space = result.space
    params = {**space.defaults(ALLREDUCE), "pml": "ucx", "UCX_TLS": "self,posix,cma"}
    mca = dict(space.settings(params, ALLREDUCE).mca)
    assert mca == {"pml": "ucx", "pml_ucx_devices": "any", "pml_ucx_tls": "any"}
    mca = dict(space.settings({**params, "UCX_TLS": "all"}, ALLREDUCE).mca)
    assert mca == {"pml": "ucx", "pml_ucx_devices": "any", "pml_ucx_tls": "any"}
    pml = next(p for p in space.parameters if p.name == "pml")
    assert pml.choices == ("unset", "ucx")  # ob1 is what unset runs here: no second reference
    assert any("pml=ob1: the same as unset here" in str(r) for r in result.removed)


def test_ucx_knobs_are_live_under_the_untuned_stack_where_ucx_is_in_force():
    mellanox = Capabilities(mpi_family="openmpi", mpi_version="4.1.4",
                            components={"pml": ["ob1", "ucx"]},
                            mca_defaults={"pml_ucx_devices": "mlx*"},
                            ucx_transports={"rc_mlx5": ["mlx5_0:1"], "self": ["memory0"]},
                            numa=NumaLayout(2, 2, 72))
    result = resolve(load_space("openmpi-ucx"), mellanox, ALLREDUCE)
    assert result.in_force == {"pml": "ucx"}
    space = result.space
    trial = LastChoiceTrial()
    trial.choose = {"pml": "unset"}
    params = space.suggest(trial, ALLREDUCE)
    assert params["pml"] == "unset" and "UCX_TLS" in params  # asked: live without a setting
    mca = dict(space.settings({**params, "UCX_TLS": "self,sm,rc"}, ALLREDUCE).mca)
    # no device companion where ucx is selected anyway; UCX_TLS still lets itself decide
    assert mca == {"pml_ucx_tls": "any"}
    assert dict(space.settings({**params, "UCX_TLS": "all"}, ALLREDUCE).mca) == {}
    assert next(p for p in space.parameters if p.name == "pml").choices == ("unset", "ob1")
    assert any("pml=ucx: the same as unset here" in str(r) for r in result.removed)


@pytest.mark.parametrize("site, expected", [("ucx", "ucx"), ("ob1", "ob1"), ("^ucx", "ob1"),
                                            ("", "ob1")])
def test_a_site_setting_decides_which_pml_is_in_force(site, expected):
    caps = Capabilities(mpi_family="openmpi", mpi_version="4.1.4",
                        components={"pml": ["ob1", "ucx"]},
                        mca_defaults={"pml": site, "pml_ucx_devices": "mlx*"})
    assert resolve(load_space("openmpi-ucx"), caps, ALLREDUCE).in_force == {"pml": expected}


def test_settings_apply_fixed_params_implications_and_mpirun_args():
    space = resolved("openmpi-ucx+openmpi-tuned")
    params = {**space.defaults(ALLREDUCE), "pml": "ucx", "UCX_RNDV_THRESH": "8kb", "mapping": "cyclic",
              "coll_tuned_allreduce_algorithm": 5, "coll_tuned_allreduce_algorithm_segmentsize": 4096}
    settings = space.settings(params, ALLREDUCE)
    env, mca = dict(settings.env), dict(settings.mca)
    assert env["UCX_RNDV_THRESH"] == "8kb"
    assert mca["pml"] == "ucx" and mca["pml_ucx_devices"] == "any"
    assert mca["coll_tuned_use_dynamic_rules"] == "1"  # implied by forcing an algorithm
    assert mca["coll_tuned_allreduce_algorithm_segmentsize"] == "4096"
    assert settings.mpirun_args == ("--map-by", "numa", "--bind-to", "core")
    assert "NPS" not in env and "NPS" not in mca  # context is never set
    default_mca = dict(space.settings(space.defaults(ALLREDUCE), ALLREDUCE).mca)
    assert "coll_tuned_use_dynamic_rules" not in default_mca


def test_composed_split_threshold_on_several_nodes():
    space = load_space("openmpi-ucx")
    ctx = TrialContext("alltoall", 4)
    params = {**space.defaults(ctx), "pml": "ucx", "UCX_RNDV_THRESH_INTRA": "32kb",
              "UCX_RNDV_THRESH_INTER": "128kb"}
    env = dict(space.settings(params, ctx).env)
    assert env["UCX_RNDV_THRESH"] == "intra:32kb,inter:128kb"
    assert "UCX_RNDV_THRESH_INTRA" not in env


def test_unset_choice_leaves_the_variable_out():
    space = load_space("cray-mpich")
    ctx = TrialContext("allreduce", 1)
    env = dict(space.settings(space.defaults(ctx), ctx).env)
    assert env == {}
    params = {**space.defaults(ctx), "MPICH_NEMESIS_ASYNC_PROGRESS": "SC", "MPICH_MAX_THREAD_SAFETY": "multiple"}
    env = dict(space.settings(params, ctx).env)
    assert env == {"MPICH_NEMESIS_ASYNC_PROGRESS": "SC", "MPICH_MAX_THREAD_SAFETY": "multiple"}


def test_settings_reject_values_outside_the_space():
    space = load_space("openmpi-ucx")
    with pytest.raises(SpaceError, match="not one of its choices"):
        space.settings({"pml": "ucx", "UCX_TLS": "self,tcp;reboot"}, ALLREDUCE)


class LastChoiceTrial:
    """Stands in for optuna.Trial: returns the last choice, records what was asked."""

    def __init__(self):
        self.asked = []
        self.choose = {}

    def suggest_categorical(self, name, choices):
        self.asked.append(name)
        return self.choose.get(name, choices[-1])

    def suggest_int(self, name, low, high, step=1, log=False):
        self.asked.append(name)
        return low


def test_suggest_asks_conditional_parameter_only_when_active():
    space = resolved("openmpi-tuned").without(set(), {"coll_tuned_allreduce_algorithm": (0, 6)})
    trial = LastChoiceTrial()
    params = space.suggest(trial, ALLREDUCE)
    assert params["coll_tuned_allreduce_algorithm"] == 6
    assert "coll_tuned_allreduce_algorithm_segmentsize" not in trial.asked


def test_screening_spreads_a_wide_integer_range_over_a_few_values():
    from autotune.space import Parameter, spread_values

    wide = Parameter(name="UCX_RNDV_THRESH", apply="env", type="int", low=1, high=100000,
                     default=8192)
    values = spread_values(wide)
    assert len(values) <= 9 and values[0] == 8192 and {1, 100000} <= set(values)
    assert values[1:] == sorted(values[1:])  # geometric: 1, 5, 27, ..., 100000
    narrow = Parameter(name="k", apply="env", type="int", low=0, high=5, default=0)
    assert spread_values(narrow) == [0, 1, 2, 3, 4, 5]
    many = Parameter(name="coll_tuned_bcast_algorithm", apply="mca", type="categorical",
                     choices=("unset", *range(1, 10)), default="unset")
    assert spread_values(many) == list(many.choices)  # choices are all screened
