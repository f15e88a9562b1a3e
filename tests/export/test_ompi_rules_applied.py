"""The exported Open MPI rules file, applied for real: one `mpirun -np 2` with the file and the MCA
settings the exporter names, and Open MPI runs the exported algorithm (and segment size) for a size
in each band, on both sides of a band boundary.

Open MPI 4.1 (Debian, non-debug) prints nothing about rules files or the algorithm it chose: the
rule reader and the decision functions report through OPAL_OUTPUT, which only debug builds compile
(`--mca coll_base_verbose 100 --mca coll_tuned_verbose 100` show component selection only). So the
proof is the algorithm function itself: coll_tuned calls the coll/base algorithms through the PLT
(`nm -D mca_coll_tuned.so` lists them undefined), and an LD_PRELOAD probe (allreduce_probe.c,
compiled here with the system C compiler) logs each entry with its count and segment size. A
second launch without the rules settings is the control: Open MPI's fixed decision picks another
algorithm (or segment size) at every probed size, so the first launch cannot pass by chance.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.export import BestConfig, ExportOptions, export_text, pick_format
from autotune.export._ompi_rules import reader_settings
from autotune.files import write_output_atomically
from autotune.launch._local import mpirun_base_args
from autotune.rules import AlgorithmChoice, RuleSet
from autotune.storage import StudyConfig
from tests.export import build_preload
from tests.storage import CONFIG

pytestmark = pytest.mark.mpi

HERE = Path(__file__).resolve().parent
# coll/base functions of ompi_coll_tuned_allreduce_intra_do_this (4.1), by algorithm id
ALLREDUCE_IDS = {"ompi_coll_base_allreduce_intra_basic_linear": 1,
                 "ompi_coll_base_allreduce_intra_nonoverlapping": 2,
                 "ompi_coll_base_allreduce_intra_recursivedoubling": 3,
                 "ompi_coll_base_allreduce_intra_ring": 4,
                 "ompi_coll_base_allreduce_intra_ring_segmented": 5,
                 "ompi_coll_base_allreduce_intra_redscat_allgather": 6}
RULES = RuleSet.from_starts("openmpi", "allreduce", 2, [
    (0, AlgorithmChoice(1)),  # basic linear (the fixed decision takes recursive doubling)
    (4096, AlgorithmChoice(5, segsize=8192)),  # segmented ring, 8 KiB segments (fixed: 0)
    (262144, AlgorithmChoice(3)),  # recursive doubling (fixed: rabenseifner at 1 MiB)
])
SIZES = (8, 4092, 4096, 65536, 1048576)  # bytes of MPI_FLOAT: 4092/4096 straddle a boundary
PROGRAM = """
import os, sys
import numpy as np
from mpi4py import MPI

