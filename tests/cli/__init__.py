"""The command line as a user runs it: the installed `autotune` script in a subprocess (the
`autotune_cli` fixture of tests/conftest.py), standard output a pipe."""


def assert_one_line_error(proc, text=""):
    """Bad input: a non-zero exit, exactly one line on stderr, `autotune: error: ...`."""
    assert proc.returncode != 0, proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("autotune: error:"), proc.stderr
    assert text in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
