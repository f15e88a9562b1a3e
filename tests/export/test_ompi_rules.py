"""ompi-rules read back as Open MPI's readers read them: the classic/v2 reader of
ompi/mca/coll/tuned/coll_tuned_dynamic_file.c (4.1 to 5.0: `#` comments, integers, the optional
`rule-file-version-N` first line, a fifth column for version 2 when a digit follows on the line) and
the JSON rules of Open MPI 6.0 (docs/tuning-apps/tuned_dynamic_file_schema.json). The real launch
that proves Open MPI 4.1.4 applies the file is tests/export/test_ompi_rules_applied.py."""

from __future__ import annotations

import dataclasses
import json
import re

import jsonschema
import pytest

from autotune.errors import InputError, StorageError
from autotune.export import BestConfig, ExportOptions, export_text, pick_format
from autotune.export._ompi_rules import ompi_version
from autotune.rules import AlgorithmChoice, RuleSet
from autotune.export import ompi_rules_file
from autotune.storage import StoredRules, StudyConfig
from tests.storage import CONFIG

BANDS = RuleSet.from_starts("openmpi", "allreduce", 2, [
    (0, AlgorithmChoice(3)), (8192, AlgorithmChoice(5, segsize=4096, max_requests=4)),
    (1 << 20, AlgorithmChoice(4))])
# Open MPI's tuned_dynamic_file_schema.json (main), restated as a valid draft 2019-09 schema: its
# own `"anyOf": {"$ref": ...}` is not an array, which validators refuse.
INT_OR_INF = {"anyOf": [{"type": "integer"}, {"enum": ["inf", "INF", "Inf"]}]}
OMPI_JSON_RULES = {
    "$schema": "https://json-schema.org/draft/2019-09/schema#",
    "type": "object", "required": ["rule_file_version", "module", "collectives"],
    "additionalProperties": False,
    "properties": {
        "rule_file_version": {"type": "number"}, "module": {"type": "string"},
        "$schema": {"type": "string"},
        "collectives": {"type": "object", "additionalProperties": False, "patternProperties": {
            "^(allgather|allreduce|alltoall|alltoallv|alltoallw|barrier|bcast|exscan|gather|gatherv"
            "|reduce|reducescatter|reducescatterblock|scan|scatter|scatterv)$": {
                "type": "array", "items": {"$ref": "#/$defs/comm_size_rule"}}}}},
    "$defs": {
        "msg_size_rule": {"type": "object", "required": ["alg"], "additionalProperties": False,
                          "properties": {"msg_size_min": INT_OR_INF, "msg_size_max": INT_OR_INF,
                                         "alg": {"type": ["string", "integer"]},
                                         "reqs": {"type": "integer"},
                                         "faninout": {"type": "integer"},
                                         "seg_size": {"type": "integer"}}},
        "comm_size_rule": {"type": "object", "required": ["rules"], "additionalProperties": False,
                           "properties": {"comm_size_min": INT_OR_INF,
                                          "comm_size_max": INT_OR_INF,
                                          "comm_rank_distribution": {
                                              "enum": ["any", "one-per-node", "single-node"]},
                                          "rules": {"type": "array", "items": {
                                              "$ref": "#/$defs/msg_size_rule"}}}}}}


def best(mpi="Open MPI 4.1.4", **overrides) -> BestConfig:
    fields = dict(study="s", trial=3, value=-0.1, speedup=1.105, is_default=False, params={},
                  env={"UCX_TLS": "self,sm"}, mca={"pml": "ob1"}, mpirun_args=("--map-by", "numa"),
                  host={"host": "n1", "mpi": mpi}, context={}, config=StudyConfig.from_dict(CONFIG),
                  n_complete=4, rules=BANDS)
    fields.update(overrides)
    return BestConfig(**fields)


