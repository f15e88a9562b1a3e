"""The private Slurm cluster (tests/slurmbed.py) as a fixture, for the tests that need a real one."""

from __future__ import annotations

import pytest

from tests.slurmbed import SlurmMissing, ours, private_cluster


@pytest.fixture
def cluster(tmp_path):
    """A one-node Slurm cluster of its own (this machine): the environment that reaches it."""
    where = tmp_path / "slurm"
    try:
        with private_cluster(where) as env:
            yield env
    except SlurmMissing as exc:
        pytest.fail(str(exc))
    assert not where.exists()
    assert not [p for p in ours("slurmctld|slurmd|munged|slurmstepd") if str(where) in p]
