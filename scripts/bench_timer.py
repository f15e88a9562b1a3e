#!/usr/bin/env python3
"""Benchmark (not a test): is the mpi4py kernel's distance from IMB-MPI1 its Python timing loop?

The same allreduce timed five ways in interleaved rounds, for the untuned stack and a few
configurations: IMB-MPI1; the project's mpi4py kernel; the kernel at mpi4py's default thread
level ("kernel MT", below); IMB's loop compiled in C (autotune/benchmarks/timed_loops.c, the
kernel's own, built here with mpicc) called through ctypes from a Python process under mpirun,
with the kernel's warm-up and time per size (scripts/_timed_loop_worker.py, "C loop"); and the
same loop with the same method driven from a C program with malloc'd buffers
(scripts/_timed_loop_main.c, "C program"), which tells what Python adds from what any program
timing the same calls reads. `--timers` picks some of them (IMB always runs). Printed: each
timer's median t_max per size, its per-size ratio to the untuned stack of the same round, and
each configuration's weighted speedup over the untuned stack (sizes weighted uniformly; the
median over rounds of exp(-mean log ratio)) with its distance from IMB's in pp.

Since the kernel itself times blocking collectives with that loop in C (autotune/benchmarks/
_c_loops.py), its column reads like the third; `AUTOTUNE_MPICC=/bin/false` in the environment
makes the kernel fall back to its Python loop, which is what the figures in
docs/evidence/kernel-fidelity.md compared.

"kernel MT" is the kernel with MPI started at mpi4py's default thread level (MPI_THREAD_MULTIPLE),
as it ran before commit 08a9e7f: the locking that level brings costs every call a little.

Launches use argv lists (no shell), 2 ranks on this machine, Open MPI's mpirun.

    .venv/bin/python scripts/bench_timer.py --imb-dir DIR --rounds 8 [--timers kernel,"C program"]
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "autotune" / "benchmarks" / "mpi4py_kernel.py"
WORKER = ROOT / "scripts" / "_timed_loop_worker.py"
C_MAIN = ROOT / "scripts" / "_timed_loop_main.c"
SOURCE = ROOT / "autotune" / "benchmarks" / "timed_loops.c"
MPIRUN = ["mpirun", "--allow-run-as-root", "-np", "2"]
UNTUNED = "untuned"
CONFIGS = {  # name: MCA parameters (alg N: coll_tuned's allreduce algorithm N)
    UNTUNED: {},
    "alg 6": {"coll_tuned_use_dynamic_rules": "1",
                              "coll_tuned_allreduce_algorithm": "6"},
    "alg 3": {"coll_tuned_use_dynamic_rules": "1",
                              "coll_tuned_allreduce_algorithm": "3"},
    "pml ucx": {"pml": "ucx", "pml_ucx_devices": "any", "pml_ucx_tls": "any"},
}
TIMERS = ("IMB", "kernel", "kernel MT", "C loop", "C program")
# "kernel MT": the kernel with MPI started at mpi4py's default MPI_THREAD_MULTIPLE, as it was before
# commit 08a9e7f (mpi4py reads MPI4PY_RC_THREAD_LEVEL over the kernel's own choice)
MULTIPLE = ("-x", "MPI4PY_RC_THREAD_LEVEL=multiple")


def mca_args(params: dict[str, str]) -> list[str]:
    return [arg for name, value in params.items() for arg in ("--mca", name, value)]


def run(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:8])} ... exit {proc.returncode}: {proc.stderr[-300:]}")
    return proc.stdout


def imb(params: dict[str, str], args: argparse.Namespace) -> dict[int, float]:
    out = run([*MPIRUN, *mca_args(params), str(args.imb_dir / "IMB-MPI1"), "allreduce",
               "-msglen", str(args.msglen), "-time", str(args.time_per_size), "-iter", "20000",
               "-npmin", "2"])
    times = {}
    for line in out.splitlines():  # bytes repetitions t_min t_max t_avg
        cells = line.split()
        if len(cells) == 5 and cells[0].isdigit():
            times[int(cells[0])] = float(cells[3])
    return times


def kernel(params: dict[str, str], args: argparse.Namespace,
           extra: tuple[str, ...] = ()) -> dict[int, float]:
    out = run([*MPIRUN, *extra, *mca_args(params), sys.executable, str(KERNEL), "--collective",
               "allreduce", "--sizes", ",".join(map(str, args.sizes)),
               "--time-per-size", str(args.time_per_size)])
    records = (json.loads(line.removeprefix("AUTOTUNE ")) for line in out.splitlines()
               if line.startswith("AUTOTUNE "))
    return {r["size"]: r["t_max_us"] for r in records if r.get("kind") == "size"}


def parse_timed(out: str) -> dict[int, float]:
    """The `TIMED {size: t_max_us}` line the C loop's drivers print on rank 0."""
    line = next(line for line in out.splitlines() if line.startswith("TIMED "))
    return {int(size): t for size, t in json.loads(line.removeprefix("TIMED ")).items()}


