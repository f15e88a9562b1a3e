"""The noise floor: how far two launches of the default differ, from the interleaved defaults."""
import math

import pytest

from autotune.noise import aa_scores, noise_floor_of
from autotune.storage import BaselineLaunch

WEIGHTS = {8: 0.5, 1024: 0.5}


def launch(i, t8, t1k, block=0, run="r", hosts=("a",)):
    return BaselineLaunch(id=i, run_id=run, block=block, started=float(i), seconds=0.1,
                          t_max_us={8: t8, 1024: t1k}, hosts=list(hosts))


def test_pairs_are_consecutive_launches_of_one_block_run_and_hosts():
    launches = [launch(0, 1.0, 10.0), launch(1, 1.1, 11.0), launch(2, 1.0, 10.0, block=1),
                launch(3, 1.0, 10.0, run="other"), launch(4, 1.21, 12.1),
                launch(5, 9.0, 90.0, hosts=("b",))]
    scores = aa_scores(launches, WEIGHTS)
    assert scores == pytest.approx([math.log(1.1), math.log(1.1)])


def test_floor_is_the_95th_percentile_of_absolute_pair_scores():
    ratios = [1.0, 1.02, 0.98, 1.05, 1.0, 0.9, 1.01, 0.99, 1.03, 1.0, 0.97]
    t, launches = 1.0, [launch(0, 1.0, 10.0)]
    for i, r in enumerate(ratios, start=1):
        t *= r
        launches.append(launch(i, t, 10 * t))
    floor = noise_floor_of(launches, WEIGHTS)
    assert floor is not None and floor.pairs == len(ratios)
    expected = sorted(abs(math.log(r)) for r in ratios)
    assert expected[-2] < floor.spread <= expected[-1]  # between the two largest of 11
    assert floor.covers(1.05) and not floor.covers(1.2)
    assert "noise floor" in floor.describe() and f"{floor.percent:.1f}%" in floor.describe()


def test_too_few_pairs_give_no_floor():
    assert noise_floor_of([launch(i, 1, 10) for i in range(10)], WEIGHTS) is None  # 9 pairs
