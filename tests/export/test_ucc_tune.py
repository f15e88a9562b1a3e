"""ucc-tune read back as its consumers read it: bash sources the file, and the UCC_TL_UCP_TUNE it
sets is parsed with UCC's own grammar, restated here (no UCC on this machine): openucx/ucc
src/coll_score/ucc_coll_score.c (ucc_coll_score_alloc_from_str splits sections on `#`,
ucc_coll_score_parse_str classifies each `:` token in order: collective types, memory types,
score, message ranges, team sizes, `@algorithm`), ucs_str_to_memunits of UCX for sizes, and
ucc_coll_score_map.c for which range a message size falls in (ranges of equal score meeting at a
boundary leave it to the upper one)."""

from __future__ import annotations

import re
import subprocess

import pytest

from autotune.errors import InputError, StorageError
from autotune.export import TUNE_VAR, BestConfig, export_text
from autotune.rules import AlgorithmChoice, RuleSet
from autotune.storage import StudyConfig
from tests.storage import CONFIG

COLL_TYPES = {"barrier", "bcast", "allreduce", "reduce", "alltoall", "alltoallv", "allgather",
              "allgatherv", "gather", "gatherv", "scatter", "scatterv", "fanin", "fanout",
              "reduce_scatter", "reduce_scatterv"}
MEM_TYPES = {"host", "cuda", "cuda_managed", "rocm", "rocm_managed"}
TL_UCP_ALGS = {"allreduce": {"knomial", "sra_knomial", "dbt", "sliding_window"},
               "bcast": {"knomial", "sag_knomial", "dbt"}}
INF = 2**64 - 1


def memunits(text: str) -> int:
    """ucs_str_to_memunits: `inf`, or %ld with an optional B/K/M/G/T prefix and optional b."""
    if text.lower() == "inf":
        return INF
    match = re.fullmatch(r"(\d+)(?:([BKMGTbkmgt])([Bb])?)?", text)
    if not match:
        raise ValueError(text)
    factor = {"B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}[
        (match.group(2) or "B").upper()]
    return int(match.group(1)) * factor


def parse_tune(text: str) -> list[dict]:
    sections = []
    for section in filter(None, text.split("#")):  # strtok: empty pieces vanish
        entry: dict = {}
        for token in filter(None, section.split(":")):
            if "colls" not in entry and all(t in COLL_TYPES for t in token.split(",")):
                entry["colls"] = token.split(",")
            elif "mem" not in entry and all(t in MEM_TYPES for t in token.split(",")):
                entry["mem"] = token.split(",")
            elif "score" not in entry and (token.lower() == "inf" or token.isdigit()):
                entry["score"] = token
            elif "ranges" not in entry and _ranges(token) is not None:
                entry["ranges"] = _ranges(token)
            elif "tsizes" not in entry and token.startswith("[") and token.endswith("]"):
                entry["tsizes"] = token
            elif "alg" not in entry and token.startswith("@"):
                entry["alg"] = token[1:]
            else:
                raise AssertionError(f"UCC: failed to parse token '{token}' in '{section}'")
        sections.append(entry)
    return sections


def _ranges(token: str) -> list[tuple[int, int]] | None:
    out = []
    for part in token.split(","):
        pieces = [p for p in part.split("-") if p]
        if len(pieces) != 2:
            return None
        try:
            out.append((memunits(pieces[0]), memunits(pieces[1])))
        except ValueError:
            return None
    return out


def select(sections: list[dict], coll: str, size: int) -> str:
    """The algorithm UCC runs for `coll` at `size` bytes under this tune string."""
    ranges = sorted((start, end, s["alg"]) for s in sections if coll in s.get("colls", COLL_TYPES)
                    for start, end in s.get("ranges", [(0, INF)]))
    for (start, end, _), (nstart, _, _) in zip(ranges, ranges[1:]):
        assert start < end and end <= nstart, "UCC refuses overlapping ranges"
    for i, (start, end, alg) in enumerate(ranges):
        last = end if i + 1 == len(ranges) or ranges[i + 1][0] != end else end - 1
        if start <= size <= last:
            return alg
    raise AssertionError(f"no range holds {size}")


RULES = RuleSet.from_starts("ucc", "allreduce", 8, [
    (0, AlgorithmChoice("knomial")), (4096, AlgorithmChoice("sra_knomial")),
    (3 * 1024 * 1024 + 1, AlgorithmChoice("dbt"))])


def best(**overrides) -> BestConfig:
    fields = dict(study="u", trial=4, value=-0.1, speedup=1.1, is_default=False, params={},
                  env={"UCX_TLS": "self,sm"}, mca={"pml": "ucx", "coll_ucc_enable": "1"},
                  mpirun_args=(), host={"host": "n1", "mpi": "Open MPI 5.0.3"}, context={},
                  config=StudyConfig.from_dict(CONFIG), n_complete=3, rules=RULES)
    fields.update(overrides)
    return BestConfig(**fields)


def sourced(text: str, tmp_path) -> dict[str, str]:
    path = tmp_path / "ucc.env"
    path.write_text(text)
    proc = subprocess.run(["bash", "-c", f"set -e; source {path}; env"], capture_output=True,
                          text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


def test_tune_string_selects_each_bands_algorithm(tmp_path):
    env = sourced(export_text("ucc-tune", best()), tmp_path)
    assert env["OMPI_MCA_coll_ucc_enable"] == "1"
    tune = env[TUNE_VAR]
    assert tune == ("allreduce:0-4K:@knomial#allreduce:4K-3145729:@sra_knomial"
                    "#allreduce:3145729-inf:@dbt")
    sections = parse_tune(tune)
    assert all(s["alg"] in TL_UCP_ALGS["allreduce"] for s in sections)
    expect = {0: "knomial", 4095: "knomial", 4096: "sra_knomial", 3 * 1024 * 1024: "sra_knomial",
              3 * 1024 * 1024 + 1: "dbt", 1 << 30: "dbt"}
    assert {size: select(sections, "allreduce", size) for size in expect} == expect


@pytest.mark.parametrize("overrides, error, message", [
    ({"mca": {"pml": "ucx"}}, InputError, "does not use UCC \\(coll_ucc_enable is not set\\)"),
    ({"mca": {"coll_ucc_enable": "0"}}, InputError, "does not use UCC"),
    ({"rules": None}, InputError, "nothing measured to put in UCC_TL_UCP_TUNE"),
    ({"rules": RuleSet.single("ucc", "allreduce", 8, AlgorithmChoice("ring"))}, StorageError,
     "not a TL/UCP allreduce algorithm"),
    ({"rules": RuleSet.single("openmpi", "allreduce", 8, AlgorithmChoice(3))}, InputError,
     "not UCC"),
])
def test_refusals(overrides, error, message):
    with pytest.raises(error, match=message):
        export_text("ucc-tune", best(**overrides))


def test_withheld_settings_are_commented_out(tmp_path):
    from autotune.storage import StoredVerification

    disagree = StoredVerification(benchmark="IMB-MPI1", independent=True, trial=4, rounds=3,
                                  agrees=False)
    text = export_text("ucc-tune", best(verification=disagree))
    assert all(line.startswith("#") for line in text.splitlines())
    assert TUNE_VAR not in sourced(text, tmp_path)


def test_the_grammar_check_can_fail():
    with pytest.raises(AssertionError, match="failed to parse token 'knomial'"):
        parse_tune("allreduce:0-4K:knomial")
    with pytest.raises(AssertionError, match="overlapping"):
        select(parse_tune("allreduce:0-8K:@knomial#allreduce:4K-inf:@dbt"), "allreduce", 1)
