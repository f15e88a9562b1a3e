"""A hand-built study for the report's data tests: real Optuna storage (SQLite), trials written
with the same attribute writers the controller uses, numbers chosen so results can be checked by
hand."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution
from optuna.trial import TrialState, create_trial

from autotune.space import load_space
from autotune.storage import (CONFIG_ATTR, CONFIRMATION_ATTR, RESOLUTION_ATTR, BaselineLaunch,
                              StoredSettings, save_baseline, trial_attrs)

SIZES = (8, 64, 512, 4096)
REPS = 4
# a small space with conditions: UCX knobs only under pml=ucx
SPACE_YAML = """\
format: 1
name: report-test
stack: openmpi
parameters:
  - {name: pml, apply: mca, choices: [unset, ucx], default: unset}
  - {name: UCX_TLS, apply: env, when: {pml: [ucx]}, choices: [all, sm, "self,tcp"], default: all}
  - {name: UCX_RNDV_THRESH, apply: env, type: size, when: {pml: [ucx]}, choices: [auto, 8kb],
     default: auto}
  - {name: UCX_ZCOPY_THRESH, apply: env, type: size, when: {pml: [ucx]},
     choices: [auto, 8kb, 64kb], default: auto}
  - {name: mapping, apply: mpirun, choices: [default, block, cyclic], default: default,
     args: {default: [], block: [--map-by, core], cyclic: [--map-by, numa]}}
"""
CHOICES = {"pml": ("unset", "ucx"), "UCX_TLS": ("all", "sm", "self,tcp"),
           "UCX_RNDV_THRESH": ("auto", "8kb"), "UCX_ZCOPY_THRESH": ("auto", "8kb", "64kb"),
           "mapping": ("default", "block", "cyclic")}
T0 = dt.datetime(2025, 1, 1, 12, 0, 0)


def default_times(size: int) -> list[float]:
    """The default's time per launch: 1 us + size / 1000 us, with a little spread."""
    base = 1.0 + size / 1000.0
    return [base * f for f in (1.0, 1.02, 0.98, 1.01)]


def write_space(tmp_path: Path) -> Path:
    path = tmp_path / "report-test.yaml"
    path.write_text(SPACE_YAML)
    return path


def config_dict(space: str, digest: str) -> dict[str, Any]:
    return {"collective": "allreduce", "nodes": 2, "ppn": 1, "space": space,
            "sizes": list(SIZES), "weights": {str(s): 0.25 for s in SIZES},
            "repetitions": REPS, "stages": 2, "time_per_size": 0.01,
            "weights_source": "uniform over log2(size)", "space_digest": digest,
            "benchmark": "mpi4py kernel", "reference": {"env": {}, "mca": {}, "mpirun_args": []}}


def add(study: optuna.Study, number: int, params: dict[str, Any], factors: dict[int, list[float]],
        state: TrialState = TrialState.COMPLETE, is_default: bool = False,
        env: dict[str, str] | None = None, seconds: float = 4.0, skipped: bool = False) -> None:
    """A trial whose launch r at size s took default_times(s)[r] * factors[s][r] (paired with
    default launches of exactly default_times(s)); value = weighted trimmed-mean log-ratio."""
    from autotune import objective

    raw = {s: [d * f for d, f in zip(default_times(s), fs)] for s, fs in factors.items()}
    paired = {s: default_times(s)[:len(fs)] for s, fs in factors.items()}
    scores = objective.paired_scores(raw, paired) if raw else {}
    weights = {s: 0.25 for s in SIZES}
    value = objective.weighted_score(scores, weights) if scores else None
    launches = REPS * (2 if len(factors) > 2 else 1) if factors else 0  # 2 sizes per block
    attrs = trial_attrs(
        is_default=is_default, run_id="run-1", host={"host": "n1", "mpi": "Open MPI 4.1.4",
                                                     "ucx": "1.13.1", "cpu_model": "EPYC"},
        context={}, fingerprint={}, settings=StoredSettings(env=env or {},
                                                            mca={"pml": params["pml"]}
                                                            if params.get("pml") == "ucx" else {}),
        raw_us=raw, default_us=paired, baseline_ids=[], baseline_launches=0,
        launches=[{"argv": ["mpirun"]}] * (0 if skipped else launches), repetitions=REPS,
        bench_seconds=seconds, controller_seconds=0.0, scores=scores or None,
        speedup=math.exp(-value) if value is not None and state == TrialState.COMPLETE else None,
        partial_speedup=(math.exp(-value) if value is not None and state == TrialState.PRUNED
                         else None))
    if skipped:
        attrs["skipped"] = True
    study.add_trial(create_trial(
        params=params, distributions={k: CategoricalDistribution(CHOICES[k]) for k in params},
        value=value if state == TrialState.COMPLETE else None, state=state, user_attrs=attrs,
        intermediate_values=({0: value} if state == TrialState.PRUNED and value is not None
                             else None)))
    assert study.trials[-1].number == number


