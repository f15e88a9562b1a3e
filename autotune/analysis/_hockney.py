"""Hockney's model t = t_L + M/B per protocol region (seeds/001), fitted robustly.

Residuals are relative, (t - model) / t: the sizes span bytes to megabytes, and absolute residuals
would let the largest sizes alone decide t_L. Dividing t = t_L + s*x by t gives 1 = t_L/t + s*x/t,
a linear regression without intercept whose residuals are exactly the relative ones, fitted with
scikit-learn's HuberRegressor so one noisy size cannot bend the line (ordinary least squares
follows it; see the tests).

Regions: a protocol switch (eager -> rendezvous, copy -> zero-copy: seeds/003) starts another line.
Every split of the ascending sizes into 1..max_regions contiguous regions of >= min_points sizes is
scored: the sum over sizes of min(z^2, CAP^2)/2 with z the relative residual in noise units, plus
REGION_PENALTY per extra region. The per-size cost is capped, so one outlier size costs at most
CAP^2/2 whatever the split, and REGION_PENALTY = CAP^2 is more than that: a region is added only
when at least two sizes together leave a single line by more than the noise. A clean straight line
therefore stays one region. The search is exact; splits whose first and last regions alone already
cost more than the best split found are never fitted.

Constraints t_L >= 0 and B > 0 by an active set: when the free fit gives t_L < 0 (a region of large
sizes whose line extrapolates below zero), the region is refitted through the origin (t_L = 0);
when it gives a slope <= 0 (a latency-bound region where time does not grow with size, the size
term is below the noise), the region is a constant t_L with B = inf and M_half = inf.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ._curves import DEFAULT_NOISE, Curve, curve_noise, effective_bytes

CAP = 3.0  # noise units beyond which a size counts as "off the line", whatever the distance
REGION_PENALTY = CAP**2


@dataclass(frozen=True)
class HockneyRegion:
    """One protocol region: sizes min_bytes..max_bytes (message bytes, inclusive), t = t_L + V/B
    with V the effective bytes; B in MB/s (1e6 B/s), M_half = B * t_L in effective bytes."""

    min_bytes: int
    max_bytes: int
    t_latency_us: float
    bandwidth_mb_s: float
    m_half_bytes: float
    points: int


@dataclass(frozen=True)
class HockneyFit:
    label: str
    collective: str
    nprocs: int
    regions: tuple[HockneyRegion, ...]
    noise: float = DEFAULT_NOISE  # the relative noise the region boundaries were judged against

    def region_for(self, nbytes: int) -> HockneyRegion:
        """The region whose protocol applies: the last one starting at or below nbytes (a size
        between two regions stays with the lower one; below the first, the first)."""
        chosen = self.regions[0]
        for region in self.regions:
            if region.min_bytes <= nbytes:
                chosen = region
        return chosen

    def predict_us(self, nbytes: int) -> float:
        """Model time for one message size, in microseconds."""
        region = self.region_for(nbytes)
        volume = effective_bytes(self.collective, nbytes, self.nprocs)
        return region.t_latency_us + volume / region.bandwidth_mb_s


def fit_hockney(curve: Curve, collective: str, nprocs: int, *, max_regions: int = 3,
                min_points: int = 3, noise: float | None = None) -> HockneyFit:
    """Hockney fit per protocol region of one curve (sizes 0 and times 0 are skipped)."""
    if max_regions < 1 or min_points < 2:
        raise InputError(f"max_regions {max_regions} / min_points {min_points}: need >= 1 / >= 2")
    sigma = curve_noise(curve, noise)
    kept = [(size, effective_bytes(collective, size, nprocs), t)
            for size, t in zip(curve.sizes, curve.t_us) if size > 0 and t > 0]
    if len(kept) < 2:
        raise InputError(f"{curve.label}: a Hockney fit needs at least 2 sizes above 0 bytes "
                         "with a positive time")
    if all(volume == 0 for _, volume, _ in kept):
        raise InputError(f"{curve.label}: {collective} moves no payload; no Hockney fit")
    sizes = [size for size, _, _ in kept]
    x = np.array([volume for _, volume, _ in kept], dtype=float)
    t = np.array([time for _, _, time in kept], dtype=float)
    split = _best_split(x, t, sigma, max_regions, min_points)
    regions = tuple(_region(sizes[i:j], line) for i, j, line in split)
    return HockneyFit(curve.label, collective, nprocs, regions, sigma)


def _region(sizes: list[int], line: tuple[float, float]) -> HockneyRegion:
    t_l, slope = line
    if slope > 0:
        bandwidth, m_half = 1.0 / slope, t_l / slope
    else:
        bandwidth, m_half = math.inf, (math.inf if t_l > 0 else 0.0)
    return HockneyRegion(sizes[0], sizes[-1], t_l, bandwidth, m_half, len(sizes))


def _huber(features: np.ndarray) -> np.ndarray:
    """Robust coefficients of 1 ~ features (no intercept); columns scaled for the solver."""
    from sklearn.linear_model import HuberRegressor

    scale = np.abs(features).max(axis=0)
    scale[scale == 0] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning on exact data: the fit is exact
        model = HuberRegressor(fit_intercept=False, alpha=0.0, max_iter=1000)
        model.fit(features / scale, np.ones(len(features)))
    return model.coef_ / scale


def _fit_line(x: np.ndarray, t: np.ndarray) -> tuple[float, float]:
    """(t_L us, slope us per effective byte) with t_L >= 0 and slope >= 0 (see module doc)."""
    features = np.column_stack([1.0 / t, x / t])
    t_l, slope = (float(c) for c in _huber(features))
    if slope > 0 and t_l >= 0:
        return t_l, slope
    if slope > 0 and np.any(x > 0):
        return 0.0, float(_huber(features[:, 1:])[0])
    return max(float(_huber(features[:, :1])[0]), 0.0), 0.0


def _cost(line: tuple[float, float], x: np.ndarray, t: np.ndarray, sigma: float) -> float:
    z = (t - (line[0] + line[1] * x)) / t / sigma
    return float(np.minimum(z * z, CAP * CAP).sum() / 2.0)


Split = tuple[tuple[int, int], ...]  # (start, stop) index pairs, stop exclusive


def _splits(n: int, max_regions: int, min_points: int) -> list[Split]:
    splits: list[Split] = [((0, n),)]
    cut_points = range(min_points, n - min_points + 1)
    for k in range(2, max_regions + 1):
        for cuts in itertools.combinations(cut_points, k - 1):
            if all(b - a >= min_points for a, b in zip(cuts, cuts[1:])):
                bounds = (0, *cuts, n)
                splits.append(tuple(zip(bounds, bounds[1:])))
    return splits


def _best_split(x: np.ndarray, t: np.ndarray, sigma: float, max_regions: int,
                min_points: int) -> list[tuple[int, int, tuple[float, float]]]:
    """The split of least penalised capped cost (fewer regions win ties), as (start, stop, line)
    per region."""
    fits: dict[tuple[int, int], tuple[float, tuple[float, float]]] = {}

    def cost(segment: tuple[int, int]) -> float:
        if segment not in fits:
            i, j = segment
            line = _fit_line(x[i:j], t[i:j])
            fits[segment] = (_cost(line, x[i:j], t[i:j], sigma), line)
        return fits[segment][0]

    def bound(split: Split) -> float:
        known = sum(fits[s][0] for s in split if s in fits)
        return known + REGION_PENALTY * (len(split) - 1)

    splits = _splits(len(x), max_regions, min_points)
    for split in splits:
        cost(split[0])
        cost(split[-1])
    ranked = sorted(((bound(s), len(s), s) for s in splits), key=lambda item: item[:2])
    best: tuple[float, int, Split] | None = None
    for low, k, split in ranked:
        if best is not None and low >= best[0]:
            break  # every later split costs at least its bound, which is >= this one
        if best is not None and bound(split) >= best[0]:
            continue
        total = sum(cost(s) for s in split) + REGION_PENALTY * (k - 1)
        if best is None or (total, k) < best[:2]:
            best = (total, k, split)
    assert best is not None
    return [(i, j, fits[(i, j)][1]) for i, j in best[2]]
