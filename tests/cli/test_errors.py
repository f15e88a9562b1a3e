"""Bad input: one line on stderr, a non-zero exit, no traceback, nothing launched."""
import pytest

from tests.cli import assert_one_line_error


@pytest.mark.parametrize("args, text", [
    (["start", "--collective", "allsum", "--foreground"], "'allsum' is not one of"),
    (["start", "--collective", "allreduce", "--nodes", "0", "--foreground"], "--nodes"),
    (["start", "--collective", "allreduce", "--nodes", "-3", "--foreground"], "--nodes"),
    (["start", "--collective", "allreduce", "--nodes", "2", "--foreground"], "only 1 host"),
    (["start", "--collective", "allreduce", "--ppn", "4096", "--foreground"], "exceeds the"),
    (["start", "--collective", "allreduce", "--weights", "/nonexistent/w.yaml", "--foreground"],
     "cannot read weights file"),
    (["start", "--collective", "allreduce", "--sizes", "64k:8", "--foreground"], "minimum is larger"),
    (["start", "--collective", "allreduce", "--repetitions", "2", "--foreground"], "--repetitions"),
    (["start", "--collective", "allreduce", "--space", "nope", "--foreground"], "unknown search space"),
    (["start", "--collective", "allreduce", "--foreground", "--storage",
      "sqlite:////nonexistent/dir/x.db"], "cannot open storage"),
    (["start", "--collective", "allreduce", "--foreground", "--storage", "nosuchdb://x"],
     "cannot open storage"),
    (["start", "--collective", "allreduce", "--benchmark", "hpl", "--foreground"],
     "'hpl' is not one of"),
    (["start", "--collective", "allreduce", "--benchmark", "imb", "--imb-mem", "0",
      "--foreground"], "--imb-mem"),
    (["start", "--collective", "allreduce", "--benchmark", "imb", "--imb-mem", "nan",
      "--foreground"], "--imb-mem"),
    (["start", "--collective", "allreduce", "--numactl", "--foreground"],
     "options of --benchmark imb"),
    (["start", "--collective", "allreduce", "--benchmark", "imb", "--imb-dir", "/nonexistent",
      "--foreground"], "IMB-MPI1"),
    (["start", "--collective", "allreduce", "--launcher-mca", "novalue", "--foreground"],
     "expected NAME=VALUE"),
    (["start", "--collective", "allreduce", "--time-budget", "soon", "--foreground"],
     "not a duration"),
    (["status", "--storage", "postgresql://u:secret@127.0.0.1:1/db"], "cannot open storage"),
    (["status"], "no study"),
    (["export", "--format", "yaml"], "'yaml' is not"),
    (["spaces", "show", "nope"], "unknown search space"),
    (["spaces", "list", "--format", "yaml"], "'yaml' is not"),
])
def test_bad_input(autotune_cli, args, text):
    proc = autotune_cli(*args, timeout=120)
    assert_one_line_error(proc, text)
    assert "secret" not in proc.stderr  # passwords in URLs are never echoed


def test_unreadable_weights_file(autotune_cli, tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("8: 1\n")
    # a path through a regular file cannot be read, even by root (chmod 0 would not stop root)
    proc = autotune_cli("start", "--collective", "allreduce", "--weights", str(path / "x"),
                        "--foreground")
    assert_one_line_error(proc, "cannot read weights file")


def test_every_start_option_is_a_start_options_field():
    """`start` hands its options to StartOptions by name: a new option needs a field there."""
    from dataclasses import fields

    from autotune.cli import cli
    from autotune.session import StartOptions

    names = {p.name for p in cli.commands["start"].params} - {"trials", "trials_total", "foreground"}
    assert names <= {f.name for f in fields(StartOptions)}
    assert {"benchmark", "imb_dir", "imb_mem_gb", "imb_off_cache", "numactl"} <= names


def test_export_offers_every_exporter(autotune_cli):
    from autotune.export import EXPORTERS

    text = autotune_cli("export", "--help", check=True).stdout
    assert all(name in text for name in EXPORTERS)


@pytest.mark.parametrize("command", ["status", "stop", "logs", "report", "export"])
def test_campaign_subcommands_are_not_taken_for_an_application(autotune_cli, command):
    """`start`'s program argument (--benchmark app) is not a campaign option: a subcommand
    word must reach its subcommand (it once became the campaign's "program")."""
    proc = autotune_cli("campaign", command)
    assert "missing --collectives" not in proc.stderr, proc.stderr
