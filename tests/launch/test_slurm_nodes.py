"""A real Slurm of two nodes: one slurmd per host of the multi-host bed (each in its network
namespace, under its own host name), started by launchers/private-slurm.sh. A study inside a
two-node allocation runs each benchmark across both nodes, launched by mpirun (Open MPI's Slurm
support starts its daemons with srun) and by srun itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from tests import multihost
from tests.slurmbed import SlurmMissing, bed_nodes, ours, private_cluster, steps_launched

pytestmark = [pytest.mark.mpi, pytest.mark.slurm, pytest.mark.multihost]
STUDY = "allreduce-2n1p-openmpi-ucx+openmpi-tuned"


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    try:
        bed = multihost.create(tmp_path_factory.mktemp("bed"))
    except RuntimeError as exc:
        pytest.fail(f"multi-host test bed unavailable here: {exc}")
    where = tmp_path_factory.mktemp("slurm") / "cluster"
    try:
        with private_cluster(where, bed_nodes(bed)) as env:
            yield bed, env, where
    except SlurmMissing as exc:
        pytest.fail(str(exc))
    finally:
        multihost.destroy()
    assert not where.exists()
    assert not [p for p in ours("slurmctld|slurmd|munged|slurmstepd") if str(where) in p]


def test_the_cluster_has_two_nodes_each_its_own_host(two_nodes):
    bed, env, _ = two_nodes
    out = subprocess.run(["srun", "-N2", "-n2", "sh", "-c", "echo $(hostname) $SLURM_NODEID"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split("\n")[:2]) == ["n1 0", "n2 1"]


@pytest.mark.parametrize("method", ["mpirun", "srun"])
def test_a_study_in_a_two_node_allocation(two_nodes, tmp_path, method):
    bed, env, where = two_nodes
    subnet = bed.site_mca[1].split("=", 1)[1]  # the bed's subnet, for Open MPI's TCP traffic
    home = tmp_path / "home"
    steps_before = steps_launched(where)
    exe = str(Path(sys.executable).parent / "autotune")
    proc = subprocess.run(
        ["salloc", "--nodes=2", "--ntasks=2", "--time=10", exe, "start", "--collective",
         "allreduce", "--nodes", "2", "--ppn", "1", "--launcher", "slurm", "--launch-with",
         method, "--launcher-mca", f"oob_tcp_if_include={subnet}", "--launcher-mca",
         f"btl_tcp_if_include={subnet}", "--trials", "3", "--sizes", "8:64", "--repetitions",
         "3", "--stages", "1", "--time-per-size", "0.003", "--confirm", "0", "--no-verify",
         "--no-check-live", "--no-per-size", "--no-prune", "--seed", "1", "--foreground"],
        capture_output=True, text=True, timeout=600, env=dict(env, AUTOTUNE_HOME=str(home)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"hosts n1, n2, {method}" in proc.stderr and "nodes probed on n1" in proc.stderr
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{home / 'autotune.db'}")
    measured = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(measured) == 3, [(t.number, t.state, t.user_attrs.get("fail_reason"))
                                for t in study.trials]
    for trial in measured:
        for launch in trial.user_attrs["launches"]:
            assert sorted(launch["hosts"]) == ["n1", "n2"]  # as the ranks report them
    steps = steps_launched(where) - steps_before
    launches = sum(len(t.user_attrs["launches"]) for t in measured)
    print(f"\n{method}: {launches} launches across n1 and n2, {steps} job steps on the nodes")
    assert steps >= launches  # mpirun's daemons and srun's ranks alike are job steps
