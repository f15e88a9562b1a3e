"""StoredVerification: the independent check as stored in a real SQLite study, and what a garbled
one gives (one StorageError naming the place, never a KeyError or TypeError)."""

from __future__ import annotations

import pytest

from autotune.errors import StorageError
from autotune.storage import (STUDY_KEYS, VERIFICATION_ATTR, StoredVerification, VerifiedSize,
                              stored_verification)
from tests.storage import new_study, reload

CHECK = StoredVerification(
    benchmark="IMB-MPI1 (/opt/imb/IMB-MPI1)", independent=True, trial=3, rounds=20,
    rounds_measured=19, speedup=1.04, speedup_interval=(0.98, 1.10),
    sizes=(VerifiedSize(8, 1.02, (0.97, 1.07)), VerifiedSize(1024, 1.06, (1.0, 1.12))),
    round_scores=(-0.04, -0.03), search_speedup=1.12, search_interval=(1.03, 1.21), agrees=True,
    finished=1000.0, argv=("mpirun", "-np", "2", "/opt/imb/IMB-MPI1"))


def test_key_is_a_study_key():
    assert VERIFICATION_ATTR == "autotune.verification" and VERIFICATION_ATTR in STUDY_KEYS


def test_round_trip_through_sqlite(tmp_path):
    study = new_study(tmp_path)
    assert stored_verification(study) is None
    study.set_user_attr(VERIFICATION_ATTR, CHECK.to_dict())
    assert stored_verification(reload(study, tmp_path)) == CHECK
    failed = StoredVerification(benchmark="mpi4py kernel", independent=False, trial=3, rounds=20,
                                failed="0 of 20 rounds measured")
    study.set_user_attr(VERIFICATION_ATTR, failed.to_dict())
    assert stored_verification(reload(study, tmp_path)) == failed


def test_describe_puts_both_figures_side_by_side():
    assert CHECK.label == "IMB-MPI1"
    assert CHECK.describe() == ("independent check (IMB-MPI1, 19 rounds): speedup 1.04x (95% CI "
                                "0.98x..1.10x) \u2014 does not contradict the search (1.12x, "
                                "1.03x..1.21x), but cannot tell a gain from none at this many "
                                "rounds")
    against = StoredVerification(**{**CHECK.__dict__, "agrees": False, "independent": False,
                                    "benchmark": "mpi4py kernel", "search_interval": None})
    assert against.disagrees
    assert against.describe().endswith("disagrees with the search (1.12x): the untuned stack is "
                                       "recommended; the same benchmark as the search, so not "
                                       "independent")
    failed = StoredVerification(benchmark="IMB-MPI1 (x)", independent=True, trial=1, rounds=5,
                                failed="3 launches failed")
    assert failed.describe() == "independent check (IMB-MPI1): failed (3 launches failed)"
    assert not failed.disagrees


@pytest.mark.parametrize("change, where", [
    ({"trial": "three"}, "trial"),
    ({"speedup": "fast"}, "speedup"),
    ({"speedup_interval": [1.0]}, "speedup_interval"),
    ({"speedup_interval": [1.2, 1.0]}, "speedup_interval"),
    ({"sizes": [{"size": 8, "speedup": 1.0}]}, "sizes[0]"),
    ({"sizes": [{"size": "8 B", "speedup": 1.0, "speedup_interval": [0.9, 1.1]}]}, "sizes[0]"),
    ({"agrees": "yes"}, "agrees"),
    ({"argv": ["mpirun", 2]}, "argv"),
    ({"round_scores": {"0": 1}}, "round_scores"),
])
def test_garbled_verification_is_one_storage_error(tmp_path, change, where):
    study = new_study(tmp_path)
    study.set_user_attr(VERIFICATION_ATTR, {**CHECK.to_dict(), **change})
    with pytest.raises(StorageError, match=rf"{VERIFICATION_ATTR}.*{where.replace('[', '.')}"):
        stored_verification(study)
    study.set_user_attr(VERIFICATION_ATTR, ["not", "a", "mapping"])
    with pytest.raises(StorageError, match="not a mapping"):
        stored_verification(study)
