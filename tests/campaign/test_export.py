"""The combined Open MPI rules file of a campaign, read back the way Open MPI's classic reader
walks it (counts, then lines), and JSON. Open MPI loading it for real: tests/export/
test_ompi_rules_applied.py."""

import json
from pathlib import Path

from autotune.export._ompi_rules import ompi_rules_campaign
from autotune.rules import AlgorithmChoice, RuleSet

MPI = "Open MPI 4.1.4"


def _numbers(text: str) -> list[list[int]]:
    return [[int(x) for x in line.split("#")[0].split()] for line in text.splitlines()
            if line.split("#")[0].strip() and not line.startswith("rule-file")]


def _walk(text: str) -> dict[int, dict[int, list[list[int]]]]:
    """collective id -> comm size -> rules, reading counts as coll_tuned_dynamic_file.c does."""
    rows = iter(_numbers(text))
    out: dict[int, dict[int, list[list[int]]]] = {}
    for _ in range(next(rows)[0]):
        coll = next(rows)[0]
        out[coll] = {}
        for _ in range(next(rows)[0]):
            comm = next(rows)[0]
            out[coll][comm] = [next(rows) for _ in range(next(rows)[0])]
    assert next(rows, None) is None, "lines left over"
    return out


def test_every_case_at_its_communicator_size_with_fixed_decision_around():
    two = RuleSet.from_starts("openmpi", "allreduce", 2, [(0, AlgorithmChoice(1)),
                                                         (4096, AlgorithmChoice(5, segsize=8192))])
    four = RuleSet.single("openmpi", "allreduce", 4, AlgorithmChoice(3))
    gather = RuleSet.from_starts("openmpi", "allgather", 2, [(0, AlgorithmChoice(2)),
                                                            (1024, AlgorithmChoice(4))])
    text = ompi_rules_campaign([("allreduce-1n2p", two), ("allreduce-2n2p", four),
                                ("allgather-1n2p", gather)], "classic", MPI, ("# header",))
    table = _walk(text)
    assert sorted(table) == [0, 2]  # allgather, allreduce (COLLTYPE ids)
    allreduce = table[2]
    assert sorted(allreduce) == [0, 2, 3, 4, 5]
    assert allreduce[2] == [[0, 1, 0, 0], [4096, 5, 0, 8192]]
    assert allreduce[4] == [[0, 3, 0, 0]]
    assert allreduce[0] == allreduce[3] == allreduce[5] == [[0, 0, 0, 0]]
    # allgather bands are in Open MPI's total bytes: per-rank size x communicator size
    assert table[0][2] == [[0, 2, 0, 0], [2048, 4, 0, 0]]
    assert text.startswith("# header")


def test_a_communicator_size_measured_twice_keeps_the_first_and_says_so():
    one = RuleSet.single("openmpi", "allreduce", 2, AlgorithmChoice(3))
    other = RuleSet.single("openmpi", "allreduce", 2, AlgorithmChoice(4))
    text = ompi_rules_campaign([("allreduce-1n2p", one), ("allreduce-2n1p", other)], "classic",
                               MPI)
    assert _walk(text)[2][2] == [[0, 3, 0, 0]]
    assert "# NOTE: allreduce-2n1p (2 ranks) differs from allreduce-1n2p" in text
    same = ompi_rules_campaign([("a", one), ("b", one)], "classic", MPI)
    assert "NOTE" not in same


def test_v2_and_json_forms():
    rules = RuleSet.single("openmpi", "bcast", 8, AlgorithmChoice(6, segsize=4096, max_requests=4))
    v2 = ompi_rules_campaign([("bcast-2n4p", rules)], "v2", "Open MPI 5.0.7")
    assert v2.startswith("rule-file-version-2\n")
    assert [0, 6, 0, 4096, 4] in _numbers(v2)
    doc = json.loads(ompi_rules_campaign([("bcast-2n4p", rules),
                                          ("bcast-1n4p", RuleSet.single("openmpi", "bcast", 4,
                                                                        AlgorithmChoice(1)))],
                                         "json", "Open MPI 6.0.0"))
    entries = doc["collectives"]["bcast"]
    assert [(e["comm_size_min"], e["comm_size_max"]) for e in entries] == [(4, 4), (8, 8)]
    assert entries[1]["rules"][0] == {"msg_size_min": 0, "msg_size_max": "inf", "alg": 6,
                                      "seg_size": 4096, "reqs": 4}


def test_a_campaign_with_a_non_blocking_case_exports_what_applies(tmp_path):
    """coll_tuned has no rules for iallreduce: its env file is written, its rules file is skipped
    with the reason, and campaign.rules holds the blocking case only."""
    from autotune.campaign import CAMPAIGN_ATTR, Case, CaseMark
    from autotune.campaign._export import export_campaign
    from tests.storage import CONFIG, add_trial, controller_attrs, new_study

    storage = f"sqlite:///{tmp_path / 't.db'}"
    for collective in ("allreduce", "iallreduce"):
        case = Case(1, 2, collective)
        study = new_study(tmp_path, name=case.study_name("c"))
        study.set_user_attr("autotune.config", {**CONFIG, "collective": collective})
        study.set_user_attr(CAMPAIGN_ATTR, CaseMark("c", case, finished=1.0).to_dict())
        add_trial(study, "all", attrs=controller_attrs(is_default=True, env={}), value=0.0)
    done = export_campaign(storage, "c", tmp_path / "out", ("env", "ompi-rules"))
    names = sorted(Path(w.path).name for w in done.written)
    assert names == ["allreduce-1n2p.env", "allreduce-1n2p.rules", "campaign.rules",
                     "iallreduce-1n2p.env"]
    assert [(s.case, "not written for iallreduce" in s.why) for s in done.skipped] == [
        ("iallreduce-1n2p ompi-rules", True)]
    assert "iallreduce" not in (tmp_path / "out" / "campaign.rules").read_text()
