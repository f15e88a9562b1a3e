"""A synthetic grid with a known optimum, written in the documented grid format."""
from __future__ import annotations

import math
import random

import pandas as pd

from autotune.storage._grid import grid_rows

KNOBS = ("pml", "UCX_TLS", "coll_tuned_allreduce_algorithm")
SIZES = (8, 64, 512, 4096, 32768)
# relative time of each configuration; pml ucx over shared memory with algorithm 3 is best (1/0.7)
PML = {"": 1.0, "ucx": 0.95}
TLS = {"": 1.0, "self,sm": 0.85, "self,tcp": 3.0}
ALG = {"": 1.0, "1": 1.3, "2": 1.1, "3": 0.87}
OPTIMUM = (("UCX_TLS", "self,sm"), ("coll_tuned_allreduce_algorithm", "3"), ("pml", "ucx"))


def synthetic_rows(passes: int = 3, noise: float = 0.02, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for pass_ in range(passes):
        level = math.exp(rng.gauss(0, 0.2))  # a pass-wide level: time-correlated noise
        for pml in PML:
            for tls in (TLS if pml else {"": 1.0}):
                for alg in ALG:
                    config = tuple(sorted((k, v) for k, v in zip(KNOBS, (pml, tls, alg)) if v))
                    times = {s: (2 + s / 1000) * level * PML[pml] * TLS[tls] * ALG[alg]
                             * math.exp(rng.gauss(0, noise)) for s in SIZES}
                    rows += grid_rows(config, KNOBS, pass_, 1e9 + pass_, times)
    return rows


def write_synthetic(path, **kwargs) -> None:
    frame = pd.DataFrame(synthetic_rows(**kwargs))
    if str(path).endswith(".parquet"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
