"""Shared helpers of the test suite."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

# Prebuilt tools and recorded outputs the suite uses beside the repository: IMB-MPI1/IMB-NBC built
# for this machine's Open MPI (tools/imb) and MPICH (tools/imb-mpich), and IMB outputs
# (fixtures/imb). AUTOTUNE_TEST_SHARED points elsewhere; the default is ../shared of the checkout.
SHARED = Path(os.environ.get("AUTOTUNE_TEST_SHARED")
              or Path(__file__).resolve().parent.parent.parent / "shared")


def cli_runner(home: Path, cwd: Path, storage: str | None = None):
    """Run the installed `autotune` console script as a user would, in AUTOTUNE_HOME=home (and
    with `--storage storage` appended when given)."""
    exe = shutil.which("autotune", path=str(Path(sys.executable).parent)) or "autotune"
    env = dict(os.environ, AUTOTUNE_HOME=str(home), COLUMNS="200")
    env.pop("AUTOTUNE_STORAGE", None)

    def run(*args, timeout=900, check=False, extra_env=None):
        argv = [exe, *args] + (["--storage", storage] if storage else [])
        proc = subprocess.run(argv, capture_output=True, text=True,
                              env={**env, **(extra_env or {})},
                              timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd)
        if check and proc.returncode != 0:
            raise AssertionError(f"autotune {' '.join(args)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout}\n{proc.stderr}")
        return proc

    return run
