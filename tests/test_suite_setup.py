"""The suite itself: run from a clone without the shared IMB builds and fixtures beside it, the
tests that need them stop the run with one line that says what is missing and how to fix it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _collect(path: str, shared: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, AUTOTUNE_TEST_SHARED=str(shared))
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", path],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def test_missing_shared_fixtures_stop_the_run_with_one_line(tmp_path):
    proc = _collect("tests/benchmarks/test_imb.py", tmp_path / "nowhere")
    assert proc.returncode == 4, proc.stdout + proc.stderr  # pytest's usage error
    lines = [line for line in proc.stderr.splitlines() if "AUTOTUNE_TEST_SHARED" in line]
    assert len(lines) == 1 and "test_imb.py need the IMB builds" in lines[0]


def test_other_tests_are_collected_without_the_shared_fixtures(tmp_path):
    proc = _collect("tests/test_units.py", tmp_path / "nowhere")
    assert proc.returncode == 0, proc.stdout + proc.stderr
