"""The package keeps its layers: import-linter checks the contracts in pyproject.toml (layers top
to bottom with no upward import, no cycle among the modules of any package, no import of another
package's private module). A new module must be given its place there (the layers are
exhaustive)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def lint(*args: str) -> subprocess.CompletedProcess:
    tool = Path(sys.executable).parent / "lint-imports"
    return subprocess.run([str(tool), "--no-cache", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_the_import_contracts_are_kept():
    proc = lint()
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Contracts: 3 kept, 0 broken." in proc.stdout


def test_an_upward_import_breaks_the_layers(tmp_path):
    """The check can fail: the same contracts on a copy of the package with one import that
    points up (storage importing the session) are reported broken."""
    copy = tmp_path / "autotune"
    subprocess.run(["cp", "-r", str(ROOT / "autotune"), str(copy)], check=True)
    (copy / "storage" / "_upward.py").write_text("from ..session import prepare_session\n")
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    tool = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(tool), "--no-cache"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(tmp_path),
                                                       "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0
    assert "autotune.storage is not allowed to import autotune.session" in proc.stdout, \
        proc.stdout[-3000:] + proc.stderr[-2000:]
