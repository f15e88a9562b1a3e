#!/usr/bin/env python3
"""Diagnostic (not a test): what makes a launch on this machine slow, and does it change which
configuration looks faster?

Launches of the untuned stack and of one other configuration (`--mca`, default plain
`pml=ucx`), alternating in a fresh random order per round, one launch after the other. Each
launch (2 ranks, mpi4py) times, per rank, a CPU-only loop (pure Python arithmetic: no MPI, no
memory traffic; both ranks after a barrier) before and after its allreduce sizes, and each size
once for about `--time-per-size` seconds, a barrier after every call (as IMB and the kernel time
a blocking collective). A rank's CPU index is its loop's time over the fastest tenth of that
rank's loops in the run: 1.0 when its CPU ran at full speed, about 1.5 when a neighbour of the
virtual machine shared the core. A launch is "contended" when either rank's index is at least
`--contended` (1.25).

Printed: per launch (with `--per-launch`) the CPU indexes and each size's time over the
untuned stack's median in uncontended launches; then, per configuration, how many launches were
contended, and the median time per size in uncontended and in contended launches; and the
configuration's speedup over the untuned stack per size, from uncontended launches only and
from contended ones only (medians), so that a state that favours one configuration shows.

    .venv/bin/python scripts/probe_noise.py --launches 40 [--mca pml=ucx] [--per-launch]

Launches use argv lists (no shell), Open MPI's mpirun, 2 ranks on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

SIZES = (8, 1024, 65536, 1048576)
CPU_SECONDS = 0.002  # one timed run of the CPU-only loop
CPU_RUNS = 5  # before the sizes and again after them: a rank's index is their median
UNTUNED = "untuned"


def rank_side(sizes: list[int], time_per_size: float) -> None:
    """One launch, under mpirun: rank 0 prints one JSON line."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD

    def spin(n: int) -> int:
        x = 0
        for i in range(n):
            x += i
        return x

    start = time.perf_counter()
    spin(100_000)
    steps = max(1000, int(CPU_SECONDS / ((time.perf_counter() - start) / 100_000)))

    def cpu_runs() -> list[float]:
        times = []
        for _ in range(CPU_RUNS):  # both ranks at once: neither loop overlaps the other's
            comm.Barrier()  # polling inside MPI, which would slow it on a shared core
            t0 = time.perf_counter()
            spin(steps)
            times.append((time.perf_counter() - t0) / steps * 1e9)  # ns per step
        return times

    cpu = cpu_runs()
    times = {}
    for size in sizes:
        send, recv = np.ones(max(1, size // 4), np.float32), np.empty(max(1, size // 4), np.float32)
        for _ in range(10):
            comm.Allreduce(send, recv)
        comm.Barrier()
        t0 = MPI.Wtime()
        for _ in range(5):
            comm.Allreduce(send, recv)
            comm.Barrier()
        estimate = comm.allreduce((MPI.Wtime() - t0) / 5, op=MPI.MAX)
        iters = max(10, int(time_per_size / max(estimate, 1e-7)))
        total = 0.0
        for _ in range(iters):
            t0 = MPI.Wtime()
            comm.Allreduce(send, recv)
            total += MPI.Wtime() - t0
            comm.Barrier()
        times[size] = comm.reduce(total / iters * 1e6, op=MPI.MAX, root=0)
    cpu += cpu_runs()
    everyone = comm.gather(statistics.median(cpu), root=0)
    if comm.Get_rank() == 0:
        print(json.dumps({"cpu_ns_per_step": everyone, "t_max_us": times}))


def launch(mca: dict[str, str], sizes: tuple[int, ...], time_per_size: float) -> dict:
    argv = ["mpirun", "-np", "2"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    for name, value in mca.items():
        argv += ["--mca", name, value]
    argv += [sys.executable, __file__, "--rank-side", "--sizes", ",".join(map(str, sizes)),
             "--time-per-size", str(time_per_size)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"a launch failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    record = json.loads(lines[-1])
    return {"cpu": record["cpu_ns_per_step"],
            "t": {int(k): v for k, v in record["t_max_us"].items()}}


def mca_of(spec: str) -> dict[str, str]:
    """`pml=ucx` or `pml=ucx,coll_tuned_allreduce_algorithm=3`: pml ucx also gets UCX's own
    transport and device choice, as autotune's spaces set it."""
    mca = dict(item.split("=", 1) for item in spec.split(",") if item)
    if mca.get("pml") == "ucx":
        mca.setdefault("pml_ucx_devices", "any")
        mca.setdefault("pml_ucx_tls", "any")
    if any(k.startswith("coll_tuned_") and k.endswith("_algorithm") for k in mca):
        mca.setdefault("coll_tuned_use_dynamic_rules", "1")
    return mca


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=40, help="rounds: one launch of each")
    parser.add_argument("--mca", default="pml=ucx", help="the other configuration")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--time-per-size", type=float, default=0.02)
    parser.add_argument("--contended", type=float, default=1.25)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-launch", action="store_true")
    parser.add_argument("--rank-side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    if args.rank_side:
        rank_side(list(sizes), args.time_per_size)
        return
    configs = {UNTUNED: {}, args.mca: mca_of(args.mca)}
    rng = random.Random(args.seed)
    runs: list[tuple[str, dict]] = []
    for round_ in range(args.launches):
        order = list(configs)
        rng.shuffle(order)
        for name in order:
            runs.append((name, launch(configs[name], sizes, args.time_per_size)))
        print(f"round {round_ + 1}/{args.launches} done", file=sys.stderr)
    floors = [sorted(run["cpu"][r] for _, run in runs)[max(0, len(runs) // 10 - 1)]
              for r in range(2)]  # the fastest tenth of each rank's loops
    for _, run in runs:
        run["index"] = [run["cpu"][r] / floors[r] for r in range(2)]
        run["contended"] = max(run["index"]) >= args.contended
    reference = {s: median([run["t"][s] for name, run in runs
                            if name == UNTUNED and not run["contended"]]) for s in sizes}
    if args.per_launch:
        print("launch\tconfiguration\tCPU index rank 0\trank 1\t"
              + "\t".join(f"{s} B / untuned clean" for s in sizes))
        for i, (name, run) in enumerate(runs):
            print(f"{i}\t{name}\t{run['index'][0]:.2f}\t{run['index'][1]:.2f}\t"
                  + "\t".join(f"{run['t'][s] / reference[s]:.2f}" for s in sizes))
    print(f"\n{len(runs)} launches; contended: a rank's CPU-only loop >= {args.contended}x its "
          "fastest tenth")
    print("configuration\tlaunches\tcontended\tstate\t" + "\t".join(f"{s} B us" for s in sizes))
    by_state: dict[tuple[str, bool], dict[int, float]] = {}
    for name in configs:
        mine = [run for n, run in runs if n == name]
        hit = sum(run["contended"] for run in mine)
        for state in (False, True):
            chosen = [run for run in mine if run["contended"] == state]
            by_state[(name, state)] = {s: median([run["t"][s] for run in chosen]) for s in sizes}
            print(f"{name}\t{len(mine)}\t{hit}\t{'contended' if state else 'clean'}\t"
                  + "\t".join(f"{by_state[(name, state)][s]:.2f}" for s in sizes))
    print(f"\nspeedup of {args.mca} over the untuned stack (median times of each state)")
    print("state\t" + "\t".join(f"{s} B" for s in sizes))
    for state in (False, True):
        print(f"{'contended' if state else 'clean'}\t" + "\t".join(
            f"{by_state[(UNTUNED, state)][s] / by_state[(args.mca, state)][s]:.3f}"
            for s in sizes))


if __name__ == "__main__":
    main()
