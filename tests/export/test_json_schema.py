"""`--format json` read back with its JSON Schema (autotune/export/json-export.schema.json, package
data), for real exports of stored studies in each shape the document takes."""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import jsonschema
import pytest

from autotune.export import JSON_SCHEMA, best_config, json_file, json_schema
from autotune.rules import AlgorithmChoice, RuleSet
from autotune.storage import RuleVariant, StoredRules
from autotune.storage import CONFIRMATION_ATTR, VERIFICATION_ATTR, StoredVerification
from tests.storage import add_trial, controller_attrs, new_study

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def validator():
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@pytest.fixture
def study(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.0, env={}),
              value=0.0)
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=1.2), value=-math.log(1.2))
    return study


def _confirm(study, best_trial):
    study.set_user_attr(CONFIRMATION_ATTR, {
        "rounds": 3, "best_trial": best_trial, "finished": 1.0, "method": "t",
        "candidates": [] if best_trial is None else [{
            "trial": best_trial, "params": {}, "round_scores": [-0.1] * 3, "mean": -0.1,
            "ci_low": -0.12, "ci_high": -0.08, "failed": "", "speedup": math.exp(0.1),
            "speedup_interval": [1.08, 1.13]}]})


def _verify(study, agrees):
    study.set_user_attr(VERIFICATION_ATTR, StoredVerification(
        benchmark="IMB-MPI1 (/opt/IMB-MPI1)", independent=True, trial=1, rounds=3,
        rounds_measured=3, speedup=1.1 if agrees else 0.9, speedup_interval=(1.05, 1.15) if agrees
        else (0.85, 0.95), agrees=agrees, finished=2.0, argv=("mpirun", "-np", "2")).to_dict())


def shapes(study):
    yield "unconfirmed", best_config(study)
    _confirm(study, 1)
    yield "confirmed", best_config(study)
    _verify(study, agrees=True)
    yield "verified", best_config(study)
    rules = RuleSet.from_starts("openmpi", "allreduce", 2,
                                [(0, AlgorithmChoice(3)), (4096, AlgorithmChoice(4))])
    yield "with rules", dataclasses.replace(best_config(study), rules=rules)
    measured = StoredRules(collective="allreduce", comm_size=2, trial=1, incumbent=0,
                           variants=(RuleVariant(AlgorithmChoice(3), "trial 1", {8: 1.5},
                                                 round_us={8: [1.5, math.nan]}),),
                           per_size={8: 0}, rules=rules, rounds=2, adopted=False,
                           verdict="2 bands (...): not adopted (...)")
    yield "rules not adopted", dataclasses.replace(best_config(study), rules_measured=measured)
    yield "rules forced", dataclasses.replace(best_config(study), rules_measured=measured,
                                              force=True)
    _verify(study, agrees=False)
    yield "withheld", best_config(study)
    yield "forced", dataclasses.replace(best_config(study), force=True)
    _confirm(study, None)
    yield "default best", best_config(study)
    pruned = add_trial(study, "self,tcp", "PRUNED",
                       attrs=controller_attrs(state="PRUNED", env={"UCX_TLS": "self,tcp"}))
    _confirm(study, pruned)
    yield "pruned, confirmed", best_config(study)


def test_every_shape_of_a_real_export_validates(study, validator):
    seen = set()
    for name, best in shapes(study):
        doc = json.loads(json_file(best))
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]
        assert not errors, (name, errors)
        seen.add(name)
        if name == "with rules":
            assert doc["rules"]["bands"][1] == {"min_bytes": 4096, "max_bytes": None,
                                                "algorithm": 4, "segsize": 0, "faninout": 0,
                                                "max_requests": 0}
        if name == "rules not adopted":
            assert doc["rules"] is None and doc["per_size"]["adopted"] is False
            assert doc["per_size"]["variants"][0]["round_us"] == {"8": [1.5, None]}
        if name == "rules forced":
            assert doc["rules"]["bands"][1]["algorithm"] == 4
        if name == "withheld":
            assert "withheld" in doc and doc["env"] == {} and doc["rules"] is None
        if name == "pruned, confirmed":
            assert doc["pruned"] is True and doc["speedup"] is None and doc["value"] is None
    assert len(seen) == 10


@pytest.mark.parametrize("change", [
    lambda d: d.pop("speedup"),
    lambda d: d.update(extra=1),
    lambda d: d.update(env={"UCX_TLS": 3}),
    lambda d: d.update(exported="yesterday"),
    lambda d: d.update(rules={"stack": "openmpi", "collective": "allreduce", "comm_size": 0,
                              "bands": []}),
])
def test_the_schema_refuses_what_is_not_an_export(study, validator, change):
    doc = json.loads(json_file(best_config(study)))
    change(doc)
    assert list(validator.iter_errors(doc))


def test_the_schema_ships_as_package_data():
    package = ROOT / "autotune" / "export" / JSON_SCHEMA
    assert package.is_file()
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["autotune"]
    assert any(fnmatch(f"export/{JSON_SCHEMA}", glob) for glob in globs), globs
