"""`--launch-with srun` for real: a study inside an allocation of the private Slurm cluster whose
every launch is a job step started by srun (--mpi=pmix, the plugin Debian's Slurm and Open MPI
share), not by mpirun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from tests.slurmbed import steps_launched

pytestmark = [pytest.mark.mpi, pytest.mark.slurm]


def test_a_study_launches_every_benchmark_as_a_job_step(cluster, tmp_path):
    home = tmp_path / "home"
    exe = str(Path(sys.executable).parent / "autotune")
    proc = subprocess.run(
        ["salloc", "--nodes=1", "--ntasks=2", "--time=10", exe, "start", "--collective",
         "allreduce", "--ppn", "2", "--launcher", "slurm", "--launch-with", "srun", "--trials",
         "3", "--sizes", "8:4k", "--repetitions", "3", "--stages", "1", "--time-per-size",
         "0.01", "--no-per-size", "--confirm", "0", "--no-verify", "--foreground"],
        capture_output=True, text=True, timeout=600, env=dict(cluster, AUTOTUNE_HOME=str(home)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "launcher: slurm" in proc.stdout + proc.stderr
    storage = f"sqlite:///{home / 'autotune.db'}"
    study = optuna.load_study(study_name=optuna.get_all_study_names(storage)[0], storage=storage)
    finished = [t for t in study.trials if t.state.is_finished()
                and t.state != optuna.trial.TrialState.FAIL]
    assert len(finished) == 3, [(t.number, t.state, t.user_attrs.get("fail_reason"))
                                for t in study.trials]
    launches = sum(len(next(iter(t.user_attrs["raw_us"].values()))) for t in finished)
    # each launch a job step (the probe and the UCX liveness check add theirs)
    steps = steps_launched(Path(cluster["SLURM_CONF"]).parent)
    print(f"\n{launches} benchmark launches of {len(finished)} trials, {steps} job steps")
    assert steps >= launches > 0, (steps, launches)


def test_mpich_in_an_allocation_starts_its_ranks_through_slurm(cluster, tmp_path):
    """MPICH's mpiexec inside a job needs no option for Slurm: Hydra sees the allocation and starts
    its proxies with srun itself, so each launch is a job step too (Hydra's own convention)."""
    home = tmp_path / "home"
    exe = str(Path(sys.executable).parent / "autotune")
    proc = subprocess.run(
        ["salloc", "--nodes=1", "--ntasks=2", "--time=10", exe, "start", "--collective",
         "allreduce", "--ppn", "2", "--space", "mpich", "--launcher", "slurm", "--trials", "3",
         "--sizes", "8:4k", "--repetitions", "3", "--stages", "1", "--time-per-size", "0.01",
         "--no-per-size", "--confirm", "0", "--no-verify", "--foreground"],
        capture_output=True, text=True, timeout=600, env=dict(cluster, AUTOTUNE_HOME=str(home)))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "nodes probed on" in proc.stderr and ": MPICH 4" in proc.stderr
    storage = f"sqlite:///{home / 'autotune.db'}"
    study = optuna.load_study(study_name="allreduce-1n2p-mpich", storage=storage)
    finished = [t for t in study.trials if t.state.is_finished()
                and t.state != optuna.trial.TrialState.FAIL]
    assert len(finished) == 3, [(t.number, t.state, t.user_attrs.get("fail_reason"))
                                for t in study.trials]
    argvs = [launch["argv"] for t in finished for launch in t.user_attrs["launches"]]
    assert all(a[0].endswith("mpiexec.mpich") and a[a.index("-hosts") + 1] for a in argvs)
    launches = sum(len(next(iter(t.user_attrs["raw_us"].values()))) for t in finished)
    steps = steps_launched(Path(cluster["SLURM_CONF"]).parent)
    print(f"\nMPICH: {launches} benchmark launches of {len(finished)} trials, {steps} job steps")
    assert steps >= launches > 0, (steps, launches)
