"""Choosing bands from per-size rounds: synthetic rounds with known truth and noise."""
import math

import numpy as np

from autotune.rules import AlgorithmChoice
from autotune.rules._select import per_size_choice, plan_bands, rule_set

SIZES = [2**k for k in range(3, 21)]


def rounds(truth, noise, n=5, seed=1):
    rng = np.random.default_rng(seed)
    return {v: {s: list(truth(v, s) + rng.normal(0, noise, n)) for s in SIZES} for v in range(3)}


def three_regimes(v, s):
    base = math.log(1 + s / 1000)
    if v == 0:
        return base + (0.0 if s < 8192 else 0.3)
    if v == 1:
        return base + (0.2 if s < 65536 else 0.0)
    return base + (0.1 if (s < 8192 or s >= 65536) else -0.1)


CHOICES = {0: AlgorithmChoice(3), 1: AlgorithmChoice(4), 2: AlgorithmChoice(5, segsize=4096)}


def bands_of(log_t, incumbent):
    choices = per_size_choice(log_t, SIZES, incumbent)
    plan = plan_bands(choices, log_t, incumbent)
    return rule_set(plan, SIZES, CHOICES, stack="openmpi", collective="allreduce", comm_size=2)


def test_three_regimes_give_three_bands_with_boundaries_between_the_measured_sizes():
    rules = bands_of(rounds(three_regimes, 0.03), incumbent=1)
    assert [(b.min_bytes, b.choice.algorithm) for b in rules.bands] == [
        (0, 3), (math.ceil(math.sqrt(4096 * 8192)), 5), (math.ceil(math.sqrt(32768 * 65536)), 4)]


def test_pure_noise_seldom_leaves_the_incumbent():
    """Three equal variants, 20% noise per launch, 4 rounds: a band other than the incumbent's
    is a false one. The composed rules are still measured against the incumbent before they are
    used; this keeps that measurement from being spent on noise."""
    false = 0
    for seed in range(100):
        rules = bands_of(rounds(lambda v, s: math.log(1 + s / 1000), 0.2, n=4, seed=seed),
                         incumbent=2)
        false += [b.choice.algorithm for b in rules.bands] != [5]
    assert false <= 8, f"{false}/100 noise-only runs gave other bands"


def test_a_variant_that_wins_no_size_never_takes_a_band():
    # variant 1 is a little better on average everywhere but never surely: it must not appear
    def truth(v, s):
        return math.log(1 + s / 1000) - (0.01 if v == 1 else 0.0) + (0.5 if v == 0 and s > 4096 else 0)
    rules = bands_of(rounds(truth, 0.2, seed=3), incumbent=2)
    assert 4 not in [b.choice.algorithm for b in rules.bands]


def test_one_outlier_size_is_absorbed_within_the_penalty():
    # variant 0 wins only at one mid size, by 3% of one size's weight: not worth a band
    def truth(v, s):
        return math.log(1 + s / 1000) + (0.0 if v == 1 else 0.4) - (0.45 if v == 0 and s == 4096 else 0)
    rules = bands_of(rounds(truth, 0.01), incumbent=1)
    assert [b.choice.algorithm for b in rules.bands] == [4]
