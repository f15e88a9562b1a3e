"""The endgame's one rounds engine: order, pairing and its one failure policy, with scripted
launch results (a fault injector; the real launches are in test_stage.py, test_verify_e2e.py and
the confirmation's replays)."""

from __future__ import annotations

import math
import random
import time

import pytest

from autotune.endgame.rounds import (LOST_IN_A_ROW, Arm, RoundsEngine, per_size_ratios,
                                     round_scores)
from autotune.errors import LaunchFailure
from autotune.measure import LaunchFailed, LaunchRecord, MeasurementPlan
from autotune.space import LaunchSettings

PLAN = MeasurementPlan(collective="allreduce", nodes=1, ppn=2, sizes=(8, 1024), repetitions=1,
                       stages=2, time_per_size=0.01)
WEIGHTS = {8: 0.5, 1024: 0.5}


class Script:
    """Each arm runs at its factor x 10 µs, or fails as `faults[name]` says (a list: one reason
    per launch, "" for a clean launch, then clean)."""

    def __init__(self, factors: dict[str, float], faults: dict[str, list[str]] | None = None):
        self.plan = PLAN
        self.factors, self.faults = factors, {k: list(v) for k, v in (faults or {}).items()}
        self.launched: list[tuple[int, int, str]] = []  # (round, block, arm)

    def run_launch(self, settings, planned, seed, *, params=None, is_default=False):
        name = dict(settings.env)["ARM"]
        self.launched.append((planned.rep, planned.block, name))
        record = LaunchRecord(index=-1, block=planned.block, rep=planned.rep, seed=seed,
                              sizes=list(planned.sizes), argv=["mpirun", name], hosts=["n1"],
                              started=time.time(), seconds=0.01, returncode=0)
        pending = self.faults.get(name) or []
        reason = pending.pop(0) if pending else ""
        if reason:
            raise LaunchFailed(LaunchFailure(reason, "scripted"), record)
        record.t_max_us = {s: 10.0 * self.factors[name] for s in planned.sizes}
        return record


def arm(name: str, default: bool = False) -> Arm:
    return Arm(name, LaunchSettings(env=(("ARM", name),)), {}, is_default=default)


def test_every_open_arm_once_per_block_the_reference_first_the_others_in_random_order():
    script = Script({"ref": 1.0, "a": 0.8, "b": 1.1})
    ref, a, b = arm("ref", True), arm("a"), arm("b")
    done = RoundsEngine(script, random.Random(3)).run([a, ref, b], 6)
    assert done == 6 and len(script.launched) == 6 * 2 * 3
    orders = {tuple(n for r, k, n in script.launched if (r, k) == key)
              for key in {(r, k) for r, k, _ in script.launched}}
    assert orders == {("ref", "a", "b"), ("ref", "b", "a")}

    alone = Script({"x": 1.0, "y": 1.0})  # no reference (the stage's variants): all shuffled
    RoundsEngine(alone, random.Random(3)).run([arm("x"), arm("y")], 8)
    firsts = {alone.launched[i][2] for i in range(0, len(alone.launched), 2)}
    assert firsts == {"x", "y"}  # either may run first in a block
    rounds, scores = round_scores(a, ref, WEIGHTS)
    assert rounds == list(range(6)) and scores == pytest.approx([math.log(0.8)] * 6)
    assert per_size_ratios(b, ref, PLAN.sizes)[1024] == pytest.approx([math.log(1.1)] * 6)
    assert a.argv == ("mpirun", "a")


def test_an_arm_that_fails_is_out_with_its_reason_and_the_others_go_on():
    script = Script({"ref": 1.0, "a": 0.8, "b": 0.9}, {"a": ["", "crash"]})
    ref, a, b = arm("ref", True), arm("a"), arm("b")
    assert RoundsEngine(script, random.Random(1)).run([ref, a, b], 4) == 4
    assert a.failed == "crash: scripted" and not b.failed
    assert sum(1 for *_, n in script.launched if n == "a") == 2  # none after its failure
    assert len(round_scores(b, ref, WEIGHTS)[1]) == 4
    assert round_scores(a, ref, WEIGHTS)[1] == []  # its one block never made a whole round


def test_a_lost_reference_loses_the_block_and_three_in_a_row_stop_the_rounds():
    script = Script({"ref": 1.0, "a": 0.8}, {"ref": ["", "", "timeout", ""]})
    ref, a = arm("ref", True), arm("a")
    engine = RoundsEngine(script, random.Random(2))
    assert engine.run([ref, a], 3) == 3 and not a.failed and not ref.failed
    rounds, _ = round_scores(a, ref, WEIGHTS)
    assert rounds == [0, 2] and len(engine.lost) == 1 and not engine.stopped

    broken = Script({"ref": 1.0, "a": 0.8}, {"ref": ["infrastructure"] * 10})
    engine = RoundsEngine(broken, random.Random(2))
    done = engine.run([arm("ref", True), arm("a")], 10)
    assert done == 2 and engine.stopped.startswith(f"{LOST_IN_A_ROW} blocks lost in a row")


def test_the_nodes_fault_is_nobodys_verdict_and_a_stop_request_passes():
    script = Script({"ref": 1.0, "a": 0.8}, {"a": ["infrastructure"]})
    ref, a = arm("ref", True), arm("a")
    RoundsEngine(script, random.Random(1)).run([ref, a], 2)
    assert not a.failed and len(round_scores(a, ref, WEIGHTS)[1]) == 1
    with pytest.raises(LaunchFailed):
        RoundsEngine(Script({"ref": 1.0, "a": 1.0}, {"a": ["interrupted"]}),
                     random.Random(1)).run([arm("ref", True), arm("a")], 2)


def test_no_round_starts_that_would_end_after_the_deadline():
    engine = RoundsEngine(Script({"ref": 1.0, "a": 0.9}), random.Random(1), seconds_per_arm=60)
    assert engine.run([arm("ref", True), arm("a")], 5, deadline=time.time() + 30) == 0
    assert engine.stopped == "the time budget left no room for a round"
    assert RoundsEngine(Script({"ref": 1.0, "a": 0.9}), random.Random(1)).run(
        [arm("ref", True), arm("a")], 2, deadline=time.time() + 30) == 2


def test_one_arms_infrastructure_failure_costs_the_others_nothing():
    script = Script({"ref": 1.0, "a": 0.8, "b": 0.9, "c": 0.7}, {"a": ["", "", "infrastructure"]})
    ref, a, b, c = arm("ref", True), arm("a"), arm("b"), arm("c")
    RoundsEngine(script, random.Random(1)).run([ref, a, b, c], 3)
    assert len(round_scores(b, ref, WEIGHTS)[1]) == 3 and len(round_scores(c, ref, WEIGHTS)[1]) == 3
    assert len(round_scores(a, ref, WEIGHTS)[1]) == 2 and not a.failed
