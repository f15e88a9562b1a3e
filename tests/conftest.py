import shutil
import subprocess
from pathlib import Path

import pytest

from tests import SHARED, cli_runner

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def autotune_cli(tmp_path):
    """Run the installed `autotune` console script as a user would, in a private AUTOTUNE_HOME."""
    return cli_runner(tmp_path / "home", tmp_path)


@pytest.fixture(scope="session")
def mpirun():
    path = shutil.which("mpirun")
    if not path:
        pytest.fail("mpirun not found: the test command installs Open MPI (see README)")
    return path


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs to fill (disk-full cases); needs root to mount, skipped with the reason."""
    mount = tmp_path / "disk"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {proc.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture(autouse=True)
def _no_mpi_init_in_pytest():
    """No test may import mpi4py.MPI into the pytest process: that runs MPI_Init as a singleton,
    whose orted outlives the test and looks like a leftover to the daemon tests."""
    yield
    import sys

    assert "mpi4py.MPI" not in sys.modules, "this test imported mpi4py.MPI into pytest"


def pytest_collection_modifyitems(config, items):
    """Tests that read the shared IMB builds and fixtures stop the run with one line when they
    are missing (a clone not beside ../shared), instead of failing one by one."""
    if (SHARED / "tools" / "imb").is_dir() and (SHARED / "fixtures" / "imb").is_dir():
        return
    needing = sorted({item.fspath.basename for item in items
                      if getattr(getattr(item, "module", None), "SHARED", None) is SHARED})
    if needing:
        raise pytest.UsageError(
            f"{', '.join(needing)} need the IMB builds and fixtures in {SHARED} (tools/imb, "
            "fixtures/imb): clone beside that directory or set AUTOTUNE_TEST_SHARED")
