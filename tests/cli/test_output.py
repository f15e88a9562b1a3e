"""Output through a pipe is plain and greppable: tables are tab-separated values (a header line,
then one record per line, `-` for an empty cell), never wrapped, no box drawing, no color; other
output is plain lines. `--format json` parses and holds everything. Standard output is a pipe
here and COLUMNS is small, so any wrapping would show."""

from __future__ import annotations

import json
import math

import pytest

from autotune.space import available_spaces, load_space
from tests.storage import add_trial, controller_attrs, new_study

NARROW = {"COLUMNS": "40"}
BOX = set("─│┃━┏┓┗┛┡┩└┘├┤┬┴┼╇╈═║")


def run(autotune_cli, *args):
    proc = autotune_cli(*args, check=True, extra_env=NARROW)
    assert "\x1b" not in proc.stdout and not BOX & set(proc.stdout), proc.stdout  # no color, no box
    return proc.stdout


def tsv(text):
    """Header and records; every record has as many cells as the header."""
    lines = text.splitlines()
    header = lines[0].split("\t")
    records = [line.split("\t") for line in lines[1:]]
    assert len(header) > 1 and all(len(r) == len(header) for r in records), text
    return header, records


def test_spaces_show_piped_is_one_knob_per_line_with_its_choices(autotune_cli):
    out = run(autotune_cli, "spaces", "show", "openmpi-ucx")
    header, _ = tsv(out)
    assert header == ["knob", "applied as", "default", "choices", "only when", "source"]
    space = json.loads(run(autotune_cli, "spaces", "show", "openmpi-ucx", "--format", "json"))
    rndv = next(p for p in space["parameters"] if p["name"] == "UCX_RNDV_THRESH")
    lines = [line for line in out.splitlines() if line.startswith("UCX_RNDV_THRESH\t")]
    assert lines and all(str(c) in lines[0] for c in rndv["choices"]), out
    assert lines[0].split("\t")[3] == rndv["choices_text"]
    # what `grep` users do
    assert any("UCX_RNDV_THRESH" in line and "128kb" in line for line in out.splitlines())


@pytest.mark.parametrize("name", sorted(available_spaces()))
def test_spaces_show_json_holds_every_knob_and_text_never_wraps(autotune_cli, name):
    space = load_space(name)
    data = json.loads(run(autotune_cli, "spaces", "show", name, "--format", "json"))
    assert data["name"] == space.name and data["stack"] == space.stack
    assert [p["name"] for p in data["parameters"]] == [p.name for p in space.parameters]
    assert [s["name"] for s in data["fixed"]] == [s.name for s in space.fixed]
    assert [c["name"] for c in data["compose"]] == [c.name for c in space.compose]
    for given, model in zip(data["parameters"], space.parameters):
        assert given["apply"] == model.apply and given["default"] == model.default
        assert given["choices"] == list(model.choices)
    _, records = tsv(run(autotune_cli, "spaces", "show", name))
    assert len(records) == len(space.fixed) + len(space.parameters) + len(space.compose)
    for record, p in zip(records[len(space.fixed):], space.parameters):
        assert record[0] == p.name and record[5] == (p.source or p.help or "-")  # whole, one line


def test_spaces_list_piped_and_json(autotune_cli):
    header, records = tsv(run(autotune_cli, "spaces", "list"))
    assert header == ["space", "stack", "knobs", "description"]
    data = json.loads(run(autotune_cli, "spaces", "list", "--format", "json"))
    assert [s["name"] for s in data] == [r[0] for r in records] == list(available_spaces())
    for entry, record in zip(data, records):
        space = load_space(entry["name"])
        assert entry["parameters"] == [p.name for p in space.parameters]
        assert record == [space.name, space.stack, str(len(space.parameters)), space.description]
        assert len(space.description) > 40  # long enough to have been wrapped at COLUMNS=40


