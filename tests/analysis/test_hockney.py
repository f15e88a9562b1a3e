"""Hockney fits (seeds/001): robust per region, boundaries where the protocol switches."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from autotune.analysis import Curve, HockneyFit, HockneyRegion, fit_hockney
from autotune.analysis import _hockney
from autotune.errors import InputError

SIZES = tuple(2**k for k in range(23))  # 1 B .. 4 MiB, as IMB's -msglog 0:22


def times(model, jitter=0.0, seed=0, sizes=SIZES):
    """t(size) with multiplicative Gaussian noise of relative sd `jitter`."""
    rng = np.random.default_rng(seed)
    return tuple(float(model(s) * (1.0 + jitter * rng.standard_normal())) for s in sizes)


def line(t_l, bandwidth):
    return lambda size: t_l + size / bandwidth


def two_protocols(size):
    """Eager up to 8 KiB (low latency, 2 GB/s), rendezvous from 16 KiB (6 us, 10 GB/s)."""
    return 0.5 + size / 2000.0 if size <= 8192 else 6.0 + size / 10000.0


def summary(fit):
    return [(r.min_bytes, r.max_bytes) for r in fit.regions]


def test_a_clean_line_is_one_region_with_its_parameters():
    fit = fit_hockney(Curve("clean", SIZES, times(line(2.0, 5000.0))), "bcast", 2)
    assert summary(fit) == [(1, 4 * 2**20)]
    (region,) = fit.regions
    assert region.t_latency_us == pytest.approx(2.0, rel=1e-4)
    assert region.bandwidth_mb_s == pytest.approx(5000.0, rel=1e-4)
    assert region.m_half_bytes == pytest.approx(10000.0, rel=1e-3)  # M_half = B * t_L
    assert region.points == 23


@pytest.mark.parametrize("seed", range(6))
def test_a_noisy_line_stays_one_region(seed):
    fit = fit_hockney(Curve("noisy", SIZES, times(line(2.0, 5000.0), 0.02, seed)), "bcast", 2)
    assert len(fit.regions) == 1, summary(fit)
    assert fit.regions[0].bandwidth_mb_s == pytest.approx(5000.0, rel=0.05)
    assert fit.regions[0].t_latency_us == pytest.approx(2.0, rel=0.05)


def _least_squares(t):
    """Ordinary least squares, (t_L, B): of the same relative model (1 ~ [1/t, M/t]) and of the
    plain absolute one (t ~ M)."""
    t = np.asarray(t)
    x = np.asarray(SIZES, dtype=float)
    rel = LinearRegression(fit_intercept=False).fit(np.column_stack([1 / t, x / t]),
                                                    np.ones(len(t))).coef_
    absolute = LinearRegression().fit(x[:, None], t)
    return [(rel[0], 1 / rel[1]), (absolute.intercept_, 1 / absolute.coef_[0])]


@pytest.mark.parametrize("index, factor", [(16, 0.3), (18, 0.3), (20, 3.0)])
def test_one_outlier_size_does_not_bend_the_fit_where_least_squares_bends(index, factor):
    t = list(times(line(2.0, 5000.0), 0.01, seed=3))
    t[index] *= factor  # one size measured 3x too slow, or far too fast
    fit = fit_hockney(Curve("outlier", SIZES, tuple(t)), "bcast", 2)
    assert len(fit.regions) == 1, summary(fit)  # one size never makes a region
    region = fit.regions[0]
    assert region.bandwidth_mb_s == pytest.approx(5000.0, rel=0.03)
    assert region.t_latency_us == pytest.approx(2.0, rel=0.03)
    bent = [max(abs(b / 5000.0 - 1), abs(t_l / 2.0 - 1)) for t_l, b in _least_squares(t)]
    assert max(bent) > 0.3, bent  # least squares follows the outlier


def test_two_protocols_get_their_boundary_at_the_switch():
    fit = fit_hockney(Curve("two", SIZES, times(two_protocols)), "bcast", 2)
    assert summary(fit) == [(1, 8192), (16384, 4 * 2**20)]
    eager, rndv = fit.regions
    assert (eager.t_latency_us, eager.bandwidth_mb_s) == (pytest.approx(0.5, rel=1e-3),
                                                          pytest.approx(2000, rel=1e-3))
    assert (rndv.t_latency_us, rndv.bandwidth_mb_s) == (pytest.approx(6.0, rel=1e-3),
                                                        pytest.approx(10000, rel=1e-3))
    assert fit.predict_us(4096) == pytest.approx(two_protocols(4096), rel=1e-3)
    assert fit.predict_us(2**20) == pytest.approx(two_protocols(2**20), rel=1e-3)


@pytest.mark.parametrize("seed", range(4))
def test_the_boundary_survives_noise_and_an_outlier(seed):
    t = list(times(two_protocols, 0.02, seed))
    t[3] *= 3.0
    fit = fit_hockney(Curve("two+", SIZES, tuple(t)), "bcast", 2)
    assert summary(fit) == [(1, 8192), (16384, 4 * 2**20)]


def test_three_protocols_and_the_region_limit():
    def model(size):
        if size <= 256:
            return 1.0 + size / 500.0
        return 3.0 + size / 4000.0 if size <= 65536 else 30.0 + size / 12000.0

    curve = Curve("three", SIZES, times(model))
    assert summary(fit_hockney(curve, "bcast", 2)) == [(1, 256), (512, 65536),
                                                       (131072, 4 * 2**20)]
    assert len(fit_hockney(curve, "bcast", 2, max_regions=2).regions) == 2
    assert len(fit_hockney(curve, "bcast", 2, max_regions=1).regions) == 1
    short = fit_hockney(curve, "bcast", 2, min_points=9)
    assert all(r.points >= 9 for r in short.regions)


def test_bandwidth_is_in_effective_bytes():
    """allgather moves M*np (seeds/001): B and M_half are those of the effective volume."""
    nprocs = 8
    curve = Curve("ag", SIZES, times(lambda s: 3.0 + s * nprocs / 12000.0))
    (region,) = fit_hockney(curve, "allgather", nprocs).regions
    assert region.bandwidth_mb_s == pytest.approx(12000.0, rel=1e-3)
    assert region.m_half_bytes == pytest.approx(36000.0, rel=1e-3)
    (region,) = fit_hockney(curve, "bcast", nprocs).regions
    assert region.bandwidth_mb_s == pytest.approx(1500.0, rel=1e-3)


def test_latency_bound_region_has_unbounded_bandwidth():
    """Time that does not grow with size: slope clamped to 0, B = M_half = inf, t_L the level."""
    sizes = (4, 8, 16, 32)
    fit = fit_hockney(Curve("flat", sizes, (8.2, 8.1, 8.1, 8.0)), "allreduce", 2)
    (region,) = fit.regions
    assert math.isinf(region.bandwidth_mb_s) and math.isinf(region.m_half_bytes)
    assert region.t_latency_us == pytest.approx(8.1, abs=0.06)
    assert fit.predict_us(1024) == pytest.approx(region.t_latency_us)


def test_negative_latency_is_refitted_through_the_origin():
    sizes = (65536, 131072, 262144, 524288)
    t = tuple(-5.0 + s / 1000.0 for s in sizes)  # the free line crosses zero below 0 bytes
    (region,) = fit_hockney(Curve("neg", sizes, t), "bcast", 2).regions
    assert region.t_latency_us == 0.0 and region.m_half_bytes == 0.0
    assert 900 < region.bandwidth_mb_s < 1100


def test_size_zero_and_zero_times_are_skipped_and_predict_handles_them():
    t = (0.05,) + times(line(2.0, 5000.0))[1:]
    fit = fit_hockney(Curve("z", (0,) + SIZES[1:], t), "bcast", 2)
    assert fit.regions[0].min_bytes == 2 and fit.regions[0].points == 22
    assert fit.predict_us(0) == pytest.approx(2.0, rel=1e-3)


def test_predict_uses_the_region_in_force():
    regions = (HockneyRegion(8, 1024, 1.0, 1000.0, 1000.0, 8),
               HockneyRegion(4096, 65536, 10.0, 4000.0, 40000.0, 5))
    fit = HockneyFit("f", "allreduce", 4, regions)
    assert fit.predict_us(1) == pytest.approx(1.0 + 2 / 1000)  # below the first: the first
    assert fit.predict_us(1024) == pytest.approx(1.0 + 2048 / 1000)
    assert fit.predict_us(2048) == pytest.approx(1.0 + 4096 / 1000)  # between: the lower one
    assert fit.predict_us(8192) == pytest.approx(10.0 + 16384 / 4000)
    assert fit.predict_us(2**20) == pytest.approx(10.0 + 2**21 / 4000)


def test_unfittable_curves_are_input_errors():
    with pytest.raises(InputError, match="at least 2 sizes"):
        fit_hockney(Curve("one", (0, 8), (0.1, 1.0)), "bcast", 2)
    with pytest.raises(InputError, match="no payload"):
        fit_hockney(Curve("b", (4, 8), (1.0, 1.0)), "barrier", 2)
    with pytest.raises(InputError, match="max_regions"):
        fit_hockney(Curve("c", SIZES, times(line(1, 1))), "bcast", 2, max_regions=0)
    with pytest.raises(InputError, match="no effective-bytes model"):
        fit_hockney(Curve("c", SIZES, times(line(1, 1))), "uniband", 2)


@pytest.mark.parametrize("seed", range(3))
def test_the_pruned_search_finds_the_cheapest_split(seed):
    """The bound-pruned search equals scoring every split (the exhaustive definition)."""
    rng = np.random.default_rng(seed)
    sizes = SIZES[:14]
    x = np.array(sizes, dtype=float)
    t = np.array([two_protocols(s) for s in sizes]) * (1 + 0.1 * rng.standard_normal(14))
    t = np.abs(t) + 0.1
    chosen = [(i, j) for i, j, _ in _hockney._best_split(x, t, 0.05, 3, 3)]

    def total(split):
        return sum(_hockney._cost(_hockney._fit_line(x[i:j], t[i:j]), x[i:j], t[i:j], 0.05)
                   for i, j in split) + _hockney.REGION_PENALTY * (len(split) - 1)

    best = min(total(s) for s in _hockney._splits(14, 3, 3))
    assert total(chosen) == pytest.approx(best)
