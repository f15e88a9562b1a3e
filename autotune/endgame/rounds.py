"""Interleaved rounds of arms: the one engine of the confirmation, `autotune verify` and the
per-size stage.

A round measures every open arm once per size block: the reference (the untuned stack) first,
then the others in a random order drawn for each block, so the machine's level shifts (they last
minutes) fall on every arm alike and each arm is paired with a reference launched seconds before
it (as grids are recorded and replayed: a configuration with the default just before it). Two
arms' launches of the same block and round are a pair: their log-ratio per size, the weighted
mean over the sizes, is a round score free of the machine's level.

One failure policy, whatever the rounds are for:
- a stop request (`interrupted`) passes through at once;
- a failed launch of the reference (the untuned stack), or the nodes' fault (`infrastructure`)
  in any arm's launch, loses that pair (a failed reference: the rest of its block, which has
  nothing left to pair with): it is nobody's verdict; after `LOST_IN_A_ROW` lost launches in a
  row the rounds stop and say why;
- any other failure of an arm (a crash, a timeout, a wrong result, output the parser refuses)
  fails that arm with its reason: a configuration that fails once is not one to hand out, and it
  gets no more launches.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import objective
from ..measure import LaunchFailed, Measurer, PlannedLaunch
from ..space import LaunchSettings

LOST_IN_A_ROW = 3  # blocks lost one after the other: the nodes or the reference are broken


@dataclass
class Arm:
    """One thing measured in the rounds: its settings, the params its launches record, and what
    its launches gave per round and size (the scored time, t_max in µs for latency)."""

    name: str
    settings: LaunchSettings
    params: dict[str, Any] | None
    is_default: bool = False
    failed: str = ""  # "reason: detail" of the failure that ended the arm
    times: dict[int, dict[int, float]] = field(default_factory=dict)  # round -> size -> time
    argv: tuple[str, ...] = ()  # the command line of its first measured launch

    @property
    def open(self) -> bool:
        return not self.failed

    def log_times(self, sizes: Iterable[int], rounds: int) -> dict[int, list[float]]:
        """log(time) per size and round 0..rounds-1, NaN where nothing was measured."""
        return {size: [_log(self.times.get(r, {}).get(size)) for r in range(rounds)]
                for size in sizes}


def _log(value: float | None) -> float:
    return math.log(value) if value is not None and value > 0 else math.nan


class RoundsEngine:
    """Runs rounds of arms with one measurer (bound to its nodes); see the module docstring."""

    def __init__(self, measurer: Measurer, rng: random.Random, *,
                 blocks: Sequence[tuple[int, ...]] | None = None,
                 seconds_per_arm: float = 0.0) -> None:
        self.measurer, self.rng = measurer, rng
        self.blocks = list(blocks) if blocks is not None else measurer.plan.blocks()
        self.seconds_per_arm = seconds_per_arm  # of a round; the first round's estimate
        self.lost: list[str] = []  # why each lost block was lost
        self.lost_in_a_row = 0
        self.stopped = ""  # why the rounds stopped before the number asked for

    def run(self, arms: Sequence[Arm], rounds: int, *, first: int = 0,
            deadline: float | None = None,
            on_round: Callable[[int, int], None] | None = None) -> int:
        """Rounds `first`..`first + rounds - 1` of the open `arms`, none started that would not
        end before `deadline` (unix time); returns how many ran."""
        done = 0
        while done < rounds and not self.stopped:
            live = [a for a in arms if a.open]
            if not any(not a.is_default for a in live):
                break  # nothing left to compare
            if not self.fits(deadline, len(live)):
                self.stopped = (f"the time budget ended the rounds after {first + done}"
                                if first + done else "the time budget left no room for a round")
                break
            self.round(first + done, live)
            done += 1
            if on_round is not None:
                on_round(first + done, first + rounds)
        return done

    def fits(self, deadline: float | None, arms: int) -> bool:
        """Whether a round of `arms` arms ends before `deadline`, judged by the last round."""
        return deadline is None or time.time() + self.seconds_per_arm * arms <= deadline

    def round(self, index: int, arms: Sequence[Arm]) -> None:
        """Round `index`: per size block, the reference, then every other open arm once in a
        random order."""
        t0 = time.perf_counter()
        for block_index, block in enumerate(self.blocks):
            others = [a for a in arms if a.open and not a.is_default]
            if not others:
                break  # nothing left to compare with the reference
            self.rng.shuffle(others)
            order = [a for a in arms if a.open and a.is_default] + others
            planned = PlannedLaunch(index=-1, block=block_index, rep=index, sizes=block)
            self._block(index, order, planned)
            if self.stopped:
                break
        self.seconds_per_arm = (time.perf_counter() - t0) / max(1, len(arms))

    def _block(self, index: int, order: list[Arm], planned: PlannedLaunch) -> None:
        lost_here = False
        for arm in order:
            try:
                record = self.measurer.run_launch(arm.settings, planned, self.rng.randrange(2**31),
                                                  params=arm.params, is_default=arm.is_default)
            except LaunchFailed as exc:
                if exc.reason == "interrupted":
                    raise
                if arm.is_default or exc.reason == "infrastructure":
                    self._lose(f"{arm.name}: {exc}"[:300])
                    lost_here = True
                    if self.stopped or arm.is_default:
                        return  # no reference left to pair the rest of the block with
                    continue
                arm.failed = f"{exc.reason}: {exc.detail}"[:300]
                continue
            arm.times.setdefault(index, {}).update(record.t_max_us)
            if not arm.argv:
                arm.argv = tuple(record.argv)
        if not lost_here:
            self.lost_in_a_row = 0

    def _lose(self, why: str) -> None:
        self.lost.append(why)
        self.lost_in_a_row += 1
        if self.lost_in_a_row >= LOST_IN_A_ROW:
            self.stopped = f"{self.lost_in_a_row} blocks lost in a row (last: {why})"


# ------------------------------------------------------------------ pairs and scores


def paired_ratios(arm: Arm, reference: Arm, sizes: Iterable[int]) -> dict[int, dict[int, float]]:
    """round -> size -> log(arm / reference), for every round where both measured that size."""
    out: dict[int, dict[int, float]] = {}
    for index, times in arm.times.items():
        ref = reference.times.get(index, {})
        ratios = {s: objective.log_ratio(times[s], ref[s]) for s in sizes
                  if times.get(s, 0) > 0 and ref.get(s, 0) > 0}
        if ratios:
            out[index] = ratios
    return out


def round_scores(arm: Arm, reference: Arm, weights: Mapping[int, float],
                 sizes: Iterable[int] | None = None) -> tuple[list[int], list[float]]:
    """(rounds, scores): the weighted mean log-ratio of each round in which both arms measured
    every size in `sizes` (default: every weighted size); a round missing a size is left out
    rather than scored on the sizes it has (it would weigh the sizes differently)."""
    wanted = [s for s in (sizes if sizes is not None else weights) if weights.get(s, 0) > 0]
    if not wanted:
        return [], []
    rounds, scores = [], []
    for index, ratios in sorted(paired_ratios(arm, reference, wanted).items()):
        if len(ratios) == len(wanted):
            rounds.append(index)
            scores.append(objective.weighted_score(ratios, weights))
    return rounds, scores


def median_score(arm: Arm, reference: Arm, weights: Mapping[int, float]) -> float | None:
    """Each weighted size's median log-ratio over the rounds (each round paired with its own
    reference launch), weighted over the sizes; None unless every weighted size has one.
    Robust where a mean is not: a configuration that lands on a fast latency level in a third
    of its launches (2.7x one pass, 0.9x and 1.2x the others, in a real grid here) has a mean
    far above what it does most of the time, and per size the level of one launch cannot
    carry the sizes of another."""
    wanted = [s for s in weights if weights.get(s, 0) > 0]
    per_size = per_size_ratios(arm, reference, wanted)
    if not wanted or len(per_size) < len(wanted):
        return None
    return objective.weighted_score({s: statistics.median(v) for s, v in per_size.items()},
                                    weights)


def per_size_ratios(arm: Arm, reference: Arm, sizes: Iterable[int]) -> dict[int, list[float]]:
    """size -> the log-ratios of every round in which both measured it."""
    out: dict[int, list[float]] = {}
    for _, ratios in sorted(paired_ratios(arm, reference, sizes).items()):
        for size, value in ratios.items():
            out.setdefault(size, []).append(value)
    return dict(sorted(out.items()))