def test_probe_piped_is_plain_lines(autotune_cli):
    data = json.loads(run(autotune_cli, "probe", "--format", "json"))
    lines = run(autotune_cli, "probe").splitlines()
    coll = next(line for line in lines if line.startswith("coll:"))
    assert coll.split(None, 1)[1] == (", ".join(sorted(data["components"]["coll"])) or "-")
    assert any(line.startswith("NUMA:") and line.endswith("usable") for line in lines)


@pytest.fixture
def study_url(tmp_path):
    """A stored study shaped like the controller's: the default, a winner, a pruned and a failed
    trial."""
    study = new_study(tmp_path, name="allreduce-test")
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.01), value=-0.01)
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=1.2), value=-math.log(1.2))
    add_trial(study, "self,tcp", "PRUNED")
    add_trial(study, "self,tcp", "FAIL")
    return f"sqlite:///{tmp_path / 't.db'}"


def test_study_listings_piped(autotune_cli, study_url):
    header, records = tsv(run(autotune_cli, "history", "--storage", study_url))
    assert header[:3] == ["trial", "state", "speedup"] and [r[0] for r in records] == list("0123")
    assert records[1][1:3] == ["COMPLETE", "1.200x"] and records[1][-1] == "UCX_TLS=self,sm"
    assert records[3][1] == "FAIL" and records[3][2] == "-"

    best = run(autotune_cli, "best", "--storage", study_url).splitlines()
    assert best[0] == ("study allreduce-test: best is trial 1, speedup 1.200x over the default")
    assert best[1:] == ["  UCX_TLS = self,sm"]
    data = json.loads(run(autotune_cli, "best", "--storage", study_url, "--format", "json"))
    assert data["trial"] == 1 and data["params"] == {"UCX_TLS": "self,sm"}

    status = run(autotune_cli, "status", "--storage", study_url).splitlines()
    assert status[0].startswith("study allreduce-test: allreduce on 1 node x 2 ranks")
    assert "not running" in status
    assert any(line.startswith("trials: 2 complete, 1 pruned, 1 failed") for line in status)
    data = json.loads(run(autotune_cli, "status", "--storage", study_url, "--format", "json"))
    assert data["study"] == "allreduce-test" and data["alive"] is False


def test_best_of_a_confirmed_pruned_trial_has_no_search_figure(autotune_cli, tmp_path):
    """The confirmation may confirm a trial the search stopped early (strategy.screen): `best`
    shows the confirmation's speedup, and its JSON has no search speedup or value (null), not 0."""
    from autotune.storage import CONFIRMATION_ATTR

    study = new_study(tmp_path, name="allreduce-test")
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.0), value=0.0)
    add_trial(study, "self,sm", attrs=controller_attrs(speedup=1.05), value=-math.log(1.05))
    pruned = add_trial(study, "self,tcp", "PRUNED", attrs=controller_attrs(state="PRUNED"))
    study.set_user_attr(CONFIRMATION_ATTR, {
        "rounds": 5, "best_trial": pruned, "finished": 1.0, "method": "t", "candidates": [{
            "trial": pruned, "params": {}, "round_scores": [-0.2] * 5, "mean": -0.2,
            "ci_low": -0.25, "ci_high": -0.15, "failed": "", "speedup": math.exp(0.2),
            "speedup_interval": [1.16, 1.28]}]})
    url = f"sqlite:///{tmp_path / 't.db'}"

    text = run(autotune_cli, "best", "--storage", url).splitlines()
    assert text[0].startswith(f"study allreduce-test: best is trial {pruned}, confirmed speedup "
                              "1.221x"), text
    assert "  UCX_TLS = self,tcp" in text
    data = json.loads(run(autotune_cli, "best", "--storage", url, "--format", "json"))
    assert (data["trial"], data["pruned"], data["speedup"], data["value"]) == (
        pruned, True, None, None)
    assert data["confirmed_speedup"][0] == pytest.approx(math.exp(0.2))
