"""The spaces a non-blocking collective is tuned with: openmpi-libnbc's algorithms (from
ompi_info, per collective), the default space for iallreduce (no coll_tuned knob: tuned has no
non-blocking collectives; the UCX knobs apply), and seeds/004's Cray MPICH progress knobs."""
import pytest

from autotune.benchmarks import NBC_COLLECTIVES
from autotune.errors import SpaceError
from autotune.probe import Capabilities, NumaLayout
from autotune.space import TrialContext, load_space, resolve
from autotune.space._load import COLLECTIVES, parse_space


LIBNBC = {"coll_libnbc_iallreduce_algorithm": [0, 1, 2, 3, 4],
          "coll_libnbc_iallgather_algorithm": [0, 1, 2],
          "coll_libnbc_ibcast_algorithm": [0, 1, 2, 3, 4],
          "coll_libnbc_ireduce_algorithm": [0, 1, 2, 3],
          "coll_tuned_allreduce_algorithm": [0, 1, 2, 3, 4, 5, 6]}
OMPI = Capabilities(  # what ompi_info of Debian's Open MPI 4.1.4 lists
    mpi_family="openmpi", mpi_version="4.1.4",
    components={"coll": ["tuned", "basic", "libnbc", "han", "adapt"], "pml": ["ob1", "ucx"]},
    enumerators=LIBNBC, mca_defaults={"pml_ucx_devices": "mlx*"}, ucx_version="1.13.1",
    ucx_transports={"self": ["memory0"], "tcp": ["lo"], "posix": ["memory"], "cma": ["memory"]},
    numa=NumaLayout(sockets=1, numa_nodes=1, cores=2))


def knobs(spec, collective, caps=OMPI):
    ctx = TrialContext(collective, 1)
    return {p.name: p.choices for p in resolve(load_space(spec), caps, ctx).space.for_context(ctx)}


def test_libnbc_algorithms_per_nonblocking_collective():
    assert set(NBC_COLLECTIVES) <= set(COLLECTIVES)  # a space may name them
    assert knobs("openmpi-libnbc", "iallreduce") == {
        "coll_libnbc_iallreduce_algorithm": (0, 1, 2, 3, 4)}
    assert knobs("openmpi-libnbc", "ibcast") == {"coll_libnbc_ibcast_algorithm": (0, 1, 2, 3, 4),
                                                 "coll_libnbc_ibcast_knomial_radix": (2, 4, 8)}
    assert knobs("openmpi-libnbc", "iallgather") == {"coll_libnbc_iallgather_algorithm": (0, 1, 2)}
    assert knobs("openmpi-libnbc", "ialltoall") == {}  # Open MPI 4.1.4 has no such parameter
    assert knobs("openmpi-libnbc", "allreduce") == {}  # blocking: coll_tuned's business


def test_an_algorithm_this_open_mpi_does_not_list_is_removed():
    caps = Capabilities(**{**OMPI.__dict__, "enumerators": {
        "coll_libnbc_iallreduce_algorithm": [0, 1]}})
    assert knobs("openmpi-libnbc", "iallreduce", caps) == {
        "coll_libnbc_iallreduce_algorithm": (0, 1)}
    assert knobs("openmpi-libnbc", "iallgather", caps) == {}  # not listed: not searched


def test_forcing_a_libnbc_algorithm_sets_only_its_mca_parameter():
    space = resolve(load_space("openmpi-libnbc"), OMPI, TrialContext("ibcast", 1)).space
    ctx = TrialContext("ibcast", 1)
    settings = space.settings({"coll_libnbc_ibcast_algorithm": 4,
                               "coll_libnbc_ibcast_knomial_radix": 8}, ctx)
    assert dict(settings.mca) == {"coll_libnbc_ibcast_algorithm": "4",
                                  "coll_libnbc_ibcast_knomial_radix": "8"}
    assert space.settings(space.defaults(ctx), ctx).mca == ()  # the default: libnbc's own


def test_default_space_for_iallreduce_has_the_ucx_knobs_and_no_tuned_algorithm():
    default = knobs("openmpi-ucx+openmpi-tuned", "iallreduce")
    assert "UCX_TLS" in default and "pml" in default
    assert not any(name.startswith("coll_tuned_") for name in default)
    joined = knobs("openmpi-ucx+openmpi-libnbc", "iallreduce")
    assert set(joined) - set(default) == {"coll_libnbc_iallreduce_algorithm"}


def test_a_session_note_points_a_user_to_the_libnbc_space():
    from autotune.checks import nbc_notes

    ctx = TrialContext("iallreduce", 1)
    default = resolve(load_space("openmpi-ucx+openmpi-tuned"), OMPI, ctx).space
    joined = resolve(load_space("openmpi-ucx+openmpi-libnbc"), OMPI, ctx).space
    (note,) = nbc_notes("iallreduce", default, ctx, OMPI)
    assert "--space openmpi-ucx+openmpi-libnbc" in note
    assert nbc_notes("iallreduce", joined, ctx, OMPI) == []
    assert nbc_notes("allreduce", default, TrialContext("allreduce", 1), OMPI) == []
    alltoall = TrialContext("ialltoall", 1)  # libnbc has no ialltoall knob: nothing to point to
    assert nbc_notes("ialltoall", resolve(load_space("openmpi-ucx"), OMPI, alltoall).space,
                     alltoall, OMPI) == []


def test_cray_mpich_space_has_seeds_004_progress_knobs():
    space = load_space("cray-mpich")
    by_name = {p.name: p for p in space.parameters}
    assert "SC" in by_name["MPICH_NEMESIS_ASYNC_PROGRESS"].choices
    assert "overlap" in by_name["MPICH_NEMESIS_ASYNC_PROGRESS"].source
    assert by_name["MPICH_MAX_THREAD_SAFETY"].choices == ("unset", "multiple")
    assert by_name["MPICH_MAX_THREAD_SAFETY"].when == (
        ("MPICH_NEMESIS_ASYNC_PROGRESS", ("SC", "MC")),)
    assert not by_name["MPICH_NEMESIS_ASYNC_PROGRESS"].collectives  # iallreduce too


def test_an_unknown_collective_in_a_space_is_still_refused():
    doc = {"name": "t", "parameters": [{"name": "coll_libnbc_iallreduce_algorithm",
                                        "apply": "mca", "choices": [0, 1], "default": 0,
                                        "collectives": ["iallreducex"]}]}
    with pytest.raises(SpaceError, match="unknown collective 'iallreducex'"):
        parse_space(doc, "t.yaml")
