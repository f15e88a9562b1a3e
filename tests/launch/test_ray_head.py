"""Calls that need the Ray head are bounded: with the head gone, Ray would block until it comes
back (tests/launch/test_ray.py kills a real head)."""
import threading
import time

import pytest

from autotune.errors import ClusterLost
from autotune.launch import _ray_head as raynodes


def test_a_call_the_head_does_not_answer_is_a_lost_cluster(monkeypatch):
    monkeypatch.setattr(raynodes, "HEAD_CALL_SECONDS", 0.2)
    release = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(ClusterLost, match="did not answer wait within 0.2 s"):
        raynodes.ask_head(release.wait)
    assert time.monotonic() - t0 < 2.0
    release.set()


def test_answers_and_errors_come_back_to_the_caller():
    assert raynodes.ask_head(sorted, [3, 1], reverse=True) == [3, 1]
    with pytest.raises(ZeroDivisionError):
        raynodes.ask_head(lambda: 1 / 0)