def handmade_study(tmp_path: Path, confirmed: bool = True, space: str | None = None
                   ) -> optuna.Study:
    """Trial 0 default (1.0x), 1 faster everywhere (1/0.8 = 1.25x), 2 slower (0.5x), 3 pruned
    after two sizes, 4 faster at small sizes only, 5 skipped; 8 default launches (2 blocks)."""
    path = write_space(tmp_path)
    study = optuna.create_study(study_name="handmade", direction="minimize",
                                storage=f"sqlite:///{tmp_path / 'h.db'}")
    digest = load_space(str(path)).digest
    study.set_user_attr(CONFIG_ATTR, config_dict(space or str(path), digest))
    study.set_user_attr(RESOLUTION_ATTR, {"removed": ["UCX_TLS=self: only its default is possible"],
                                          "context": {}, "mpi": "Open MPI 4.1.4"})
    ones = {s: [1.0] * REPS for s in SIZES}
    add(study, 0, {"pml": "unset", "mapping": "default"}, ones, is_default=True, seconds=4.0)
    add(study, 1, {"pml": "ucx", "UCX_TLS": "sm", "UCX_RNDV_THRESH": "8kb",
                   "UCX_ZCOPY_THRESH": "64kb", "mapping": "block"},
        {s: [0.8, 0.78, 0.82, 0.8] for s in SIZES}, env={"UCX_TLS": "sm",
                                                         "UCX_RNDV_THRESH": "8kb",
                                                         "UCX_ZCOPY_THRESH": "64kb"}, seconds=5.0)
    add(study, 2, {"pml": "unset", "mapping": "cyclic"}, {s: [2.0, 2.1, 1.9, 2.0] for s in SIZES},
        seconds=6.0)
    add(study, 3, {"pml": "ucx", "UCX_TLS": "self,tcp", "UCX_RNDV_THRESH": "auto",
                   "UCX_ZCOPY_THRESH": "auto", "mapping": "default"},
        {8: [5.0, 5.0, 5.0, 5.0], 64: [5.0, 5.0, 5.0, 5.0]}, state=TrialState.PRUNED,
        env={"UCX_TLS": "self,tcp"}, seconds=1.5)
    add(study, 4, {"pml": "ucx", "UCX_TLS": "all", "UCX_RNDV_THRESH": "auto",
                   "UCX_ZCOPY_THRESH": "8kb", "mapping": "default"},
        {8: [0.5] * 4, 64: [0.5] * 4, 512: [1.5] * 4, 4096: [1.5] * 4},
        env={"UCX_ZCOPY_THRESH": "8kb"}, seconds=4.5)
    add(study, 5, {"pml": "unset", "mapping": "cyclic"}, {}, state=TrialState.FAIL, seconds=0.0,
        skipped=True)
    start = T0.timestamp()
    for i in range(8):
        block = i % 2
        save_baseline(study, BaselineLaunch(
            id=i, run_id="run-1", block=block, started=start + 30 * i, seconds=0.5,
            t_max_us={s: default_times(s)[0] * (1 + 0.1 * (i // 2)) for s in SIZES[2 * block:
                                                                               2 * block + 2]},
            drift=math.log(1 + 0.1 * (i // 2))))
    if confirmed:
        study.set_user_attr(CONFIRMATION_ATTR, {
            "rounds": 5, "best_trial": 1, "finished": start + 600, "confidence": 0.95,
            "family": 4, "method": "Student t", "stopped": "",
            "candidates": [
                {"trial": 1, "speedup": 1.24, "speedup_interval": [1.1, 1.4],
                 "verdict": "faster", "rounds": 5},
                {"trial": 4, "speedup": 1.02, "speedup_interval": [0.9, 1.15],
                 "verdict": "undecided", "rounds": 10}]})
    return study
