import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def autotune_cli(tmp_path):
    """Run the installed `autotune` console script as a user would, in a private AUTOTUNE_HOME."""
    exe = shutil.which("autotune", path=str(Path(sys.executable).parent)) or "autotune"
    env = dict(os.environ, AUTOTUNE_HOME=str(tmp_path / "home"), COLUMNS="200")
    env.pop("AUTOTUNE_STORAGE", None)

    def run(*args, timeout=900, check=False, extra_env=None):
        proc = subprocess.run([exe, *args], capture_output=True, text=True,
                              env={**env, **(extra_env or {})},
                              timeout=timeout, stdin=subprocess.DEVNULL, cwd=tmp_path)
        if check and proc.returncode != 0:
            raise AssertionError(f"autotune {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    return run


@pytest.fixture(scope="session")
def mpirun():
    path = shutil.which("mpirun")
    if not path:
        pytest.fail("mpirun not found: the test command installs Open MPI (see README)")
    return path
