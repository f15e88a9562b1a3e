"""Shared by the export tests that apply an exported file for real."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def build_preload(source: Path, folder: Path, hint: str) -> Path:
    """Compile an LD_PRELOAD probe (a C file next to the tests) into `folder`; the test fails
    with `hint` when no C compiler is installed."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.fail(f"no C compiler (cc/gcc) to build the LD_PRELOAD probe: {hint}")
    lib = folder / f"{source.stem}.so"
    proc = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(source), "-ldl"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"building the probe failed:\n{proc.stderr}"
    return lib