log = os.environ["AUTOTUNE_PROBE_LOG"] + "." + str(os.getpid())
for size in map(int, sys.argv[1:]):
    send = np.ones(size // 4, dtype=np.float32)
    recv = np.empty_like(send)
    MPI.COMM_WORLD.Barrier()
    with open(log, "a") as out:
        out.write(f"size {size}\\n")
    MPI.COMM_WORLD.Allreduce(send, recv)
    assert recv[0] == MPI.COMM_WORLD.size
"""


def _mpi_version(mpirun: str) -> str:
    out = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30)
    line = next((ln for ln in out.stdout.splitlines() if "Open MPI" in ln), "")
    if not line:
        pytest.fail(f"mpirun --version names no Open MPI: {out.stdout!r}")
    return line.replace("mpirun (Open MPI)", "Open MPI").strip()


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    return build_preload(HERE / "allreduce_probe.c", tmp_path_factory.mktemp("probe"),
                         "the test command installs gcc with Open MPI (apt-get install gcc "
                         "libopenmpi-dev)")


def _best(mpi: str) -> BestConfig:
    return BestConfig(study="rules", trial=1, value=-0.2, speedup=1.22, is_default=False,
                      params={}, env={}, mca={}, mpirun_args=(), host={"host": "here", "mpi": mpi},
                      context={}, config=StudyConfig.from_dict(CONFIG), n_complete=5, rules=RULES)


def _launch(mpirun: str, probe: Path, workdir: Path, tag: str,
            mca: dict[str, str]) -> dict[int, tuple[int, int]]:
    """{size: (algorithm id, segment size)} of the first algorithm entered after each size's
    marker, the same on both ranks."""
    program = workdir / "allreduce_sizes.py"
    program.write_text(PROGRAM)
    log = workdir / f"probe-{tag}"
    argv = [mpirun, *mpirun_base_args(), "-np", "2", "--oversubscribe", "--bind-to", "none",
            "-x", f"LD_PRELOAD={probe}", "-x", f"AUTOTUNE_PROBE_LOG={log}"]
    for name, value in mca.items():
        argv += ["--mca", name, value]
    argv += [sys.executable, str(program), *map(str, SIZES)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_")}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"mpirun failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    logs = sorted(workdir.glob(f"probe-{tag}.*"))
    assert len(logs) == 2, f"expected one probe log per rank, found {logs}"
    chosen: list[dict[int, tuple[int, int]]] = []
    for path in logs:
        per_size: dict[int, tuple[int, int]] = {}
        size = None
        for line in path.read_text().splitlines():
            if line.startswith("size "):
                size = int(line.split()[1])
            elif line.startswith("call ") and size is not None:
                _, name, count, segsize = line.split()
                assert int(count.split("=")[1]) == size // 4, line
                per_size[size] = (ALLREDUCE_IDS[name], int(segsize.split("=")[1]))
                size = None  # nested calls of the same collective are not choices
        assert sorted(per_size) == sorted(SIZES), f"{path.name}: {path.read_text()}"
        chosen.append(per_size)
    assert chosen[0] == chosen[1], f"the ranks chose differently: {chosen}"
    return chosen[0]


@pytest.fixture(scope="module")
def fixed(mpirun, probe, tmp_path_factory) -> dict[int, tuple[int, int]]:
    """The control: what Open MPI's fixed decision runs at each size, without any rules."""
    return _launch(mpirun, probe, tmp_path_factory.mktemp("fixed"), "fixed", {})


def _expected(size: int) -> tuple[int, int]:
    choice = RULES.for_size(size)
    assert isinstance(choice.algorithm, int)
    return choice.algorithm, choice.segsize


def test_open_mpi_runs_the_exported_algorithm_of_each_band(mpirun, probe, fixed, tmp_path):
    best = _best(_mpi_version(mpirun))
    fmt, why = pick_format(best.host["mpi"])
    path = tmp_path / "allreduce.rules"
    text = export_text("ompi-rules", best, ExportOptions(path=str(path)))
    write_output_atomically(path, text, "export -o")  # as `autotune export -o` writes it
    assert fmt in ("classic", "v2") and text.count("\n#") > 5, why  # header comments, read past
    settings = reader_settings(str(path))
    assert f"--mca coll_tuned_dynamic_rules_filename {path}" in text

    applied = _launch(mpirun, probe, tmp_path, "rules", settings)
    assert applied == {size: _expected(size) for size in SIZES}
    assert all(fixed[size] != _expected(size) for size in SIZES), fixed


def test_a_file_open_mpi_cannot_read_changes_nothing(mpirun, probe, fixed, tmp_path):
    """The reader refuses a file whose first rule is not for size 0 and keeps the fixed decision:
    the launch above is the file at work, not the settings alone."""
    best = _best(_mpi_version(mpirun))
    path = tmp_path / "broken.rules"
    text = export_text("ompi-rules", best, ExportOptions(path=str(path)))
    broken = text.replace("\n0 1 0 0", "\n8 1 0 0", 1)  # the measured bands' first rule
    assert broken != text
    path.write_text(broken)
    assert _launch(mpirun, probe, tmp_path, "broken", reader_settings(str(path))) == fixed


def test_the_rules_apply_only_at_the_measured_communicator_size(mpirun, probe, fixed, tmp_path):
    """Rules measured at 3 ranks leave a 2-rank communicator to the fixed decision."""
    best = dataclasses.replace(_best(_mpi_version(mpirun)),
                               rules=dataclasses.replace(RULES, comm_size=3))
    path = tmp_path / "three.rules"
    path.write_text(export_text("ompi-rules", best, ExportOptions(path=str(path))))
    assert _launch(mpirun, probe, tmp_path, "three", reader_settings(str(path))) == fixed


def test_a_campaign_file_applies_the_rules_of_the_communicator_size_that_runs(
        mpirun, probe, fixed, tmp_path):
    """`autotune campaign export` writes one file for every collective and communicator size:
    a 2-rank launch takes the 2-rank bands, not those of 1 or 4 ranks or of another collective."""
    from autotune.export._ompi_rules import ompi_rules_campaign

    mpi = _mpi_version(mpirun)
    others = [("allreduce-1n1p", RuleSet.single("openmpi", "allreduce", 1, AlgorithmChoice(4))),
              ("allreduce-2n2p", RuleSet.single("openmpi", "allreduce", 4, AlgorithmChoice(2))),
              ("allgather-1n2p", RuleSet.single("openmpi", "allgather", 2, AlgorithmChoice(2)))]
    path = tmp_path / "campaign.rules"
    path.write_text(ompi_rules_campaign([others[0], ("allreduce-1n2p", RULES), *others[1:]],
                                        pick_format(mpi)[0], mpi, ("# campaign",)))
    applied = _launch(mpirun, probe, tmp_path, "campaign", reader_settings(str(path)))
    assert applied == {size: _expected(size) for size in SIZES}
