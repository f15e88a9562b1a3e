"""`autotune export` of the rule formats as a user runs it, and mca-params read back by Open MPI's
own parameter reader (ompi_info with OMPI_MCA_mca_param_files)."""

from __future__ import annotations

import json
import math
import os
import subprocess

import pytest

from tests.cli import assert_one_line_error
from tests.export.test_ompi_rules import ClassicReader, lookup
from tests.storage import add_trial, controller_attrs, new_study

FORCED = {"coll_tuned_use_dynamic_rules": "1", "coll_tuned_allreduce_algorithm": "5",
          "coll_tuned_allreduce_algorithm_segmentsize": "4096"}


@pytest.fixture
def url(tmp_path):
    study = new_study(tmp_path)
    add_trial(study, "all", attrs=controller_attrs(is_default=True, speedup=1.0, env={}),
              value=0.0)
    attrs = controller_attrs(speedup=1.3)
    attrs["settings"] = {"env": {}, "mca": FORCED, "mpirun_args": []}
    add_trial(study, "self,sm", attrs=attrs, value=-math.log(1.3))
    return f"sqlite:///{tmp_path / 't.db'}"


def test_ompi_rules_to_a_file_names_itself(autotune_cli, url, tmp_path):
    out = tmp_path / "rules" / "allreduce.rules"
    out.parent.mkdir()
    proc = autotune_cli("export", "--format", "ompi-rules", "-o", str(out), "--storage", url,
                        check=True)
    assert proc.stdout == "" and proc.stderr == (
        "autotune: Open MPI reads it with --mca coll_tuned_use_dynamic_rules 1 --mca "
        f"coll_tuned_dynamic_rules_filename {out}\n")
    text = out.read_text()
    assert f"coll_tuned_dynamic_rules_filename {out}" in text
    comms = ClassicReader(text).read()[2]  # the stored study ran Open MPI 4.1.4: classic
    assert lookup(comms, 2, 100) == (0, 5, 0, 4096) and lookup(comms, 4, 100)[1] == 0
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp")]
    relative = autotune_cli("export", "--format", "ompi-rules", "-o", "r.rules", "--storage", url,
                            check=True)
    assert str(tmp_path / "r.rules") in relative.stderr  # cwd is tmp_path: made absolute


def test_rules_format_override_and_misuse(autotune_cli, url, tmp_path):
    proc = autotune_cli("export", "--format", "ompi-rules", "--rules-format", "json",
                        "--storage", url, check=True)
    rules = json.loads(proc.stdout)["collectives"]["allreduce"][0]["rules"]
    assert rules == [{"msg_size_min": 0, "msg_size_max": "inf", "alg": 5, "seg_size": 4096}]
    v2 = autotune_cli("export", "--format", "ompi-rules", "--rules-format", "v2", "--storage", url,
                      check=True).stdout
    assert v2.startswith("rule-file-version-2\n")
    assert_one_line_error(autotune_cli("export", "--rules-format", "json", "--storage", url),
                          "--rules-format applies to --format ompi-rules only")
    assert_one_line_error(autotune_cli("export", "--format", "ompi-rules", "--mpich-base", "x",
                                       "--storage", url),
                          "--mpich-base applies to --format mpich-json only")
    assert_one_line_error(autotune_cli("export", "--format", "ucc-tune", "--storage", url),
                          "does not use UCC (coll_ucc_enable is not set)")
    assert_one_line_error(autotune_cli("export", "--format", "mpich-json", "--storage", url),
                          "mpich-json is an MPICH format")


def test_rule_files_are_never_written_through_a_link_or_into_a_directory(autotune_cli, url,
                                                                          tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    link = tmp_path / "link.rules"
    link.symlink_to(target)
    proc = autotune_cli("export", "--format", "ompi-rules", "-o", str(link), "--storage", url)
    assert_one_line_error(proc, "is a symlink; not followed")
    assert target.read_text() == "keep me\n"
    (tmp_path / "dir.rules").mkdir()
    proc = autotune_cli("export", "--format", "ompi-rules", "-o", str(tmp_path / "dir.rules"),
                        "--storage", url)
    assert_one_line_error(proc, "is a directory")


@pytest.mark.mpi
def test_mca_params_read_back_by_open_mpi(autotune_cli, url, tmp_path, mpirun):
    out = tmp_path / "mca-params.conf"
    autotune_cli("export", "--format", "mca-params", "-o", str(out), "--storage", url, check=True)
    lines = out.read_text().splitlines()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_")}
    proc = subprocess.run(["ompi_info", "--param", "coll", "tuned", "--level", "9", "--parsable"],
                          capture_output=True, text=True, timeout=60, check=True,
                          env={**env, "OMPI_MCA_mca_param_files": str(out)})
    seen = {}
    for line in proc.stdout.splitlines():
        parts = line.split(":")
        if parts[:4] == ["mca", "coll", "tuned", "param"] and parts[5] in ("value", "source"):
            seen.setdefault(parts[4], {})[parts[5]] = ":".join(parts[6:])
    for name, value in FORCED.items():
        number = lines.index(f"{name} = {value}") + 1
        assert seen[name]["source"] == f"file ({out}:{number})", seen[name]
    assert seen["coll_tuned_use_dynamic_rules"]["value"] == "true"
    assert seen["coll_tuned_allreduce_algorithm"]["value"] == "segmented_ring"  # id 5
    assert seen["coll_tuned_allreduce_algorithm_segmentsize"]["value"] == "4096"
