"""Intervals for means of few noisy values (scores of confirmation and verification rounds).

Student's t, not a percentile bootstrap: over 5 values a bootstrap's interval is too narrow (it
cannot see beyond the spread of the values it resamples), and the claims built on it did not hold.
`simultaneous` widens each interval so that all of `family` intervals hold together at the stated
confidence (Bonferroni): the winner picked among several candidates is not a lucky one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Interval:
    """Mean of n values with a two-sided interval at `confidence` (already Bonferroni-corrected
    when `family` > 1)."""

    mean: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    family: int = 1

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def excludes(self, value: float = 0.0) -> bool:
        return self.low > value or self.high < value

    def speedup(self) -> tuple[float, float, float]:
        """For a mean log-ratio (lower is faster): speedup and its interval, low to high."""
        return math.exp(-self.mean), math.exp(-self.high), math.exp(-self.low)


def mean_interval(values: Iterable[float], confidence: float = 0.95, family: int = 1) -> Interval:
    """Student-t interval of the mean; with `family` > 1 each interval is at 1 - (1-confidence)/family.

    One value gives an unbounded interval: nothing can be claimed from it.
    """
    data = np.asarray(list(values), dtype=float)
    if data.size == 0:
        raise ValueError("mean_interval of no values")
    mean = float(data.mean())
    if data.size < 2:
        return Interval(mean, -math.inf, math.inf, 1, confidence, family)
    alpha = (1 - confidence) / max(1, family)
    se = float(data.std(ddof=1)) / math.sqrt(data.size)
    t = float(stats.t.ppf(1 - alpha / 2, df=data.size - 1))
    return Interval(mean, mean - t * se, mean + t * se, int(data.size), confidence, family)
