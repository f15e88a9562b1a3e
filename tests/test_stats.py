"""Intervals of means of few values: Student t, widened for families of intervals."""
import math

import pytest
from scipy import stats

from autotune.stats import mean_interval


def test_mean_interval_is_student_t():
    values = [-0.2, -0.25, -0.18, -0.22, -0.21]
    interval = mean_interval(values)
    low, high = stats.t.interval(0.95, df=4, loc=sum(values) / 5, scale=stats.sem(values))
    assert interval.low == pytest.approx(low) and interval.high == pytest.approx(high)
    assert interval.n == 5 and interval.excludes(0.0)


def test_the_five_rounds_that_made_a_false_claim_do_not_exclude_zero():
    # issue 12: a percentile bootstrap over these made "1.342x (95% CI 1.011x..1.726x)"
    interval = mean_interval([0.18, -0.46, -0.06, -0.52, -0.62])
    assert interval.low < 0 < interval.high
    speedup, slow, fast = interval.speedup()
    assert slow < 1.0 < fast and slow < speedup < fast


def test_a_family_widens_each_interval():
    values = [0.01, -0.03, -0.02, 0.0, -0.04, -0.01]
    one, nine = mean_interval(values), mean_interval(values, family=9)
    assert nine.low < one.low and nine.high > one.high and nine.mean == one.mean


def test_one_value_claims_nothing():
    interval = mean_interval([-0.5])
    assert math.isinf(interval.low) and math.isinf(interval.high) and not interval.excludes(0.0)
    with pytest.raises(ValueError):
        mean_interval([])