class ClassicReader:
    """ompi_coll_tuned_read_rules_config_file_classic, token for token."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0
        self.version = 1
        if text.startswith("rule-file-version-"):  # fscanf at the first byte, else version 1
            match = re.match(r"rule-file-version-(\d+)", text)
            assert match
            self.version, self.pos = int(match.group(1)), match.end()

    def getnext(self) -> int:
        """getnext: skip to the next integer; `#` comments run to the end of the line."""
        while self.pos < len(self.text):
            match = re.compile(r"\s*([+-]?\d+)").match(self.text, self.pos)
            if match:
                self.pos = match.end()
                return int(match.group(1))
            char = self.text[self.pos]
            self.pos += 1
            if char == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end + 1
        raise AssertionError("end of file where Open MPI expects a number")

    def next_is_digit(self) -> bool:
        """ompi_coll_base_file_peek_next_char_isdigit: spaces and tabs skipped, same line only."""
        rest = self.text[self.pos:].lstrip(" \t")
        return bool(rest) and rest[0].isdigit()

    def read(self) -> dict[int, list[tuple[int, list[tuple[int, ...]]]]]:
        rules: dict[int, list[tuple[int, list[tuple[int, ...]]]]] = {}
        for _ in range(self.getnext()):
            coll = self.getnext()
            comms = []
            for _ in range(self.getnext()):
                comm_size, msgs = self.getnext(), []
                for i in range(self.getnext()):
                    rule = [self.getnext() for _ in range(4)]  # msgsize alg faninout segsize
                    if self.version > 1 and self.next_is_digit():
                        rule.append(self.getnext())
                    assert i or rule[0] == 0, "the first rule must be for message size 0"
                    assert min(rule) >= 0
                    msgs.append(tuple(rule))
                comms.append((comm_size, msgs))
            rules[coll] = comms
        return rules


def lookup(comms, comm_size: int, msg_size: int) -> tuple[int, ...]:
    """ompi_coll_tuned_get_com_rule_ptr + get_target_method_params of 4.1/5.0: the nearest
    smaller-or-equal entry, or the first communicator entry when none is."""
    comm = [c for c in comms if c[0] <= comm_size] or comms[:1]
    msgs = comm[-1][1]
    return [m for m in msgs if m[0] <= msg_size][-1]


@pytest.mark.parametrize("mpi, fmt", [
    ("Open MPI 4.1.4", "classic"), ("Open MPI v4.1.6", "classic"), ("Open MPI 5.0.6", "classic"),
    ("Open MPI 5.0.7", "v2"), ("Open MPI v5.0.8", "v2"), ("Open MPI 6.0.0", "json"),
    ("Open MPI 6.1.0rc1", "json"), ("", "classic"), (None, "classic")])
def test_format_follows_the_probed_version(mpi, fmt):
    assert pick_format(mpi)[0] == fmt
    assert pick_format(mpi, "json")[0] == "json"  # the user may override


def test_other_mpi_libraries_and_bad_overrides_are_refused():
    with pytest.raises(InputError, match="Open MPI format; the study ran MPICH"):
        pick_format("MPICH 4.1.2")
    with pytest.raises(InputError, match="--rules-format 'v3'"):
        pick_format("Open MPI 4.1.4", "v3")
    assert ompi_version("Open MPI v5.0.7rc2") == (5, 0, 7)


def test_classic_file_as_open_mpi_41_reads_it():
    text = export_text("ompi-rules", best(), ExportOptions(path="/data/ar.rules"))
    assert not text.startswith("rule-file-version")  # 4.1 has no version line
    reader = ClassicReader(text)
    rules = reader.read()
    assert reader.version == 1 and list(rules) == [2]  # allreduce: COLLTYPE id 2
    comms = rules[2]
    assert [c[0] for c in comms] == [0, 2, 3]
    assert lookup(comms, 2, 0) == (0, 3, 0, 0) and lookup(comms, 2, 8191) == (0, 3, 0, 0)
    assert lookup(comms, 2, 8192) == (8192, 5, 0, 4096)
    assert lookup(comms, 2, 1 << 30) == (1 << 20, 4, 0, 0)
    for other in (1, 3, 64):  # other communicator sizes: Open MPI's fixed decision (alg 0)
        assert lookup(comms, other, 8192)[1] == 0
    assert ("# Open MPI reads this file with: --mca coll_tuned_use_dynamic_rules 1 --mca "
            "coll_tuned_dynamic_rules_filename /data/ar.rules") in text
    assert "max_requests 4, which this format cannot hold" in text  # said, not silently lost
    assert "#   --mca pml ob1" in text and "#   UCX_TLS=self,sm" in text


def test_v2_file_carries_max_requests():
    text = export_text("ompi-rules", best("Open MPI 5.0.8"))
    assert text.startswith("rule-file-version-2\n")
    reader = ClassicReader(text)
    comms = reader.read()[2]
    assert reader.version == 2
    assert lookup(comms, 2, 10000) == (8192, 5, 0, 4096, 4)
    assert lookup(comms, 2, 0) == (0, 3, 0, 0, 0) and lookup(comms, 5, 0)[1] == 0
    assert "cannot hold" not in text


def test_json_rules_of_open_mpi_6():
    doc = json.loads(export_text("ompi-rules", best("Open MPI 6.0.0")))
    jsonschema.Draft201909Validator(OMPI_JSON_RULES).validate(doc)
    (comm,) = doc["collectives"]["allreduce"]
    assert (comm["comm_size_min"], comm["comm_size_max"]) == (2, 2)
    assert comm["rules"] == [
        {"msg_size_min": 0, "msg_size_max": 8191, "alg": 3},
        {"msg_size_min": 8192, "msg_size_max": (1 << 20) - 1, "alg": 5, "seg_size": 4096,
         "reqs": 4},
        {"msg_size_min": 1 << 20, "msg_size_max": "inf", "alg": 4}]
    with pytest.raises(jsonschema.ValidationError):  # the schema check can fail
        jsonschema.validate({**doc, "collectives": {"allreduce": [{"rules": [{}]}]}},
                            OMPI_JSON_RULES)


def test_without_measured_rules_the_forced_algorithm_is_one_band():
    forced = best(rules=None, mca={"coll_tuned_use_dynamic_rules": "1",
                                   "coll_tuned_allreduce_algorithm": "5",
                                   "coll_tuned_allreduce_algorithm_segmentsize": "2048"})
    text = export_text("ompi-rules", forced)
    comms = ClassicReader(text).read()[2]
    assert comms[1] == (2, [(0, 5, 0, 2048)])
    assert "--mca coll_tuned_allreduce_algorithm" not in text  # carried by the file, not listed
    untuned = ClassicReader(export_text("ompi-rules", best(rules=None, mca={}))).read()[2]
    assert untuned[1] == (2, [(0, 0, 0, 0)])  # Open MPI's own decision


def test_withheld_export_restates_the_fixed_decision():
    from autotune.storage import StoredVerification

    disagree = StoredVerification(benchmark="IMB-MPI1", independent=True, trial=3, rounds=3,
                                  speedup=0.9, speedup_interval=(0.85, 0.95), agrees=False)
    text = export_text("ompi-rules", best(verification=disagree))
    assert "NOT RECOMMENDED" in text
    assert ClassicReader(text).read()[2][1] == (2, [(0, 0, 0, 0)])
    forced = export_text("ompi-rules", best(verification=disagree, force=True))
    assert lookup(ClassicReader(forced).read()[2], 2, 8192)[1] == 5


@pytest.mark.parametrize("rules, error, message", [
    (dataclasses.replace(BANDS, stack="mpich"), InputError, "not Open MPI coll_tuned"),
    (RuleSet.single("openmpi", "allreduce", 2, AlgorithmChoice(7)), StorageError,
     "not a coll_tuned allreduce algorithm id \\(0..6\\)"),
    (RuleSet.single("openmpi", "allreduce", 2, AlgorithmChoice("ring")), StorageError,
     "algorithm 'ring'"),
    (RuleSet.single("openmpi", "allreduce", 2, AlgorithmChoice(4, segsize=-1)), StorageError,
     "segment size -1"),
    (RuleSet.single("openmpi", "barrier", 2, AlgorithmChoice(1)), InputError,
     "not written for barrier"),
])
def test_rule_values_are_checked_before_writing(rules, error, message):
    with pytest.raises(error, match=message):
        export_text("ompi-rules", best(rules=rules))


def test_later_versions_know_later_algorithms():
    seven = RuleSet.single("openmpi", "allreduce", 2, AlgorithmChoice(7))  # allgather_reduce
    assert "alg 7 (allgather_reduce)" in export_text("ompi-rules", best("Open MPI 5.0.8",
                                                                         rules=seven))


def test_header_fields_cannot_break_out_of_their_comment():
    text = export_text("ompi-rules", best(study="s\n1\n2 3 0 0", context={"NPS": "1\n7"}))
    data = [line for line in text.splitlines() if not line.startswith("#")]
    assert all(re.fullmatch(r"\d+( \d+)*  # .*", line) for line in data), data
    assert ClassicReader(text).read()[2][1][0] == 2


def test_no_stored_configuration():
    with pytest.raises(InputError, match="stores no configuration"):
        export_text("ompi-rules", best(config=None, rules=None))


def _measured(adopted: bool) -> StoredRules:
    rules = RuleSet.from_starts("openmpi", "allreduce", 2, [(0, AlgorithmChoice(0)),
                                                            (11586, AlgorithmChoice(3))])
    return StoredRules(collective="allreduce", comm_size=2, trial=0, incumbent=0, variants=(),
                       per_size={}, rules=rules, rounds=4, adopted=adopted,
                       verdict="2 bands (...): " + ("adopted" if adopted else "not adopted"))


def test_measured_rules_are_exported_only_when_adopted_or_forced():
    assert "11586 3 0 0" not in ompi_rules_file(best(rules=None, rules_measured=_measured(False)))
    forced = ompi_rules_file(best(rules=None, rules_measured=_measured(False), force=True))
    assert "11586 3 0 0" in forced and "NOT ADOPTED" in forced
    measured = _measured(True)
    adopted = ompi_rules_file(best(rules=measured.rules, rules_measured=measured))
    assert "11586 3 0 0" in adopted and "# per-size rules: 2 bands (...): adopted" in adopted


def test_allgather_bands_are_written_in_open_mpis_total_bytes():
    """The bands are per-rank bytes (IMB's #bytes); Open MPI's allgather/alltoall decision compares
    dsize * comm_size * count, so the file's msgsize is the band start times the ranks."""
    from autotune.export import ompi_rules_text

    rules = RuleSet.from_starts("openmpi", "allgather", 4, [(0, AlgorithmChoice(2)),
                                                            (4096, AlgorithmChoice(4))])
    assert "\n16384 4 0 0" in ompi_rules_text(rules)
    doc = json.loads(ompi_rules_text(rules, "json"))
    assert [r["msg_size_min"] for r in doc["collectives"]["allgather"][0]["rules"]] == [0, 16384]
    reduce = RuleSet.from_starts("openmpi", "allreduce", 4, [(0, AlgorithmChoice(2)),
                                                             (4096, AlgorithmChoice(4))])
    assert "\n4096 4 0 0" in ompi_rules_text(reduce)
