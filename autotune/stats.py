"""Intervals for means of few noisy values (scores of confirmation and verification rounds).

Student's t, not a percentile bootstrap: over 5 values a bootstrap's interval is too narrow (it
cannot see beyond the spread of the values it resamples), and the claims built on it did not hold.
`family` widens each interval so that all of `family` intervals hold together at the stated
confidence (Bonferroni): the winner picked among several candidates is not a lucky one.

`trimmed_interval` is the same for the trimmed mean (Tukey-McLaughlin / Yuen): the confirmation's
round scores are mostly tight with a few far off (a launch that lands on a disturbed moment of a
shared machine reads 1.5-3x slow, whichever side of the pair it is on), and three or four such
rounds in 20 widen a plain t interval so much that a 15-20% gain cannot be told from none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.stats import mstats


@dataclass(frozen=True)
class Interval:
    """Centre of n values (their mean, or trimmed mean: see `trimmed_interval`) with a two-sided
    interval at `confidence` (already Bonferroni-corrected when `family` > 1)."""

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
        """For a centre of log-ratios (lower is faster): speedup and its interval, low to high."""
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


TRIM = 0.2  # share of values cut on each side by `trimmed_interval`
MIN_TO_TRIM = 10  # fewer values: `trimmed_interval` cuts none


def trimmed_interval(values: Iterable[float], confidence: float = 0.95, family: int = 1,
                     trim: float = TRIM) -> Interval:
    """Interval of the `trim`-trimmed mean (`Interval.mean` holds that trimmed mean): the
    standard error of the winsorized values over (1 - 2 trim) sqrt(n), and Student's t with
    n - 2g - 1 degrees of freedom, g = floor(trim n) values cut on each side (Wilcox, "Introduction
    to Robust Estimation and Hypothesis Testing", 4.3). It is an interval for the trimmed mean,
    not the mean: a tail is discounted whether it is the machine's or the values' own (a caller
    that must not ignore a tail checks the mean too). It stays narrow under heavy tails where the
    mean's interval is needlessly wide; the price is a few degrees of freedom when nothing is far
    off. Below `MIN_TO_TRIM` values nothing is cut (it is then `mean_interval`): of 5 values
    the winsorized spread rests on the middle three, which can agree to a few parts in a thousand
    by chance (IMB prints 0.01 us), and a replayed A/A study claimed a gain from such a look."""
    data = np.asarray(list(values), dtype=float)
    cut = math.floor(trim * data.size) if data.size >= MIN_TO_TRIM else 0
    if cut == 0 or not np.isfinite(data).all():  # an infinite value is no value to cut
        return mean_interval(data, confidence, family)
    center, se, df = trimmed_standard_error(data, trim)
    alpha = (1 - confidence) / max(1, family)
    t = float(stats.t.ppf(1 - alpha / 2, df=df))
    return Interval(center, center - t * se, center + t * se, int(data.size), confidence, family)


def trimmed_standard_error(values: Iterable[float], trim: float = TRIM
                           ) -> tuple[float, float, int]:
    """The centre `trimmed_interval` uses, its standard error and the degrees of freedom of its
    Student t (the plain mean's below MIN_TO_TRIM values): what a caller projecting an interval
    to more values needs."""
    data = np.asarray(list(values), dtype=float)
    cut = math.floor(trim * data.size) if data.size >= MIN_TO_TRIM else 0
    if cut == 0 or not np.isfinite(data).all():
        se = float(data.std(ddof=1)) / math.sqrt(data.size) if data.size > 1 else math.inf
        return float(data.mean()), se, max(1, data.size - 1)
    return (float(stats.trim_mean(data, trim)),
            float(mstats.trimmed_stde(data, limits=(trim, trim))), data.size - 2 * cut - 1)


def systematic_half_width(systematic: float, confidence: float = 0.95,
                          selected_from: int = 1) -> float:
    """What a benchmark's systematic uncertainty alone adds to an interval's half-width (see
    `with_systematic`): no number of rounds brings a claim's interval below it, so a gain
    smaller than it cannot be claimed with that benchmark."""
    if not math.isfinite(systematic) or systematic < 0:
        raise ValueError(f"a systematic uncertainty is a finite value >= 0, not {systematic}")
    if systematic == 0:
        return 0.0
    alpha = (1 - confidence) / max(1, selected_from)
    return float(stats.norm.ppf(1 - alpha / 2)) * systematic


def systematic_text(systematic: float, note: str = "") -> str:
    """How an interval widened by a benchmark's systematic uncertainty says so (nothing when
    it was not widened); `note` (benchmarks/_fidelity.py) beginning "not measured": the value
    is a stand-in, and the text says so."""
    if systematic <= 0:
        return ""
    if note.startswith("not measured"):
        return (f", incl. a stand-in {systematic:.1%} uncertainty against IMB-MPI1 "
                f"({note.split(':', 1)[0]})")
    return f", incl. the benchmark's {systematic:.1%} uncertainty against IMB-MPI1"


def with_systematic(interval: Interval, systematic: float, selected_from: int = 1) -> Interval:
    """`interval` widened by a benchmark's systematic uncertainty: `systematic` is the standard
    uncertainty (log units) of what this benchmark reads for a configuration against what the
    reference benchmark (IMB-MPI1) reads, measured, not estimated from these values. It is
    combined with the interval's own half-width in quadrature, at the normal quantile of the
    interval's confidence held over `selected_from` configurations: the winner of several is
    likely one the benchmark happens to flatter, whatever the number of looks at its rounds
    (more rounds do not shrink a bias). Zero: the interval as it is."""
    extra = systematic_half_width(systematic, interval.confidence, selected_from)
    if extra == 0 or not math.isfinite(interval.half_width):
        return interval
    half = math.hypot(interval.half_width, extra)
    center = (interval.low + interval.high) / 2
    return Interval(interval.mean, center - half, center + half, interval.n,
                    interval.confidence, interval.family)