def c_loop(params: dict[str, str], args: argparse.Namespace) -> dict[int, float]:
    out = run([*MPIRUN, *mca_args(params), sys.executable, str(WORKER), str(args.library),
               ",".join(map(str, args.sizes)), str(args.time_per_size)])
    return parse_timed(out)


def c_program(params: dict[str, str], args: argparse.Namespace) -> dict[int, float]:
    out = run([*MPIRUN, *mca_args(params), str(args.program), ",".join(map(str, args.sizes)),
               str(args.time_per_size)])
    return parse_timed(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--imb-dir", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--sizes", default="8,32,128,512,2048,8192,32768,131072,524288")
    parser.add_argument("--time-per-size", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timers", default=",".join(TIMERS[1:]),
                        help=f"comma-separated, of {', '.join(TIMERS[1:])} (IMB always runs)")
    args = parser.parse_args()
    asked = set(args.timers.split(","))
    chosen = ["IMB", *(t for t in TIMERS[1:] if t in asked)]
    unknown = asked - set(TIMERS)
    if unknown:
        parser.error(f"--timers: unknown {', '.join(sorted(unknown))}; choose of {TIMERS[1:]}")
    args.sizes = [int(s) for s in args.sizes.split(",")]
    if not shutil.which("mpicc"):
        parser.error("mpicc not found: the C loop is built with it")
    with tempfile.TemporaryDirectory() as tmp:
        args.library = Path(tmp) / "timed_loop.so"
        args.program = Path(tmp) / "timed_loop_main"
        args.msglen = Path(tmp) / "msglen"
        args.msglen.write_text("".join(f"{s}\n" for s in args.sizes))
        subprocess.run(["mpicc", "-O2", "-shared", "-fPIC", "-o", str(args.library), str(SOURCE)],
                       check=True)
        subprocess.run(["mpicc", "-O2", "-o", str(args.program), str(C_MAIN), str(SOURCE)],
                       check=True)
        timers = {"IMB": imb, "kernel": kernel, "C loop": c_loop, "C program": c_program,
                  "kernel MT": lambda params, args: kernel(params, args, MULTIPLE)}
        data: dict[tuple[str, str], list[dict[int, float]]] = {
            (t, c): [] for t in chosen for c in CONFIGS}
        rng = random.Random(args.seed)
        for round_no in range(args.rounds):
            order = list(data)
            rng.shuffle(order)
            for timer, config in order:
                data[(timer, config)].append(timers[timer](CONFIGS[config], args))
            print(f"round {round_no + 1}/{args.rounds} done", file=sys.stderr)
    report(data, args.sizes, args.rounds, chosen)
    return 0


def report(data: dict[tuple[str, str], list[dict[int, float]]], sizes: list[int],
           rounds: int, timers: list[str]) -> None:
    print(f"allreduce, 2 ranks, {rounds} rounds; median t_max us per size")
    print(f"{'size':>8}  " + "  ".join(f"{f'{c} {t}':>18}" for c in CONFIGS for t in timers))
    for size in sizes:
        print(f"{size:>8}  " + "  ".join(
            f"{statistics.median(r[size] for r in data[(t, c)]):>18.2f}"
            for c in CONFIGS for t in timers))
    print("per-size ratio to the untuned stack of the same round (median over rounds)")
    for config in CONFIGS:
        if config == UNTUNED:
            continue
        for size in sizes:
            print(f"{config:>8} {size:>8}  " + "  ".join(
                f"{t} {statistics.median(a[size] / b[size] for a, b in zip(data[(t, config)], data[(t, UNTUNED)])):.3f}"
                for t in timers))
    print("weighted speedup over the untuned stack (sizes uniform; median over rounds)")
    for config in CONFIGS:
        if config == UNTUNED:
            continue
        speedups = {t: statistics.median(
            math.exp(-statistics.fmean(math.log(a[s] / b[s]) for s in sizes))
            for a, b in zip(data[(t, config)], data[(t, UNTUNED)])) for t in timers}
        print(f"{config:>8}  " + "  ".join(
            f"{t} {v:.3f}" + ("" if t == "IMB" else f" ({100 * (v - speedups['IMB']):+.1f} pp)")
            for t, v in speedups.items()))


if __name__ == "__main__":
    sys.exit(main())
