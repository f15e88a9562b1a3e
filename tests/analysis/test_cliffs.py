"""Protocol cliffs (seeds/003): throughput falling between neighbouring sizes beyond the noise."""

from __future__ import annotations

import pytest

from autotune.analysis import DEFAULT_NOISE, MIN_NOISE, Curve, find_cliffs
from autotune.errors import InputError

SIZES = tuple(2**k for k in range(4, 21))


def hockney(size, t_l=2.0, bandwidth=5000.0):
    return t_l + size / bandwidth


def test_a_smooth_hockney_curve_has_no_cliff():
    curve = Curve("smooth", (0,) + SIZES, (0.1,) + tuple(hockney(s) for s in SIZES))
    assert find_cliffs(curve, "bcast", 2) == []


def test_a_protocol_switch_that_costs_throughput_is_a_cliff():
    t = tuple(hockney(s) if s < 65536 else 3 * hockney(s) for s in SIZES)
    (cliff,) = find_cliffs(Curve("switch", SIZES, t), "allreduce", 4)
    assert (cliff.before_bytes, cliff.after_bytes) == (32768, 65536)
    before, after = 2 * 32768 / hockney(32768), 2 * 65536 / (3 * hockney(65536))
    assert cliff.throughput_before_mb_s == pytest.approx(before)
    assert cliff.throughput_after_mb_s == pytest.approx(after)
    assert cliff.drop == pytest.approx(1 - after / before)
    assert cliff.noise == DEFAULT_NOISE
    assert (cliff.t_before_us, cliff.t_after_us) == (t[SIZES.index(32768)], t[SIZES.index(65536)])


def test_a_drop_within_the_noise_is_not_a_cliff_unless_the_noise_is_smaller():
    # sizes double, time grows 2.06x: throughput falls 3% (below the 5% default)
    curve = Curve("small", (1024, 2048, 4096), (10.0, 20.6, 41.0))
    assert find_cliffs(curve, "bcast", 2) == []
    cliffs = find_cliffs(curve, "bcast", 2, noise=0.01)
    assert [(c.before_bytes, c.after_bytes, c.noise) for c in cliffs] == [(1024, 2048, 0.01)]
    with pytest.raises(InputError, match="fraction"):
        find_cliffs(curve, "bcast", 2, noise=1.5)


def test_the_band_sets_the_noise_pair_by_pair():
    t = (10.0, 22.0)  # sizes double, throughput falls 9%
    wide = Curve("wide", (1024, 2048), t, low_us=(9.5, 20.9), high_us=(10.5, 23.1))  # 5% + 5%
    assert find_cliffs(wide, "bcast", 2) == []  # the intervals overlap: not a cliff
    narrow = Curve("narrow", (1024, 2048), t, low_us=(9.9, 21.78), high_us=(10.1, 22.22))
    (cliff,) = find_cliffs(narrow, "bcast", 2)
    assert cliff.noise == pytest.approx(0.02)  # 1% + 1% half-widths
    exact = Curve("exact", (1024, 2048), (10.0, 20.1), low_us=(10.0, 20.1), high_us=(10.0, 20.1))
    assert find_cliffs(exact, "bcast", 2) == []  # a 0.5% fall stays under MIN_NOISE
    assert find_cliffs(exact, "bcast", 2, noise=0.001)[0].noise == 0.001
    assert MIN_NOISE == 0.01


def test_seed003_zero_copy_cliffs_are_found():
    """seeds/003 (SCore MPI, throughput in B/s): intra-node with zero-copy falls 70% between 1 MB
    and 2 MB; inter-node with zero-copy off falls 8% between 30 MB and 40 MB."""
    intra = {921600: 2.27e9, 1048576: 2.34e9, 2097152: 7.03e8, 3145728: 7.37e8, 4194304: 7.71e8}
    inter_off = {10485760: 1.31e8, 20971520: 1.31e8, 31457280: 1.31e8, 41943040: 1.22e8,
                 52428800: 1.31e8, 62914560: 1.30e8, 73400320: 1.31e8}
    for table, expected in ((intra, [(1048576, 2097152)]), (inter_off, [(31457280, 41943040)])):
        sizes = tuple(sorted(table))
        curve = Curve("seed003", sizes, tuple(s / table[s] * 1e6 for s in sizes))
        cliffs = find_cliffs(curve, "pingpong", 2)
        assert [(c.before_bytes, c.after_bytes) for c in cliffs] == expected
        assert cliffs[0].throughput_before_mb_s == pytest.approx(table[expected[0][0]] / 1e6)


def test_sizes_without_throughput_are_stepped_over():
    curve = Curve("gaps", (0, 8, 16, 32), (0.5, 1.0, 0.0, 6.0))  # IMB printed 0.00 at 16 B
    (cliff,) = find_cliffs(curve, "bcast", 2)
    assert (cliff.before_bytes, cliff.after_bytes) == (8, 32)  # 8 MB/s -> 5.3 MB/s
    assert cliff.drop == pytest.approx(1 - (32 / 6.0) / 8.0)
