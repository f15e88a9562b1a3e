"""The exported MPICH selection file, loaded by a real MPICH run: `mpiexec.mpich -n 2` with the
file and the settings the exporter names, and MPICH runs the exported allreduce algorithm for a
size in each band, on both sides of the band boundary.

MPICH's release build logs nothing about its selection, and its algorithm functions are internal
(stripped, called directly). What shows is their messages: MPICH ch4:ucx sends every message
through libucp's ucp_tag_send_nbx, a call between libraries that an LD_PRELOAD probe
(ucp_send_probe.c, compiled here) logs with its byte count. Between two ranks recursive doubling
sends the whole buffer once, reduce-scatter + allgather sends two halves, so the sizes name the
algorithm. MPIR_CVAR_NOLOCAL=1 routes the two ranks of this host through UCX for the observation
(MPICH's own shared memory would bypass it). The control is the file with the bands' algorithms
swapped: each size then shows the other algorithm, so neither launch can pass by chance.

The exported file covers only the tuned collective; MPICH reads it *instead of* its own selection
and aborts on a collective without a branch, so it is merged (`--mpich-base`) into a base with
the barrier the program uses (tests/data/mpich-base-barrier.json, the role MPICH's generic.json
plays on a site)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.export import BestConfig, ExportOptions, export_text
from autotune.export._mpich_json import reader_settings
from autotune.launch import mpi4py_for_mpich
from autotune.rules import AlgorithmChoice, RuleSet
from autotune.storage import StudyConfig
from tests.export import build_preload
from tests.storage import CONFIG

pytestmark = pytest.mark.mpi

HERE = Path(__file__).resolve().parent
BASE = HERE.parent / "data" / "mpich-base-barrier.json"
SIZES = (512, 1016, 1024, 65536)  # bytes of float64: 1016/1024 straddle the boundary
PROGRAM = """
import sys
import numpy as np
from mpi4py import MPI

for size in map(int, sys.argv[1:]):
    send = np.ones(size // 8)
    recv = np.empty_like(send)
    MPI.COMM_WORLD.Barrier()
    if MPI.COMM_WORLD.rank == 0:
        print(f"size {size}", file=sys.stderr, flush=True)
    MPI.COMM_WORLD.Allreduce(send, recv)
    assert recv[0] == MPI.COMM_WORLD.size
    MPI.COMM_WORLD.Barrier()
"""


def rules(small: str, large: str) -> RuleSet:
    return RuleSet.from_starts("mpich", "allreduce", 2, [(0, AlgorithmChoice(small)),
                                                        (1024, AlgorithmChoice(large))])


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    if not shutil.which("mpiexec.mpich") or mpi4py_for_mpich() is None:
        pytest.fail("MPICH and the mpi4py built against it are missing: bash scripts/install.sh "
                    "--test installs both")
    return build_preload(HERE / "ucp_send_probe.c", tmp_path_factory.mktemp("probe"),
                         "the test command installs gcc")


def exported(tmp_path: Path, ruleset: RuleSet) -> tuple[Path, dict[str, str]]:
    best = BestConfig(study="rules", trial=1, value=-0.2, speedup=1.22, is_default=False,
                      params={}, env={}, mca={}, mpirun_args=(),
                      host={"host": "here", "mpi": "MPICH 4.0.2"}, context={},
                      config=StudyConfig.from_dict(CONFIG), n_complete=5, rules=ruleset)
    path = tmp_path / "selection.json"
    path.write_text(export_text("mpich-json", best, ExportOptions(mpich_base=str(BASE))))
    return path, reader_settings(str(path), "allreduce")


def sends_per_size(probe: Path, workdir: Path, settings: dict[str, str]) -> dict[int, list[int]]:
    """{size: byte counts of rank 0's non-empty sends in that size's allreduce}."""
    program = workdir / "allreduce_sizes.py"
    program.write_text(PROGRAM)
    argv = ["mpiexec.mpich", "-n", "2"]
    for name, value in {**settings, "MPIR_CVAR_NOLOCAL": "1", "LD_PRELOAD": str(probe)}.items():
        argv += ["-genv", name, value]
    argv += [sys.executable, str(program), *map(str, SIZES)]
    env = dict(os.environ, PYTHONPATH=str(mpi4py_for_mpich()))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"mpiexec.mpich failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    sends: dict[int, list[int]] = {}
    size = None
    for line in proc.stderr.splitlines():
        if line.startswith("size "):
            size = int(line.split()[1])
            sends[size] = []
        elif line.startswith("UCP-SEND ") and size is not None and int(line.split()[1]) > 0:
            sends[size].append(int(line.split()[1]))
    assert sorted(sends) == sorted(SIZES), proc.stderr[-3000:]
    return sends


def algorithm(size: int, sends: list[int]) -> str:
    """Which of the two algorithms sent these messages, between two ranks."""
    if sends == [size]:
        return "recursive_doubling"
    if len(sends) == 2 and sum(sends) == size and min(sends) > 0:  # two halves (127 doubles:
        return "reduce_scatter_allgather"                            # 63 and 64)
    return f"neither: {sends}"


@pytest.mark.parametrize("small, large", [("recursive_doubling", "reduce_scatter_allgather"),
                                          ("reduce_scatter_allgather", "recursive_doubling")])
def test_mpich_runs_the_exported_algorithm_of_each_band(probe, tmp_path, small, large):
    path, settings = exported(tmp_path, rules(small, large))
    assert settings["MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"] == str(path)
    sends = sends_per_size(probe, tmp_path, settings)
    ran = {size: algorithm(size, sends[size]) for size in SIZES}
    assert ran == {size: small if size < 1024 else large for size in SIZES}, sends
