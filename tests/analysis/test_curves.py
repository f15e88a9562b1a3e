"""Curves and the seeds/001 volume model: effective bytes, throughput, noise."""

from __future__ import annotations

import pytest

from autotune.analysis import (DEFAULT_NOISE, MIN_NOISE, Curve, collective_name, curve_noise,
                               effective_bytes, throughput_mb_s, volume_formula)
from autotune.errors import InputError


def test_effective_bytes_follow_seed001_and_the_documented_choices():
    assert effective_bytes("allreduce", 1024, 8) == 2048  # reduce + bcast: 2M (seeds/001 4.2.4)
    assert effective_bytes("allgather", 1024, 8) == 8192  # every rank's block: M*np (4.2.5)
    assert effective_bytes("alltoall", 1024, 8) == 8192
    assert effective_bytes("bcast", 1024, 8) == 1024
    assert effective_bytes("reduce", 1024, 8) == 1024
    assert effective_bytes("sendrecv", 1024, 2) == 2048  # IMB's own Mbytes/sec convention
    assert effective_bytes("exchange", 1024, 2) == 4096
    assert effective_bytes("barrier", 0, 8) == 0


@pytest.mark.parametrize("name", ["Iallreduce", "iallreduce", "Allreduce", "Iallreduce_pure",
                                  " ALLREDUCE "])
def test_nonblocking_and_imb_names_move_what_the_blocking_collective_moves(name):
    assert collective_name(name) == "allreduce"
    assert effective_bytes(name, 100, 4) == 200
    assert volume_formula(name) == "2M"


def test_volume_formulas():
    assert volume_formula("allgather") == "M*np"
    assert volume_formula("ibcast") == "M"
    assert volume_formula("exchange") == "4M"


def test_unknown_collective_and_bad_process_counts_are_input_errors():
    assert collective_name("Uniband") is None
    with pytest.raises(InputError, match="no effective-bytes model for collective 'uniband'"):
        effective_bytes("uniband", 8, 2)
    with pytest.raises(InputError, match="0 processes"):
        effective_bytes("allreduce", 8, 0)


def test_throughput_is_effective_bytes_per_microsecond_and_none_at_size_zero():
    curve = Curve("c", (0, 1000, 4000), (1.0, 2.0, 4.0))
    assert throughput_mb_s(curve, "allreduce", 2) == (None, 1000.0, 2000.0)
    assert throughput_mb_s(curve, "allgather", 4) == (None, 2000.0, 4000.0)
    assert throughput_mb_s(Curve("z", (8,), (0.0,)), "bcast", 2) == (None,)  # IMB's "0.00"


@pytest.mark.parametrize("kwargs, text", [
    ({"sizes": (8, 4), "t_us": (1.0, 1.0)}, "ascending"),
    ({"sizes": (4, 4), "t_us": (1.0, 1.0)}, "ascending"),
    ({"sizes": (4, 8), "t_us": (1.0,)}, "2 sizes but 1 times"),
    ({"sizes": (-4, 8), "t_us": (1.0, 1.0)}, "integers >= 0"),
    ({"sizes": (4, 8), "t_us": (1.0, float("nan"))}, "finite"),
    ({"sizes": (4, 8), "t_us": (1.0, -1.0)}, "finite and >= 0"),
    ({"sizes": (4, 8), "t_us": (1.0, 2.0), "low_us": (1.0, 2.0)}, "needs both"),
    ({"sizes": (4, 8), "t_us": (1.0, 2.0), "low_us": (1.0,), "high_us": (1.0, 2.0)},
     "low_us has 1 values"),
])
def test_malformed_curves_are_refused(kwargs, text):
    with pytest.raises(InputError, match=text):
        Curve("bad", **kwargs)


def test_noise_comes_from_the_band_else_the_default():
    plain = Curve("p", (8, 16, 32), (1.0, 2.0, 4.0))
    assert curve_noise(plain) == DEFAULT_NOISE
    assert curve_noise(plain, 0.2) == 0.2
    banded = Curve("b", (8, 16, 32), (1.0, 2.0, 4.0), low_us=(0.9, 1.8, 3.8),
                   high_us=(1.1, 2.2, 4.2))
    assert curve_noise(banded) == pytest.approx(0.1)  # median of 10%, 10%, 5% half-widths
    tight = Curve("t", (8, 16), (1.0, 2.0), low_us=(1.0, 2.0), high_us=(1.0, 2.0))
    assert curve_noise(tight) == MIN_NOISE  # one repetition: a zero-width band is not trusted
    for bad in (0, 1, -0.1, float("inf")):
        with pytest.raises(InputError, match="fraction"):
            curve_noise(plain, bad)


def test_numpy_and_list_values_become_plain_tuples():
    import numpy as np

    curve = Curve("np", np.array([0, 8, 16]), [np.float64(0.5), 1, 2.5],
                  low_us=np.array([0.4, 0.9, 2.4]), high_us=[0.6, 1.1, 2.6])
    assert curve.sizes == (0, 8, 16) and type(curve.sizes[1]) is int
    assert curve.t_us == (0.5, 1.0, 2.5) and type(curve.t_us[0]) is float
    assert curve.high_us == (0.6, 1.1, 2.6)
    with pytest.raises(InputError, match="integers"):
        Curve("f", (8.5, 16), (1.0, 2.0))
    with pytest.raises(InputError, match="t_us must be numbers"):
        Curve("s", (8, 16), ("fast", 2.0))
