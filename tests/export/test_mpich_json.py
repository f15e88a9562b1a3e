"""mpich-json read back with MPICH's own rules, restated here (no MPICH on this machine):
parse_json_tree and MPIR_Csel_search of pmodels/mpich src/mpi/coll/src/csel.c, and the container
names of src/mpi/coll/src/csel_container.c."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from autotune.errors import InputError, StorageError
from autotune.export import BestConfig, ExportOptions, export_text
from autotune.rules import AlgorithmChoice, RuleSet
from autotune.storage import StudyConfig, StoredVerification
from tests.storage import CONFIG

# csel_container.c: the algorithm containers MPICH knows, per collective (blocking ones here)
CONTAINERS = {
    "allreduce": {"MPIR_Allreduce_intra_recursive_doubling",
                  "MPIR_Allreduce_intra_recursive_multiplying", "MPIR_Allreduce_intra_circ_vring",
                  "MPIR_Allreduce_intra_reduce_scatter_allgather", "MPIR_Allreduce_intra_smp",
                  "MPIR_Allreduce_intra_tree", "MPIR_Allreduce_intra_recexch",
                  "MPIR_Allreduce_intra_ring", "MPIR_Allreduce_intra_k_reduce_scatter_allgather",
                  "MPIR_Allreduce_inter_reduce_exchange_bcast", "MPIR_Allreduce_allcomm_nb"},
    "bcast": {"MPIR_Bcast_intra_binomial", "MPIR_Bcast_intra_scatter_recursive_doubling_allgather",
              "MPIR_Bcast_intra_scatter_ring_allgather", "MPIR_Bcast_intra_smp",
              "MPIR_Bcast_intra_tree", "MPIR_Bcast_intra_pipelined_tree",
              "MPIR_Bcast_inter_remote_send_local_bcast", "MPIR_Bcast_allcomm_nb"},
    "alltoall": {"MPIR_Alltoall_intra_brucks", "MPIR_Alltoall_intra_k_brucks",
                 "MPIR_Alltoall_intra_pairwise", "MPIR_Alltoall_intra_pairwise_sendrecv_replace",
                 "MPIR_Alltoall_intra_scattered", "MPIR_Alltoall_inter_pairwise_exchange",
                 "MPIR_Alltoall_allcomm_nb"},
    "reduce": {"MPIR_Reduce_intra_binomial", "MPIR_Reduce_intra_reduce_scatter_gather",
               "MPIR_Reduce_intra_smp", "MPIR_Reduce_inter_local_reduce_remote_send",
               "MPIR_Reduce_allcomm_nb"},
    "allgather": {"MPIR_Allgather_intra_brucks", "MPIR_Allgather_intra_k_brucks",
                  "MPIR_Allgather_intra_recursive_doubling", "MPIR_Allgather_intra_ring",
                  "MPIR_Allgather_intra_recexch_doubling", "MPIR_Allgather_intra_recexch_halving",
                  "MPIR_Allgather_inter_local_gather_remote_bcast", "MPIR_Allgather_allcomm_nb"},
}
COLLECTIVE_NAMES = {"allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw",
                    "barrier", "bcast", "exscan", "gather", "gatherv", "reduce", "reduce_scatter",
                    "reduce_scatter_block", "scan", "scatter", "scatterv"}
BOOLEAN = re.compile(r"(comm_type=(intra|inter)|is_\w+=(yes|no)|comm_hierarchy=\w+|count<pow2|"
                     r"comm_size=(pow2|node_comm_size))$")
COMPARE = re.compile(r"(comm_size|avg_msg_size|total_msg_size|count|comm_avg_ppn)(<=|<)(\d+)$")


@dataclass
class Node:
    """csel_node_s: an operator (key) with success/failure, or a container (algorithm)."""

    key: str
    success: Node | None = None
    failure: Node | None = None
    algorithm: str = ""


def parse(obj: dict[str, Any], collective: str | None = None) -> Node:
    """parse_json_tree: keys in order; a container key ends the object; any other key is an
    operator whose value is its success path and whose failure path is the next key."""
    assert isinstance(obj, dict) and obj, "every level is a non-empty JSON object"
    head: Node | None = None
    prev: Node | None = None
    keys = list(obj)
    for i, raw in enumerate(keys):
        key = raw.replace(" ", "")  # MPL_strdup_no_spaces
        if key.startswith("algorithm="):
            name = key[len("algorithm="):]
            assert collective and name in CONTAINERS[collective], f"unknown container {name}"
            assert i == 0 and head is None, "a container ends its object"
            return Node(key, algorithm=name)
        if key.startswith("collective="):
            collective = key[len("collective="):]
            assert collective in COLLECTIVE_NAMES, key
        elif not (BOOLEAN.match(key) or COMPARE.match(key) or key == "any" or key.endswith("=any")):
            raise AssertionError(f"unknown key {key}")  # MPIR_Assert(0) in MPICH
        if key == "any" or key.endswith("=any"):
            assert i == len(keys) - 1, "an `any` key must be the last of its object"
        node = Node(key, success=parse(obj[raw], collective))
        if COMPARE.match(key):  # validate_tree: a non-boolean operator needs a failure path
            assert i < len(keys) - 1, f"{key} has no failure path"
        head = head or node
        if prev:
            prev.failure = node
        prev = node
    assert head
    return head


def search(node: Node | None, collective: str, avg_msg_size: int, intra: bool = True) -> str:
    """MPIR_Csel_search for one call; a path that ends without a container aborts MPICH."""
    while node is not None:
        if node.algorithm:
            return node.algorithm
        key = node.key
        compare = COMPARE.match(key)
        if key.startswith("collective="):
            holds = key == f"collective={collective}"
        elif key in ("comm_type=intra", "comm_type=inter"):
            holds = (key == "comm_type=intra") == intra
        elif compare and compare.group(1) == "avg_msg_size":
            bound = int(compare.group(3))
            holds = avg_msg_size <= bound if compare.group(2) == "<=" else avg_msg_size < bound
        elif key == "any" or key.endswith("=any"):
            holds = True
        else:
            raise AssertionError(f"this test does not evaluate {key}")
        node = node.success if holds else node.failure
    raise AssertionError(f"no container for {collective} at {avg_msg_size} B: MPIR_Assert(cnt)")


RULES = RuleSet.from_starts("mpich", "allreduce", 4, [
    (0, AlgorithmChoice("recursive_doubling")), (2048, AlgorithmChoice("smp")),
    (65536, AlgorithmChoice("MPIR_Allreduce_intra_ring"))])


def best(**overrides) -> BestConfig:
    fields = dict(study="m", trial=2, value=-0.1, speedup=1.1, is_default=False, params={},
                  env={"MPIR_CVAR_DEVICE_COLLECTIVES": "none",
                       "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "reduce_scatter_allgather"},
                  mca={}, mpirun_args=(), host={"host": "n1", "mpi": "MPICH 4.1.2"}, context={},
                  config=StudyConfig.from_dict({**CONFIG, "space": "mpich"}), n_complete=3,
                  rules=RULES)
    fields.update(overrides)
    return BestConfig(**fields)


def test_bands_select_the_measured_algorithm_as_mpich_searches():
    tree = parse(json.loads(export_text("mpich-json", best())))
    expect = {0: "MPIR_Allreduce_intra_recursive_doubling",
              2047: "MPIR_Allreduce_intra_recursive_doubling", 2048: "MPIR_Allreduce_intra_smp",
              65535: "MPIR_Allreduce_intra_smp", 65536: "MPIR_Allreduce_intra_ring",
              1 << 30: "MPIR_Allreduce_intra_ring"}
    assert {size: search(tree, "allreduce", size) for size in expect} == expect
    assert search(tree, "allreduce", 8, intra=False) == "MPIR_Allreduce_inter_reduce_exchange_bcast"
    with pytest.raises(AssertionError, match="no container for bcast"):
        search(tree, "bcast", 8)  # alone, the file covers the tuned collective only


def test_without_rules_the_forced_cvar_is_one_band():
    text = export_text("mpich-json", best(rules=None))
    tree = parse(json.loads(text))
    assert search(tree, "allreduce", 5) == "MPIR_Allreduce_intra_reduce_scatter_allgather"
    assert search(tree, "allreduce", 1 << 20) == "MPIR_Allreduce_intra_reduce_scatter_allgather"


def test_merged_into_mpichs_own_selection(tmp_path):
    base = {"collective=bcast": {"comm_type=intra": {"algorithm=MPIR_Bcast_intra_binomial": {}},
                                 "comm_type=inter": {
                                     "algorithm=MPIR_Bcast_inter_remote_send_local_bcast": {}}},
            "collective = allreduce": {"algorithm=MPIR_Allreduce_intra_smp": {}}}
    path = tmp_path / "generic.json"
    path.write_text(json.dumps(base))
    doc = json.loads(export_text("mpich-json", best(), ExportOptions(mpich_base=str(path))))
    assert list(doc) == ["collective=allreduce", "collective=bcast"]  # replaced, not doubled
    tree = parse(doc)
    assert search(tree, "bcast", 8) == "MPIR_Bcast_intra_binomial"
    assert search(tree, "allreduce", 4096) == "MPIR_Allreduce_intra_smp"
    assert search(tree, "allreduce", 1 << 20) == "MPIR_Allreduce_intra_ring"
    path.write_text('{"comm_type=intra": {}}')
    with pytest.raises(InputError, match="not a csel tree"):
        export_text("mpich-json", best(), ExportOptions(mpich_base=str(path)))
    path.write_text("{")
    with pytest.raises(InputError, match="not JSON"):
        export_text("mpich-json", best(), ExportOptions(mpich_base=str(path)))


@pytest.mark.parametrize("overrides, error, message", [
    ({"rules": RuleSet.single("mpich", "allreduce", 4, AlgorithmChoice("bogus"))}, StorageError,
     "not an MPICH allreduce algorithm"),
    ({"rules": RuleSet.single("openmpi", "allreduce", 4, AlgorithmChoice(3))}, InputError,
     "not MPICH"),
    ({"rules": None, "env": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "auto"}}, InputError,
     "leaves MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM to MPICH"),
    ({"rules": None, "env": {}, "host": {"mpi": "Open MPI 4.1.4"},
      "config": StudyConfig.from_dict(CONFIG)}, InputError, "mpich-json is an MPICH format"),
    ({"env": {"MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "x; rm -rf /"}}, StorageError,
     "not safe to export"),
    ({"verification": StoredVerification(benchmark="IMB-MPI1", independent=True, trial=2,
                                         rounds=3, agrees=False)}, InputError,
     "cannot restate MPICH's own choice"),
])
def test_refusals(overrides, error, message):
    with pytest.raises(error, match=message):
        export_text("mpich-json", best(**overrides))


def test_every_mapped_cvar_value_is_a_container_mpich_knows():
    from autotune.export._mpich_json import ALGORITHMS, MORE_CONTAINERS

    for coll, names in ALGORITHMS.items():
        assert set(names.values()) | set(MORE_CONTAINERS[coll]) <= CONTAINERS[coll], coll
    import yaml

    from autotune.space._load import COLLECTIVES

    space = yaml.safe_load((Path(__file__).resolve().parents[2] / "search_spaces" / "mpich.yaml")
                           .read_text())
    for param in space["parameters"]:
        match = re.fullmatch(r"MPIR_CVAR_(\w+)_INTRA_ALGORITHM", param["name"])
        if match:
            coll = match.group(1).lower()
            assert coll in COLLECTIVES
            assert set(param["choices"]) - {"auto"} <= set(ALGORITHMS[coll]), param["name"]


@pytest.mark.parametrize("tree, message", [
    ({"collective=allreduce": {"avg_msg_size<=8": {"algorithm=MPIR_Allreduce_intra_smp": {}}}},
     "no failure path"),
    ({"collective=allreduce": {"any": {"algorithm=MPIR_Allreduce_intra_smp": {}},
                               "avg_msg_size<=8": {"algorithm=MPIR_Allreduce_intra_smp": {}}}},
     "must be the last"),
    ({"collective=allreduce": {"algorithm=MPIR_Allreduce_intra_fast": {}}}, "unknown container"),
    ({"collective=allreduce": {"msg_size<=8": {}}}, "unknown key"),
])
def test_the_grammar_check_can_fail(tree, message):
    with pytest.raises(AssertionError, match=message):
        parse(tree)
