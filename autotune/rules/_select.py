"""From per-size measurements of several algorithm variants to a few size bands.

Two steps, both on paired rounds (every variant launched once per round, in random order):
1. per size, the best variant, but only where the data say it beats the incumbent (the best
   single configuration's variant): a paired Student-t interval of the log-time difference lies
   below 0. Elsewhere the incumbent stays, so noise alone seldom cuts a band;
2. bands: decision trees over log2(size) (scikit-learn) with 1, 2, ... leaves. A leaf takes, of
   the variants chosen at its sizes, the one with the least log time there if it beats the
   incumbent over the leaf beyond doubt (99%); the fewest leaves whose cost is within `penalty`
   of the per-size choice win. Decision trees over message size are the published way to
   compress such rules, at about 2% penalty; 1% here, because a gain confined to one band of a
   few sizes is worth a rule, and noise is kept out by the tests and by the composed rules' own
   measurement. Neighbours with the same choice merge; a boundary lies at the geometric mean of
   the two measured sizes it separates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from ..stats import mean_interval
from ._model import AlgorithmChoice, RuleSet

PENALTY = 0.01  # bands may cost this much (weighted mean) over the per-size choice
MAX_BANDS = 6
MIN_BAND_SIZES = 2
SWITCH_CONFIDENCE = 0.90  # per-size evidence needed to leave the incumbent
BAND_CONFIDENCE = 0.99  # a band's evidence: the tree picks where noise looks best, so more
# (synthetic rounds, 4 per variant, 18 sizes, 20% noise: 4/100 noise-only runs got a false band)


@dataclass(frozen=True)
class SizeChoice:
    size: int
    variant: int  # index into the variants
    gain: float  # mean log-time of the incumbent minus this variant's (>= 0)


@dataclass(frozen=True)
class BandPlan:
    """The chosen bands before they become a RuleSet: (first size index, variant) per band."""

    starts: tuple[tuple[int, int], ...]  # (index into sizes, variant)
    cost: float  # weighted mean log-time above the per-size choice


def per_size_choice(log_t: Mapping[int, Mapping[int, Sequence[float]]], sizes: Sequence[int],
                    incumbent: int, confidence: float = SWITCH_CONFIDENCE) -> list[SizeChoice]:
    """log_t[variant][size]: log time per round (same round order for every variant; a variant
    missing a round has NaN there). The incumbent keeps every size another does not surely win."""
    chosen: list[SizeChoice] = []
    for size in sizes:
        base = np.asarray(log_t[incumbent][size], dtype=float)
        best, best_mean = incumbent, 0.0
        for variant, per_size in log_t.items():
            if variant == incumbent:
                continue
            diff = np.asarray(per_size[size], dtype=float) - base
            diff = diff[np.isfinite(diff)]
            if diff.size < 2:
                continue
            interval = mean_interval(diff, confidence)
            if interval.high < 0 and interval.mean < best_mean:
                best, best_mean = variant, interval.mean
        chosen.append(SizeChoice(size, best, -best_mean))
    return chosen


def mean_log_t(log_t: Mapping[int, Mapping[int, Sequence[float]]]) -> dict[int, dict[int, float]]:
    return {v: {s: float(np.nanmean(np.asarray(vals, dtype=float))) if len(vals) else math.inf
                for s, vals in per.items()} for v, per in log_t.items()}


def plan_bands(choices: Sequence[SizeChoice], log_t: Mapping[int, Mapping[int, Sequence[float]]],
               incumbent: int, weights: Mapping[int, float] | None = None, *,
               penalty: float = PENALTY, max_bands: int = MAX_BANDS,
               confidence: float = BAND_CONFIDENCE) -> BandPlan:
    """The fewest bands whose cost stays within `penalty` of the per-size choice. A band holds at
    least two measured sizes (a protocol regime spans several; one size is noise's favourite)."""
    sizes = [c.size for c in choices]
    means = mean_log_t(log_t)
    w = np.asarray([float((weights or {}).get(s, 1.0)) or 1.0 for s in sizes])
    w = w / w.sum()
    ideal = np.asarray([means[c.variant][c.size] for c in choices])
    x = np.log2(np.asarray(sizes, dtype=float)).reshape(-1, 1)
    y = np.asarray([c.variant for c in choices])
    leaf = _Leaf(sizes, log_t, means, w, incumbent, penalty, confidence)
    simple = len(set(y)) == 1 or len(sizes) < 4
    best_plan: BandPlan | None = None
    for leaves in range(1, max_bands + 1):
        if leaves == 1 or simple:
            leaf_of = np.zeros(len(sizes), dtype=int)
        else:
            tree = DecisionTreeClassifier(max_leaf_nodes=leaves, min_samples_leaf=MIN_BAND_SIZES,
                                          random_state=0)
            leaf_of = tree.fit(x, y).apply(x)
        plan = _plan_from_leaves(leaf_of, y, leaf, ideal)
        if best_plan is None or plan.cost < best_plan.cost - 1e-12:
            best_plan = plan
        if plan.cost <= math.log1p(penalty) or simple:
            return plan
    assert best_plan is not None
    return best_plan


class _Leaf:
    """Which variant a band of sizes takes: of the variants chosen at its sizes, the one with the
    least weighted log time, if it surely beats the incumbent over the band (paired rounds) by
    more than the penalty; else the incumbent. A variant that won no size never takes a band."""

    def __init__(self, sizes: Sequence[int], log_t: Mapping[int, Mapping[int, Sequence[float]]],
                 means: Mapping[int, Mapping[int, float]], w: np.ndarray, incumbent: int,
                 penalty: float, confidence: float) -> None:
        self.sizes, self.log_t, self.means, self.w = sizes, log_t, means, w
        self.incumbent, self.penalty, self.confidence = incumbent, penalty, confidence

    def cost(self, variant: int, idx: range) -> float:
        return float(sum(self.w[i] * self.means[variant][self.sizes[i]] for i in idx))

    def choose(self, candidates: set[int], idx: range) -> int:
        variant = min(sorted(candidates), key=lambda v: self.cost(v, idx))
        if variant == self.incumbent:
            return variant
        weights = self.w[list(idx)] / float(sum(self.w[i] for i in idx))
        diffs = np.asarray([np.asarray(self.log_t[variant][self.sizes[i]], dtype=float)
                            - np.asarray(self.log_t[self.incumbent][self.sizes[i]], dtype=float)
                            for i in idx])  # sizes x rounds
        per_round = weights @ diffs
        per_round = per_round[np.isfinite(per_round)]
        if per_round.size < 2:
            return self.incumbent
        interval = mean_interval(per_round, self.confidence)
        if interval.high < 0 and -interval.mean > math.log1p(self.penalty):
            return variant
        return self.incumbent


def _plan_from_leaves(leaf_of: np.ndarray, chosen: np.ndarray, leaf: _Leaf,
                      ideal: np.ndarray) -> BandPlan:
    runs: list[tuple[int, int]] = []  # consecutive sizes in one leaf: (first, last) index
    for i, node in enumerate(leaf_of):
        if runs and leaf_of[runs[-1][0]] == node:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    starts: list[tuple[int, int]] = []
    cost = 0.0
    for first, last in runs:
        idx = range(first, last + 1)
        variant = leaf.choose({int(chosen[i]) for i in idx}, idx)
        cost += leaf.cost(variant, idx) - float(sum(leaf.w[i] * ideal[i] for i in idx))
        if not starts or starts[-1][1] != variant:
            starts.append((first, variant))
    return BandPlan(tuple(starts), float(cost))


def rule_set(plan: BandPlan, sizes: Sequence[int], variants: Mapping[int, AlgorithmChoice],
             *, stack: str, collective: str, comm_size: int) -> RuleSet:
    """Bands in bytes: each boundary at the geometric mean of the measured sizes it separates."""
    starts = []
    for first, variant in plan.starts:
        low = 0 if first == 0 else int(math.ceil(math.sqrt(sizes[first - 1] * sizes[first])))
        starts.append((low, variants[variant]))
    return RuleSet.from_starts(stack, collective, comm_size, starts)
