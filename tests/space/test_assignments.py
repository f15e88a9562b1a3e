from autotune.space import assignments
from autotune.space._model import Parameter


def test_the_full_grid_follows_conditions_and_counts_integer_ranges():
    alg = Parameter(name="alg", apply="mca", type="choice", default=0, choices=(0, 5))
    seg = Parameter(name="seg", apply="mca", type="choice", default=0, choices=(0, 1024),
                    when=(("alg", (5,)),))
    reps = Parameter(name="reps", apply="env", type="int", default=1, low=1, high=3)
    nps = Parameter(name="nps", apply="context", type="choice", default=1, choices=(1, 2, 4))
    points = list(assignments([alg, seg, reps, nps], {"nps": 4}))
    assert len(points) == (1 + 2) * 3  # seg only under alg 5; nps is the allocation's, not a knob
    assert {"alg": 0, "reps": 2, "nps": 4} in points
    assert {"alg": 5, "seg": 1024, "reps": 3, "nps": 4} in points
