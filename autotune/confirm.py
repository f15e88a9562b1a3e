"""Confirmation: when the search ends, re-measure the best few configurations against the default,
in several rounds of randomized order, and keep one only if it is faster beyond doubt.

Each candidate launch is paired with a default launch measured right before it (same size block),
so a round's score is free of the machine's level shifts; the spread over rounds gives a bootstrap
confidence interval on the speedup. The winner of a search is the luckiest of many noisy draws:
this step is what makes the exported configuration trustworthy.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import optuna
from scipy import stats

from . import objective
from .measure import LaunchFailed, Measurer, PlannedLaunch
from .space import LaunchSettings
from .storage import CONFIRMATION_ATTR, TrialRecord


@dataclass
class Candidate:
    trial: int
    params: dict[str, Any]
    round_scores: list[float] = field(default_factory=list)
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    failed: str = ""

    @property
    def speedup(self) -> float | None:
        return None if self.mean is None else math.exp(-self.mean)

    def speedup_interval(self) -> tuple[float, float] | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return math.exp(-self.ci_high), math.exp(-self.ci_low)


@dataclass
class Confirmation:
    rounds: int
    candidates: list[Candidate]
    best_trial: int | None  # None: no candidate is surely faster than the default
    finished: float

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for item, cand in zip(data["candidates"], self.candidates):
            item["speedup"] = cand.speedup
            item["speedup_interval"] = cand.speedup_interval()
        return data


def settings_of(trial: optuna.trial.FrozenTrial) -> LaunchSettings:
    """The settings the trial ran with, as stored with it (a StorageError if garbled)."""
    stored = TrialRecord.from_trial(trial).settings
    return LaunchSettings(env=tuple(stored.env.items()), mca=tuple(stored.mca.items()),
                          mpirun_args=tuple(stored.mpirun_args))


def bootstrap_interval(scores: list[float], seed: int) -> tuple[float, float]:
    if len(scores) < 2 or np.ptp(scores) == 0:
        return scores[0], scores[0]
    result = stats.bootstrap((np.asarray(scores),), np.mean, confidence_level=0.95,
                             n_resamples=2000, method="percentile",
                             random_state=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def confirm(study: optuna.Study, measurer: Measurer, default_settings: LaunchSettings,
            weights: dict[int, float], trials: list[optuna.trial.FrozenTrial], rounds: int = 5,
            seed: int | None = None, default_params: dict[str, Any] | None = None
            ) -> Confirmation | None:
    """Re-measure `trials` (the strategy's pick) against the default in `rounds` rounds."""
    if not trials:
        return None
    rng = random.Random(seed)
    candidates = [Candidate(trial=t.number, params=dict(t.params)) for t in trials]
    settings = {c.trial: settings_of(t) for c, t in zip(candidates, trials)}
    blocks = measurer.plan.blocks()
    for round_index in range(rounds):
        per_round: dict[int, dict[int, float]] = {c.trial: {} for c in candidates}
        for block_index, block in enumerate(blocks):
            order = [c for c in candidates if not c.failed]
            rng.shuffle(order)
            for cand in order:
                planned = PlannedLaunch(index=-1, block=block_index, rep=round_index, sizes=block)
                try:
                    default = measurer.run_launch(default_settings, planned, rng.randrange(2**31),
                                                  params=default_params, is_default=True)
                except LaunchFailed:
                    continue  # no reference this time: this pair is skipped
                try:
                    record = measurer.run_launch(settings[cand.trial], planned, rng.randrange(2**31),
                                                 params=cand.params)
                except LaunchFailed as exc:
                    cand.failed = f"{exc.reason}: {exc.detail}"[:200]
                    continue
                for size, t_us in record.t_max_us.items():
                    per_round[cand.trial][size] = objective.log_ratio(t_us, default.t_max_us[size])
        for cand in candidates:
            scores = per_round[cand.trial]
            if not cand.failed and scores:
                cand.round_scores.append(objective.weighted_score(scores, weights))
    best, best_mean = None, 0.0
    for cand in candidates:
        if cand.failed or not cand.round_scores:
            continue
        cand.mean = float(np.mean(cand.round_scores))
        cand.ci_low, cand.ci_high = bootstrap_interval(cand.round_scores, seed or 0)
        if cand.ci_high < 0 and cand.mean < best_mean:  # faster than the default beyond doubt
            best, best_mean = cand.trial, cand.mean
    result = Confirmation(rounds=rounds, candidates=candidates, best_trial=best, finished=time.time())
    study.set_user_attr(CONFIRMATION_ATTR, result.to_dict())
    return result
