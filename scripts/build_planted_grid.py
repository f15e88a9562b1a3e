#!/usr/bin/env python3
"""Build a large replay grid from a real one: every recorded launch kept, three more knobs planted
with documented effects, the way most knobs of a real space behave (dead, or acting only in a
size band and only with some other setting). A replay of it compares strategies on a space of
thousands of configurations; it is made of real launches, and it claims nothing about a machine.

The planted knobs (`planted_*`, named so that nobody mistakes them for MPI settings):
- planted_dead: values 0 (unset), 1. Dead: the base configuration's launches, each moved to the
  base's next pass (its i-th pass gets the launch of its (i+1)-th, scaled size by size by the two
  passes' defaults, so its ratio to the default is the one that launch had to its own): a real
  launch of the same settings at another time, so a dead knob looks as noisy as one does on a
  real machine;
- planted_band: values 0 (unset), 1, 2. 1: sizes from 64 KiB up `--band-gain` faster, only where
  pml=ucx (an interaction; elsewhere dead, as 0); 2: sizes up to 256 B `--small-loss` slower,
  everywhere;
- planted_pair: values 0 (unset), 1. 1: sizes of 4-32 KiB `--pair-gain` faster, only with the
  collective's coll_tuned algorithm left to Open MPI (unset); with a forced algorithm, the same
  sizes `--pair-gain` slower.
A planted value other than 0 re-uses its dead twin's launches before the planted factor is
applied, so every configuration has its own noise. The untuned default stays the base grid's
default row.

Two other structures (`--structure`), to check that a strategy wins by method and not by the one
planted grid it was measured on; their knobs are planted_x, planted_y, planted_z:
- tls: planted_x=1: sizes from 16 KiB 8% faster, only with pml=ucx and UCX_TLS sm or self,sm (a
  three-way interaction); elsewhere the same sizes 3% slower. planted_y=1: sizes up to 1 KiB 5%
  faster, everywhere. planted_z (0, 1, 2): dead;
- alg: planted_x=1: sizes of 1-8 KiB 10% faster, only with the coll_tuned algorithm unset and
  pml=ucx; elsewhere dead. planted_y=1: a trade, sizes below 256 B 4% slower, sizes from 256 KiB
  6% faster. planted_z=2: 5% slower at every size; planted_z=1 dead.

    .venv/bin/python scripts/build_planted_grid.py docs/grids/allreduce-large-1n2p-imb.csv \\
        -o docs/grids/allreduce-planted-1n2p-imb.parquet
    .venv/bin/python scripts/build_planted_grid.py docs/grids/allreduce-large-1n2p-imb.csv \\
        --structure tls -o /tmp/planted-tls.parquet
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autotune.storage._grid import FIXED_COLUMNS, Config, Grid, read_grid  # noqa: E402

KNOBS = {"planted_dead": ("", "1"), "planted_band": ("", "1", "2"), "planted_pair": ("", "1")}
VARIANT_KNOBS = {"planted_x": ("", "1"), "planted_y": ("", "1"), "planted_z": ("", "1", "2")}


def _algorithm(base: Config) -> str:
    return next((v for k, v in base if k.endswith("_algorithm")), "")


def factor_tls(base: Config, planted: dict[str, str], size: int) -> float:
    """The tls structure (module docstring)."""
    settings = dict(base)
    f = 1.0
    if planted.get("planted_x", "") == "1" and size >= 16 * 1024:
        near = settings.get("pml") == "ucx" and settings.get("UCX_TLS") in ("sm", "self,sm")
        f = f / 1.08 if near else f * 1.03
    if planted.get("planted_y", "") == "1" and size <= 1024:
        f /= 1.05
    return f


def factor_alg(base: Config, planted: dict[str, str], size: int) -> float:
    """The alg structure (module docstring)."""
    f = 1.0
    if (planted.get("planted_x", "") == "1" and 1024 <= size <= 8192
            and _algorithm(base) in ("", "0") and dict(base).get("pml") == "ucx"):
        f /= 1.10
    if planted.get("planted_y", "") == "1":
        if size < 256:
            f *= 1.04
        elif size >= 256 * 1024:
            f /= 1.06
    if planted.get("planted_z", "") == "2":
        f *= 1.05
    return f


def factor(base: Config, planted: dict[str, str], size: int, args: argparse.Namespace) -> float:
    """Time multiplier of the planted values at one size of a base configuration."""
    if args.structure == "tls":
        return factor_tls(base, planted, size)
    if args.structure == "alg":
        return factor_alg(base, planted, size)
    settings = dict(base)
    f = 1.0
    band = planted.get("planted_band", "")
    if band == "1" and settings.get("pml") == "ucx" and size >= 64 * 1024:
        f /= args.band_gain
    if band == "2" and size <= 256:
        f *= args.small_loss
    if planted.get("planted_pair", "") == "1" and 4096 <= size <= 32768:
        f = f / args.pair_gain if _algorithm(base) in ("", "0") else f * args.pair_gain
    return f


def planted_knobs(args: argparse.Namespace) -> dict[str, tuple[str, ...]]:
    return KNOBS if args.structure == "band" else VARIANT_KNOBS


def build(grid: Grid, args: argparse.Namespace) -> pd.DataFrame:
    knobs = planted_knobs(args)
    rows = []
    names = list(knobs)
    default = grid.t_us[grid.default]
    for base, by_pass in sorted(grid.t_us.items()):
        passes = sorted(by_pass)
        for values in itertools.product(*knobs.values()):
            planted = {k: v for k, v in zip(names, values) if v}
            shift = 1 if planted else 0  # a setting that differs is another launch of the base
            for i, pass_ in enumerate(passes):
                source = passes[(i + shift) % len(passes)]
                start = grid.started.get((base, source), 0.0)
                for size, t in sorted(by_pass[source].items()):
                    level = default[pass_][size] / default[source][size]
                    rows.append({"pass": pass_, "start": start, "size": size,
                                 "t_us": round(t * level * factor(base, planted, size, args), 5),
                                 **{k: dict(base).get(k, "") for k in grid.knobs},
                                 **{k: planted.get(k, "") for k in names}})
    frame = pd.DataFrame(rows)
    return frame[[*FIXED_COLUMNS, *grid.knobs, *names]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="a real grid (.csv or .parquet)")
    parser.add_argument("-o", "--output", type=Path, required=True, help=".csv or .parquet")
    parser.add_argument("--band-gain", type=float, default=1.06)
    parser.add_argument("--small-loss", type=float, default=1.04)
    parser.add_argument("--pair-gain", type=float, default=1.03)
    parser.add_argument("--structure", choices=("band", "tls", "alg"), default="band",
                        help="which planted effects (module docstring); the gains above are band's")
    args = parser.parse_args()
    grid = read_grid(args.base)
    frame = build(grid, args)
    if args.output.suffix == ".parquet":
        frame.to_parquet(args.output, index=False)
    else:
        frame.to_csv(args.output, index=False)
    configs = len(grid.t_us) * len(list(itertools.product(*planted_knobs(args).values())))
    print(f"{args.output}: {configs} configurations x {len(grid.passes)} passes, "
          f"{len(frame)} rows")


if __name__ == "__main__":
    main()
