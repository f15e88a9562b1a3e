#!/usr/bin/env python3
"""Benchmark (not a test): dispatch overhead per trial for the local, hostfile, ray and slurm
launchers.

For each launcher a small real study runs through the CLI (`autotune start --foreground`), and
each trial's stored timings are read back:
  * acquire: reserving the trial's nodes (a free host group; a Ray placement group),
  * dispatch: from asking the sampler for the trial to its first benchmark running (after
    MPI_Init; usually the paired default launch), i.e. sampler + storage + launcher + mpirun start.
hostfile and ray run on the namespace hosts of the test bed (needs root); ray on a 5-node Ray
cluster (head + 4 MPI nodes) across them. Shapes: local 1 node x 2 ranks; others 2 nodes x 1 rank.
slurm runs in an allocation of a private one-node Slurm cluster (launchers/private-slurm.sh, needs
root and slurm-wlm), 1 node x 2 ranks, once launching with mpirun and once with srun (a job step
per launch, --mpi=pmix): compare those two rows with each other and with local.

    .venv/bin/python scripts/bench_dispatch.py --trials 8
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402

from tests import multihost, raybed, slurmbed  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)


def run_study(home: Path, trials: int, shape: list[str], extra: list[str], *,
              prefix: tuple[str, ...] = (), env: dict[str, str] | None = None
              ) -> list[optuna.trial.FrozenTrial]:
    exe = shutil.which("autotune", path=str(Path(sys.executable).parent)) or "autotune"
    args = [*prefix, exe, "start", "--collective", "allreduce", *shape, "--trials", str(trials),
            "--sizes", "8:64", "--repetitions", "3", "--stages", "1", "--time-per-size", "0.003",
            "--confirm", "0", "--no-check-live", "--no-prune", "--seed", "1", *extra, "--foreground"]
    env = dict(env or os.environ, AUTOTUNE_HOME=str(home))
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"study failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    storage = f"sqlite:///{home / 'autotune.db'}"
    name = optuna.get_all_study_names(storage)[0]
    return [t for t in optuna.load_study(study_name=name, storage=storage).trials
            if "dispatch_seconds" in t.user_attrs]


def line(name: str, trials: list[optuna.trial.FrozenTrial]) -> str:
    dispatch = [t.user_attrs["dispatch_seconds"] for t in trials]
    acquire = [t.user_attrs.get("acquire_seconds", 0.0) for t in trials]
    total = [a + d for a, d in zip(acquire, dispatch)]
    return (f"{name:<12} {len(trials):>6} {statistics.median(acquire):>12.3f} "
            f"{statistics.median(dispatch):>13.3f} {min(dispatch):>8.3f} {max(dispatch):>8.3f} "
            f"{statistics.median(total):>12.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--launchers", default="local,hostfile,ray,slurm")
    args = parser.parse_args()
    wanted = args.launchers.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="autotune-dispatch-"))
    rows = []
    if "local" in wanted:
        rows.append(line("local", run_study(tmp / "local", args.trials,
                                            ["--nodes", "1", "--ppn", "2"], ["--launcher", "local"])))
    two = ["--nodes", "2", "--ppn", "1"]
    if "hostfile" in wanted:
        bed = multihost.create(tmp, 2)
        try:
            hostfile = tmp / "hosts"
            hostfile.write_text("".join(f"{h} slots=1\n" for h in bed.hosts))
            rows.append(line("hostfile", run_study(tmp / "hostfile", args.trials, two,
                                                   ["--hostfile", str(hostfile), *bed.launcher_args()])))
        finally:
            multihost.destroy()
    if "ray" in wanted:
        cluster = raybed.create(tmp / "raybed", workers=4)
        try:
            rows.append(line("ray", run_study(tmp / "ray", args.trials, two,
                                              ["--launcher", "ray", "--ray-address", cluster.address,
                                               *cluster.bed.launcher_args()])))
        finally:
            raybed.destroy(cluster)
    if "slurm" in wanted:
        salloc = ("salloc", "--nodes=1", "--ntasks=2", "--time=30")
        one = ["--nodes", "1", "--ppn", "2", "--launcher", "slurm"]
        with slurmbed.private_cluster(tmp / "slurm") as env:
            for method in ("mpirun", "srun"):
                rows.append(line(f"slurm-{method}", run_study(
                    tmp / f"slurm-{method}", args.trials, one, ["--launch-with", method],
                    prefix=salloc, env=env)))
    print("seconds per trial (median unless marked): acquire = reserve the nodes; dispatch = ask "
          "-> first benchmark running")
    print(f"{'launcher':<12} {'trials':>6} {'acquire':>12} {'dispatch':>13} {'min':>8} {'max':>8} "
          f"{'acq+disp':>12}")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
