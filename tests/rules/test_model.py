import pytest

from autotune.errors import InputError
from autotune.rules import AlgorithmChoice, RuleSet, SizeBand, choice_from_params


def test_from_starts_merges_neighbours_and_starts_at_zero():
    rules = RuleSet.from_starts("openmpi", "allreduce", 4, [
        (16, AlgorithmChoice(3)), (8192, AlgorithmChoice(4)), (65536, AlgorithmChoice(4)),
        (1 << 20, AlgorithmChoice(5, segsize=4096))])
    assert [(b.min_bytes, b.max_bytes, b.choice.algorithm) for b in rules.bands] == [
        (0, 8192, 3), (8192, 1 << 20, 4), (1 << 20, None, 5)]
    assert rules.for_size(0).algorithm == 3
    assert rules.for_size(8191).algorithm == 3
    assert rules.for_size(8192).algorithm == 4
    assert rules.for_size(1 << 30).segsize == 4096
    assert RuleSet.from_dict(rules.to_dict()) == rules


@pytest.mark.parametrize("bands", [
    (),
    (SizeBand(16, None, AlgorithmChoice(1)),),
    (SizeBand(0, 100, AlgorithmChoice(1)), SizeBand(200, None, AlgorithmChoice(2))),
    (SizeBand(0, 100, AlgorithmChoice(1)),),
])
def test_gaps_overlaps_and_open_ends_are_refused(bands):
    with pytest.raises(InputError):
        RuleSet("openmpi", "allreduce", 2, bands)


def test_malformed_stored_rules_are_one_input_error():
    with pytest.raises(InputError, match="malformed rule set"):
        RuleSet.from_dict({"stack": "openmpi", "collective": "allreduce", "comm_size": 2,
                           "bands": [{"min_bytes": "x", "max_bytes": None, "algorithm": 1}]})


def test_choice_from_params_reads_the_tuned_names():
    params = {"coll_tuned_allreduce_algorithm": 5,
              "coll_tuned_allreduce_algorithm_segmentsize": 4096, "UCX_TLS": "sm"}
    assert choice_from_params("allreduce", params) == AlgorithmChoice(5, segsize=4096)
    assert choice_from_params("allreduce", {"coll_tuned_allreduce_algorithm": "0"}) is None
    assert choice_from_params("allreduce", {}) is None
    assert AlgorithmChoice(0).label() == "Open MPI's own decision"
