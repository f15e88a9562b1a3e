"""Bad input: one line on stderr, a non-zero exit, no traceback, nothing launched."""
import pytest


def assert_one_line_error(proc, text):
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("autotune: error:")
    assert text in lines[0]
    assert "Traceback" not in proc.stderr


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
    (["status", "--storage", "postgresql://u:secret@127.0.0.1:1/db"], "cannot open storage"),
    (["status"], "no study"),
    (["export", "--format", "yaml"], "'yaml' is not"),
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
