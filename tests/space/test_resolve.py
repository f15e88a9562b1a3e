import pytest

from autotune.errors import SpaceError
from autotune.probe import Capabilities, NumaLayout
from autotune.space import TrialContext, load_space, resolve

OMPI = Capabilities(
    mpi_family="openmpi", mpi_version="4.1.4",
    components={"coll": ["tuned", "basic", "han"], "pml": ["ob1", "ucx"]},
    enumerators={"coll_tuned_allreduce_algorithm": [0, 1, 2, 3, 4, 5, 6]},
    mca_defaults={"pml_ucx_devices": "mlx*"},
    ucx_version="1.13.1",
    ucx_transports={"self": ["memory0"], "tcp": ["lo"], "posix": ["memory"], "cma": ["memory"]},
    numa=NumaLayout(sockets=2, numa_nodes=4, cores=72))


def removed(resolved):
    return {(r.parameter, r.choice): r.reason for r in resolved.removed}


def test_unavailable_choices_are_removed_with_reasons():
    resolved = resolve(load_space("openmpi-ucx+openmpi-tuned"), OMPI, TrialContext("allreduce", 1))
    reasons = removed(resolved)
    assert "no UCX rc transport" in reasons[("UCX_TLS", "self,sm,rc")]
    assert ("UCX_TLS", "self,sm,dc") in reasons
    assert "no coll/hcoll component" in reasons[("coll_hcoll_enable", None)]
    assert "no coll/ucc component" in reasons[("coll_ucc_enable", None)]
    tls = next(p for p in resolved.space.parameters if p.name == "UCX_TLS")
    assert "self,sm,rc" not in tls.choices and "self,sm" in tls.choices
    assert resolved.context_values == {"NPS": 2}  # 4 NUMA nodes on 2 sockets


def test_infiniband_node_keeps_rc_and_hcoll():
    caps = Capabilities(**{**OMPI.__dict__,
                           "components": {**OMPI.components, "coll": ["tuned", "hcoll"]},
                           "ucx_transports": {**OMPI.ucx_transports, "rc_mlx5": ["mlx5_0:1"],
                                              "ud_verbs": ["mlx5_0:1"], "dc_mlx5": ["mlx5_0:1"]}})
    resolved = resolve(load_space("openmpi-ucx"), caps, TrialContext("allreduce", 1))
    assert not any(r.parameter in ("UCX_TLS", "coll_hcoll_enable") for r in resolved.removed)
    assert caps.pml_ucx_selected_by_default()
    assert not OMPI.pml_ucx_selected_by_default()


def test_algorithms_come_from_ompi_info():
    caps = Capabilities(**{**OMPI.__dict__, "enumerators": {"coll_tuned_allreduce_algorithm": [0, 1, 4]}})
    resolved = resolve(load_space("openmpi-tuned"), caps, TrialContext("allreduce", 1))
    algo = next(p for p in resolved.space.parameters if p.name == "coll_tuned_allreduce_algorithm")
    assert algo.choices == (0, 1, 4)
    # segmented ring (5) is not offered: its segment size can never be active
    assert not any(p.name == "coll_tuned_allreduce_algorithm_segmentsize"
                   for p in resolved.space.parameters)


def test_split_thresholds_need_a_ucx_that_accepts_them():
    resolved = resolve(load_space("openmpi-ucx"), OMPI, TrialContext("alltoall", 2))
    assert "lacks split-thresholds" in removed(resolved)[("UCX_RNDV_THRESH_INTER", None)]
    newer = Capabilities(**{**OMPI.__dict__, "ucx_features": ["split-thresholds"]})
    resolved = resolve(load_space("openmpi-ucx"), newer, TrialContext("alltoall", 2))
    assert any(p.name == "UCX_RNDV_THRESH_INTER" for p in resolved.space.parameters)


def test_space_for_another_stack_is_refused():
    with pytest.raises(SpaceError, match="is for mpich"):
        resolve(load_space("mpich"), OMPI, TrialContext("allreduce", 1))


def test_allocation_nps_outside_the_choices_is_an_error():
    odd = Capabilities(**{**OMPI.__dict__, "numa": NumaLayout(sockets=1, numa_nodes=3, cores=48)})
    with pytest.raises(SpaceError, match="NPS of this allocation is 3"):
        resolve(load_space("openmpi-ucx"), odd, TrialContext("allreduce", 1))


def test_on_node_transport_sets_leave_multi_node_studies():
    space = load_space("openmpi-ucx")
    one = resolve(space, OMPI, TrialContext("allreduce", 1)).space
    two = resolve(space, OMPI, TrialContext("allreduce", 2))
    tls_one = next(p for p in one.parameters if p.name == "UCX_TLS").choices
    tls_two = next(p for p in two.space.parameters if p.name == "UCX_TLS").choices
    assert "self,sm" in tls_one and "sm" in tls_one
    assert set(tls_two) & {"sm", "self,sm", "self,posix,cma", "self,sysv,cma"} == set()
    assert "all" in tls_two and "self,tcp" in tls_two
    assert "UCX_TLS=self,sm: single-node only; this study runs on 2 node(s)" in map(str, two.removed)


def test_one_threshold_gives_way_to_the_split_form_only_where_ucx_accepts_it():
    space = load_space("openmpi-ucx")
    names = lambda resolved: {p.name for p in resolved.space.parameters}  # noqa: E731
    one = resolve(space, OMPI, TrialContext("allreduce", 1))
    assert "UCX_RNDV_THRESH" in names(one)
    # UCX 1.13 has no intra:X,inter:Y: across nodes the single threshold is still searched
    old = resolve(space, OMPI, TrialContext("allreduce", 2))
    assert "UCX_RNDV_THRESH" in names(old) and "UCX_RNDV_THRESH_INTER" not in names(old)
    env = dict(old.space.settings({"UCX_RNDV_THRESH": "32kb"}, TrialContext("allreduce", 2)).env)
    assert env["UCX_RNDV_THRESH"] == "32kb"
    newer = Capabilities(**{**OMPI.__dict__, "ucx_features": ["split-thresholds"]})
    split = resolve(space, newer, TrialContext("allreduce", 2))
    assert "UCX_RNDV_THRESH" not in names(split)
    assert {"UCX_RNDV_THRESH_INTRA", "UCX_RNDV_THRESH_INTER"} <= names(split)
    assert "gives way to UCX_RNDV_THRESH_INTRA" in removed(split)[("UCX_RNDV_THRESH", None)]
    env = dict(split.space.settings({"UCX_RNDV_THRESH_INTRA": "32kb", "UCX_RNDV_THRESH_INTER": "128kb"},
                                    TrialContext("allreduce", 2)).env)
    assert env["UCX_RNDV_THRESH"] == "intra:32kb,inter:128kb"
