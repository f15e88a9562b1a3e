"""Intervals of means of few values: Student t, widened for families of intervals; the trimmed
mean's (Yuen) for round scores with a few far off."""
import math

import pytest
from scipy import stats

from autotune.stats import MIN_TO_TRIM, mean_interval, trimmed_interval, with_systematic


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


# The round scores (log-ratio to the default, per round) of plain pml=ucx in a kernel-path quick
# start on 2026-11-28: 16 of 20 within -0.26..0.00, and four rounds with a disturbed launch.
KERNEL_ROUNDS = [-0.15, -0.17, -0.00, -0.25, -0.26, -0.11, 0.00, -0.62, -0.21, 0.19,
                 0.46, -0.17, -0.24, -0.14, -0.24, -0.19, -0.20, -0.18, 0.51, -0.18]


def test_trimmed_interval_is_yuens():
    """Textbook arithmetic, done here without scipy's trimmed helpers: cut g = 4 of 20 on each
    side, winsorize them, se = s_w / (0.6 sqrt(20)), t with 20 - 8 - 1 degrees of freedom."""
    data = sorted(KERNEL_ROUNDS)
    kept = data[4:16]
    winsorized = [data[4]] * 4 + kept + [data[15]] * 4
    center = sum(kept) / len(kept)
    mean_w = sum(winsorized) / 20
    s_w = math.sqrt(sum((v - mean_w) ** 2 for v in winsorized) / 19)
    half = stats.t.ppf(0.975, df=11) * s_w / (0.6 * math.sqrt(20))
    interval = trimmed_interval(KERNEL_ROUNDS)
    assert interval.mean == pytest.approx(center)
    assert interval.low == pytest.approx(center - half)
    assert interval.high == pytest.approx(center + half)


def test_a_few_disturbed_rounds_do_not_hide_a_gain_seen_in_most():
    """Simultaneous over 9 intervals, as in a confirmation of 3 candidates over 3 looks: the
    mean's interval reaches past 0 (the default kept), the trimmed mean's does not."""
    plain = mean_interval(KERNEL_ROUNDS, family=9)
    trimmed = trimmed_interval(KERNEL_ROUNDS, family=9)
    assert plain.low < 0 < plain.high
    assert trimmed.high < 0
    speedup, slow, fast = trimmed.speedup()
    assert 1.1 < speedup < 1.25 and 1.0 < slow < speedup < fast


def test_few_values_are_not_trimmed():
    """Of 5 values the winsorized spread would rest on the middle three: these (a replayed A/A
    look) agree to 0.001 and would claim a gain from rounds that scatter by 0.06."""
    look = [-0.007, -0.006, 0.032, -0.033, -0.007]
    assert trimmed_interval(look, family=6) == mean_interval(look, family=6)
    assert not trimmed_interval(look, family=6).excludes(0.0)
    values = KERNEL_ROUNDS[:MIN_TO_TRIM - 1]
    assert trimmed_interval(values) == mean_interval(values)
    ten = KERNEL_ROUNDS[:MIN_TO_TRIM]
    assert trimmed_interval(ten) != mean_interval(ten)


def test_a_family_widens_the_trimmed_interval():
    one, nine = trimmed_interval(KERNEL_ROUNDS), trimmed_interval(KERNEL_ROUNDS, family=9)
    assert nine.low < one.low and nine.high > one.high and nine.mean == one.mean


def test_fourteen_values_cut_two_on_each_side():
    """g = floor(0.2 * 14) = 2 values cut per side, 14 - 4 - 1 = 9 degrees of freedom; scipy's
    standard error divides by the nominal 0.6 sqrt(14) (Wilcox's trimse)."""
    data = sorted(KERNEL_ROUNDS[:14])
    kept = data[2:12]
    winsorized = [data[2]] * 2 + kept + [data[11]] * 2
    mean_w = sum(winsorized) / 14
    s_w = math.sqrt(sum((v - mean_w) ** 2 for v in winsorized) / 13)
    half = stats.t.ppf(0.975, df=9) * s_w / (0.6 * math.sqrt(14))
    interval = trimmed_interval(KERNEL_ROUNDS[:14])
    assert interval.mean == pytest.approx(sum(kept) / 10)
    assert interval.high - interval.mean == pytest.approx(half)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_an_infinite_value_is_not_trimmed_away():
    values = KERNEL_ROUNDS[:19] + [math.inf]
    assert not trimmed_interval(values).excludes(0.0)


def test_a_systematic_uncertainty_adds_in_quadrature_at_the_selection_level():
    """A benchmark's bias against IMB-MPI1 widens the interval by z * systematic in quadrature,
    z held over the candidates it was picked from (not over the looks: rounds do not shrink a
    bias); the centre stays."""
    rounds = trimmed_interval([-0.2, -0.22, -0.19, -0.21, -0.2, -0.23, -0.18, -0.2, -0.21,
                               -0.2, -0.22, -0.19], family=9)
    wide = with_systematic(rounds, 0.03, selected_from=3)
    z = stats.norm.ppf(1 - 0.05 / 3 / 2)
    assert wide.half_width == pytest.approx(math.hypot(rounds.half_width, z * 0.03))
    assert wide.mean == rounds.mean and wide.family == rounds.family
    assert with_systematic(rounds, 0.03).half_width < wide.half_width
    assert with_systematic(rounds, 0.0) == rounds


def test_an_unbounded_interval_stays_unbounded_with_a_systematic():
    one = mean_interval([-0.2])
    assert with_systematic(one, 0.03) == one
