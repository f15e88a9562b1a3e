import pytest

from autotune.campaign import Case, CaseMark, cases_of, parse_case
from autotune.errors import InputError


def test_cases_run_fewest_nodes_then_fewest_ranks_then_collectives_as_given():
    cases = cases_of(("alltoall", "allreduce"), (2, 1), (2, 1))
    assert [c.label for c in cases] == [
        "alltoall-1n1p", "allreduce-1n1p", "alltoall-1n2p", "allreduce-1n2p",
        "alltoall-2n1p", "allreduce-2n1p", "alltoall-2n2p", "allreduce-2n2p"]
    assert cases[0].study_name("site") == "site.alltoall-1n1p"
    assert Case(2, 8, "allreduce").ranks == 16


def test_parse_case_reads_labels_and_refuses_others():
    assert parse_case("allreduce-2n36p") == Case(2, 36, "allreduce")
    assert parse_case("iallreduce-1n2p") == Case(1, 2, "iallreduce")
    for bad in ("allreduce", "allreduce-2x4", "-1n1p", "allreduce-0n1p", "allreduce-1nXp"):
        with pytest.raises(InputError):
            parse_case(bad)


def test_mark_round_trips_and_unreadable_marks_are_no_campaign():
    mark = CaseMark("site", Case(1, 2, "allgather"), trials=5, finished=12.5,
                    warm_started=("queued: x",), agreed=True, waiting="", stopped="killed")
    assert CaseMark.from_dict(mark.to_dict()) == mark
    for bad in (None, "x", {}, {"campaign": "a"}, {"campaign": "a", "collective": "x",
                                                    "nodes": "two", "ppn": 1}):
        assert CaseMark.from_dict(bad) is None


def test_a_mark_naming_no_known_collective_is_no_campaign():
    """A mark is read from shared storage: its label becomes a file name and a rules-file line."""
    good = CaseMark("site", Case(1, 2, "allgather")).to_dict()
    assert CaseMark.from_dict({**good, "collective": "iallreduce"}) is not None
    for bad in ("../../etc/x", "allreduce\n1 2 3", ""):
        assert CaseMark.from_dict({**good, "collective": bad}) is None
    assert CaseMark.from_dict({**good, "nodes": 0}) is None
