"""Confirmation: when the search ends, re-measure the best few configurations against the default
in interleaved rounds, and claim one only if it is faster beyond doubt.

The rounds are the endgame's one engine (rounds.py): in each round and size block, one default
launch, then every open candidate in a random order, each paired with that default launch: a round's score is then free of the machine's level shifts (they last minutes), and the
default costs one launch per round, not one per candidate. Its failure policy is the engine's.
Why the claim holds at its stated level:
- the interval of a candidate's round scores is Student's t, for their 20%-trimmed mean (Yuen's)
  from 10 rounds on and for their mean below that (`stats.trimmed_interval`), not a percentile
  bootstrap (over 5 rounds a bootstrap interval is too narrow; claims built on it did not
  reproduce); trimmed, because a few rounds whose launch hit a disturbed moment of a shared
  machine (1.5-3x slow, on either side of the pair) made the mean's interval so wide that a
  15-20% gain seen in most rounds kept the default. A trimmed mean would also discount a slow
  fifth of the candidate's own (a transport that stalls now and then), so a claim needs the plain
  mean of its rounds to be faster too;
- the rounds are adaptive: a first look after `min_rounds`, then looks at twice as many rounds up
  to `max_rounds`, while a candidate is undecided; a candidate is dropped once its interval says it
  is not faster by `min_gain` (futility) or once it is surely slower, and, once another is claimed,
  when it can no longer be worth preferring to the claimed leader (it could be claimed, never win);
  past 20 rounds (`promising_from`), only a candidate whose gain, if it held, would be claimed
  by `max_rounds` (80) with a fair chance goes on (`Candidate.promising`): on a machine whose
  launches are 10% apart, a 10% gain needs 30-80 rounds, spent only where they can decide;
- every interval is simultaneous over the candidates and the looks (Bonferroni): picking the best
  of several noisy candidates, or looking again until something shows, does not buy a false claim
  (an error rate split over the looks in proportion to their rounds instead, which favours the
  last look, found a planted 10% gain on a noisy replay in 169 of 200 runs against 165, and
  claimed a quiet replay's after 10 rounds instead of 5);
- a claim is about the gain IMB-MPI1 (or the user's application, when it is the benchmark) would
  read, so a benchmark that reads a configuration a few pp off IMB (the mpi4py kernel: its
  `systematic`, docs/evidence/kernel-fidelity.md) widens the claim's interval by that, in quadrature
  (`stats.with_systematic`); rounds shrink the noise, not that bias, and a claim whose interval
  ignored it did not reproduce under IMB.
The winner is the claimed candidate (interval entirely faster than the default) with the best
median per size over all its rounds, weighted over the sizes as a trial's score is (see
`leader`): a mean, or a median of a few rounds, hands the win to a configuration that lands on a
fast level in a third of its launches over one that is faster most of the time. When
several are claimed, they race for it: the leader and each claimed candidate that may still be
worth preferring (its difference to the leader, paired round by round, not surely positive, and
an expected shortfall of keeping the leader of `race_loss` or more) get more rounds at the next
looks (up to `max_rounds`), the leader also while an undecided candidate may still overtake it;
rounds are not spent on candidates already told apart, nor on ties too close to matter.
A candidate that changes more knobs than another claimed candidate must earn its extra knobs:
it wins only if its rounds, paired with the simpler one's, show it faster beyond doubt
(`earns_its_knobs`); otherwise the simpler one is the answer and the confirmation says why
(`Confirmation.choice`). A search that piles a knob on top of a good one (an algorithm on top of
plain `pml=ucx`) is then exported only where the extra knob was measured to pay. Of the
candidates left, those preferring which is expected to cost less than `simpler_within`, the
one that changes the fewest knobs wins (`simplest_equivalent`): a tie too close to race for is
settled for the simpler answer.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import optuna
from scipy import stats

from ..measure import Measurer
from ..space import LaunchSettings, knobs_changed
from ..stats import (TRIM, Interval, mean_interval, systematic_half_width, trimmed_interval,
                     trimmed_standard_error, with_systematic)
from ..storage import CONFIRMATION_ATTR, TrialRecord
from .rounds import Arm, RoundsEngine, median_score, round_scores

METHOD = ("Student t over paired rounds, of their 20%-trimmed mean (Yuen) from 10 rounds on, "
          "the plain mean also faster; simultaneous over candidates and looks (Bonferroni)")

# a candidate's verdict
CLAIMED = "faster"  # interval entirely below 0: faster than the default beyond doubt
NOT_FASTER = "not faster"  # interval says the gain is below min_gain, or it is slower
# faster, perhaps, but by less than the benchmark's uncertainty against IMB-MPI1: never claimable
TOO_SMALL = "too small for this benchmark to claim"
UNDECIDED = "undecided"  # rounds or time ran out first
# undecided after `promising_from` rounds, and its gain, if it held, would not be claimed by
# `max_rounds`: not measured on
UNPROMISING = "undecided, not promising enough for more rounds"
BEHIND = "behind the winner"  # undecided, and no longer able to beat a claimed candidate
FAILED = "failed"


@dataclass(frozen=True)
class ConfirmPolicy:
    """How many rounds, and what counts as decided."""

    min_rounds: int = 5
    # on a noisy replay (bench_calibration's, 10% launch to launch) a planted 10% gain that
    # reached the confirmation was claimed in 165 of 179 runs with 40 rounds at most, 173 of
    # 177 with 80 (the rounds past 20 only for a candidate still `promising`), at about the
    # same median cost (3,060 size-launches per study against 2,988)
    max_rounds: int = 80
    promising_after: int = 20  # see promising_from
    # claimed candidates race for the win (and the leader is measured beside a candidate that
    # may overtake it) up to this many rounds: past it, the race would not change the answer
    # often enough for the minutes it costs (a simpler candidate still wins a tie)
    race_rounds: int = 40
    promising_power: float = 0.2  # see Candidate.promising
    # the confidence of the two-sided paired interval by which a configuration's extra knobs
    # must beat a simpler claimed one (`earns_its_knobs`). Looser, 0.9 let a 5% lead (trimmed)
    # with 10% swings over 10 rounds win; on the planted grid 0.8 took the median regret at 120
    # trials from 28.8 to 25.9 pp, 0.9 to 27.4 (docs/strategies.md)
    earn_confidence: float = 0.95
    confidence: float = 0.95
    min_gain: float = 0.01  # a candidate surely not faster by 1% is dropped
    race_loss: float = 0.0025  # claimed candidates race on while preferring the leader may lose this
    simpler_within: float = 0.0025  # the simpler of two claimed is preferred if it may lose less
    # the benchmark's standard uncertainty against IMB-MPI1 (log units; Benchmark.disagreement)
    systematic: float = 0.0
    systematic_note: str = ""  # where it was measured, or that it was not (a stand-in)

    def looks(self) -> list[int]:
        """Rounds after which the candidates are judged: min, 2 min, 4 min, ..., max."""
        first = max(2, min(self.min_rounds, self.max_rounds))
        looks = [first]
        while looks[-1] < self.max_rounds:
            looks.append(min(self.max_rounds, looks[-1] * 2))
        return looks

    @property
    def promising_from(self) -> int:
        """Past this many rounds (`promising_after`, or half of `max_rounds` if fewer), only a
        candidate that is still undecided and `Candidate.promising` goes on: the last rounds
        go where they can still decide a claim. Not half of 80: on the noisy replay's A/A
        universe the dead candidates then ran to 40 rounds, 44% more launches per study."""
        return min(self.promising_after, self.max_rounds // 2)


@dataclass
class Candidate:
    trial: int
    params: dict[str, Any]
    round_scores: list[float] = field(default_factory=list)
    round_index: list[int] = field(default_factory=list)  # the round of each score (pairing)
    center: float | None = None  # median per size over its rounds, weighted (see `leader`)
    mean: float | None = None  # its rounds' centre: trimmed mean from 10 rounds on (`judge`)
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: str = UNDECIDED
    failed: str = ""

    @property
    def speedup(self) -> float | None:
        return None if self.mean is None else math.exp(-self.mean)

    def speedup_interval(self) -> tuple[float, float] | None:
        if self.ci_low is None or self.ci_high is None:
            return None
        return math.exp(-self.ci_high), math.exp(-self.ci_low)

    def judge(self, family: int, policy: ConfirmPolicy, selected_from: int = 1) -> None:
        """The verdict on all its rounds so far, each interval one of `family` held together (a
        claim may be judged again at a later look: every look is in the family). Claimed: the
        interval (`stats.trimmed_interval`, widened by the benchmark's systematic uncertainty
        over the `selected_from` candidates) is entirely faster, and so is the plain mean, which
        a slow tail of the candidate's own pulls up where the trimmed mean would cut it. Not
        faster: the rounds' own interval says the gain is below `min_gain`. Too small: it says
        the gain is below what the benchmark's systematic uncertainty alone adds to an interval,
        so no number of rounds could claim it; either ends its rounds."""
        rounds = trimmed_interval(self.round_scores, policy.confidence, family)
        interval = with_systematic(rounds, policy.systematic, selected_from)
        self.mean, self.ci_low, self.ci_high = interval.mean, interval.low, interval.high
        if (interval.high < 0 and rounds.low < rounds.high  # no spread: nothing is known
                and statistics.fmean(self.round_scores) < 0):
            self.verdict = CLAIMED
        elif rounds.low > -math.log1p(policy.min_gain):
            self.verdict = NOT_FASTER
        elif rounds.low > -systematic_half_width(policy.systematic, policy.confidence,
                                                 selected_from):
            self.verdict = TOO_SMALL
        else:
            self.verdict = UNDECIDED

    def promising(self, family: int, policy: ConfirmPolicy,
                  selected_from: int = 1) -> bool:
        """Whether `max_rounds` rounds would claim it with a conditional power of at least
        `policy.promising_power`, if its gain is what its rounds so far say (the "promising
        zone" of adaptive trials: the last rounds go where they can still decide a claim). The
        interval then: one of `family` held together, its half-width shrunk as one over the
        square root of the rounds and widened by the benchmark's systematic uncertainty. At a
        power of one half this is "the interval then, around today's estimate, lies below 0";
        a 10% gain in rounds 14% apart reads short of that at 20 rounds one time in seven, and
        one fifth keeps most of those."""
        n = len(self.round_scores)
        if n < 2 or n >= policy.max_rounds:
            return n < 2
        rounds = trimmed_interval(self.round_scores, policy.confidence, family)
        if not math.isfinite(rounds.half_width) or rounds.half_width <= 0:
            return False
        more = policy.max_rounds - n
        half = rounds.half_width * math.sqrt(n / policy.max_rounds)
        then = with_systematic(Interval(rounds.mean, rounds.mean - half, rounds.mean + half, n,
                                        rounds.confidence, rounds.family),
                               policy.systematic, selected_from)
        # how far the rounds still to come can move the estimate: today's standard error, scaled
        se = trimmed_standard_error(self.round_scores)[1]
        moves = se * math.sqrt(n * more) / policy.max_rounds
        needed = -then.half_width - rounds.mean  # how far below today's estimate it must go
        power = float(stats.norm.cdf(needed / moves)) if moves > 0 else float(needed >= 0)
        return power >= policy.promising_power

    @property
    def open(self) -> bool:
        """Still worth more rounds."""
        return not self.failed and self.verdict == UNDECIDED


@dataclass
class Confirmation:
    rounds: int  # rounds run (the most any candidate got)
    candidates: list[Candidate]
    best_trial: int | None  # None: no candidate is surely faster than the default
    finished: float
    confidence: float = 0.95
    family: int = 1  # intervals held together: candidates x looks
    looks: list[int] = field(default_factory=list)
    method: str = METHOD
    stopped: str = ""  # why rounds stopped before every candidate was decided
    systematic: float = 0.0  # the benchmark's uncertainty against IMB-MPI1 in every interval
    choice: str = ""  # why the winner is not the fastest-looking claimed candidate, if it is not
    systematic_note: str = ""  # where the systematic was measured, or that it is a stand-in

    @property
    def best(self) -> Candidate | None:
        return next((c for c in self.candidates if c.trial == self.best_trial), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for item, cand in zip(data["candidates"], self.candidates):
            item["speedup"] = cand.speedup
            item["speedup_interval"] = cand.speedup_interval()
            item["rounds"] = len(cand.round_scores)
        return data


def settings_of(trial: optuna.trial.FrozenTrial) -> LaunchSettings:
    """The settings the trial ran with, as stored with it (a StorageError if garbled)."""
    stored = TrialRecord.from_trial(trial).settings
    return LaunchSettings(env=tuple(stored.env.items()), mca=tuple(stored.mca.items()),
                          mpirun_args=tuple(stored.mpirun_args))


def confirm(study: optuna.Study, measurer: Measurer, default_settings: LaunchSettings,
            weights: dict[int, float], trials: list[optuna.trial.FrozenTrial],
            policy: ConfirmPolicy = ConfirmPolicy(), seed: int | None = None,
            default_params: dict[str, Any] | None = None,
            deadline: float | None = None,
            knob_defaults: dict[str, Any] | None = None) -> Confirmation | None:
    """Re-measure `trials` (the strategy's pick) against the default until each is decided.
    `knob_defaults`: each knob's value when it is not set, to count what a candidate changes
    (`simplest_equivalent`)."""
    if not trials:
        return None
    candidates = [Candidate(trial=t.number, params=dict(t.params)) for t in trials]
    reference = Arm("the untuned stack", default_settings, default_params, is_default=True)
    arms = {c.trial: Arm(f"trial {c.trial}", settings_of(t), dict(t.params))
            for c, t in zip(candidates, trials)}
    looks = policy.looks()
    family = len(candidates) * len(looks)
    engine = RoundsEngine(measurer, random.Random(seed))
    done = 0
    for look in looks:
        drop_behind(candidates, policy, knob_defaults)
        if done >= policy.promising_from:
            for cand in candidates:
                if cand.open and not cand.promising(family, policy, len(candidates)):
                    cand.verdict = UNPROMISING
        measured_now = [c for c in candidates if c.open] + racing(candidates, policy,
                                                                  knob_defaults, done)
        if not measured_now:
            break
        done += engine.run([reference, *(arms[c.trial] for c in measured_now)], look - done,
                           first=done, deadline=deadline)
        for cand in measured_now:
            arm = arms[cand.trial]
            cand.round_index, cand.round_scores = round_scores(arm, reference, weights)
            cand.center = median_score(arm, reference, weights)
            if arm.failed:
                cand.failed, cand.verdict = arm.failed, FAILED
            elif len(cand.round_scores) >= 2:
                cand.judge(family, policy, selected_from=len(candidates))
        if engine.stopped:
            break
    drop_behind(candidates, policy, knob_defaults)
    stopped = engine.stopped
    if not stopped and any(c.open for c in candidates):
        stopped = f"{policy.max_rounds} rounds: the most allowed"
    elif not stopped and any(c.verdict == UNPROMISING for c in candidates):
        stopped = (f"{done} rounds: no undecided candidate's gain, if it held, would be claimed "
                   f"by {policy.max_rounds}")
    claimed = [c for c in candidates if c.verdict == CLAIMED and c.mean is not None]
    best, choice = None, ""
    if claimed:
        winner, choice = choose_winner(claimed, knob_defaults or {}, policy)
        best = winner.trial
    result = Confirmation(rounds=done, candidates=candidates, best_trial=best,
                          finished=time.time(), confidence=policy.confidence, family=family,
                          looks=looks, stopped=stopped if any(c.open or c.verdict == UNPROMISING
                                                for c in candidates) else "",
                          systematic=policy.systematic, choice=choice,
                          systematic_note=policy.systematic_note)
    study.set_user_attr(CONFIRMATION_ATTR, result.to_dict())
    return result


def typical(cand: Candidate) -> float:
    """A candidate's typical round score: the mean of its rounds without the fifth on either
    side (scipy's trimmed mean); the tie-break of `leader`."""
    return float(stats.trim_mean(cand.round_scores, TRIM)) if cand.round_scores else math.inf


def leader(claimed: list[Candidate]) -> Candidate:
    """The winner among claimed candidates: the best `center`, each size's median log-ratio to
    its round's default launch over all its rounds, weighted (its trimmed mean of rounds where
    it has none); ties go to the best trimmed mean. Each candidate is judged on all its rounds
    (one claimed at a later look has more than one claimed at the first), per size, so that one
    launch's latency level cannot carry the sizes of another."""
    def center(cand: Candidate) -> float:
        return cand.center if cand.center is not None else typical(cand)
    return min(claimed, key=lambda c: (center(c), typical(c)))


def paired_differences(cand: Candidate, other: Candidate) -> list[float]:
    """`cand`'s round score less `other`'s, round by round over their common rounds (negative:
    `cand` faster in that round)."""
    theirs = dict(zip(other.round_index, other.round_scores))
    return [score - theirs[r] for r, score in zip(cand.round_index, cand.round_scores)
            if r in theirs]


def earns_its_knobs(cand: Candidate, simpler: Candidate, policy: ConfirmPolicy,
                    family: int = 1) -> bool:
    """Whether `cand`, which changes more knobs than `simpler`, is faster than it beyond doubt:
    the interval of their paired round differences (trimmed as a claim's is, one of `family`
    held together, widened by the benchmark's systematic uncertainty) lies entirely below 0."""
    diffs = paired_differences(cand, simpler)
    if len(diffs) < 2:
        return False
    interval = with_systematic(trimmed_interval(diffs, policy.earn_confidence, family),
                               policy.systematic)
    return interval.high < 0 and statistics.fmean(diffs) < 0


def choose_winner(claimed: list[Candidate], knob_defaults: dict[str, Any],
                  policy: ConfirmPolicy) -> tuple[Candidate, str]:
    """The claimed candidate to export, and why it is not the leader (see `leader`) when it is
    not. The leader keeps the win only against every claimed candidate that changes fewer knobs
    if it beats each in their paired rounds beyond doubt (`earns_its_knobs`, the comparisons
    held together); else the leader of those it does not beat takes its place, and is held to
    the same rule. Then a near-tie goes to the simpler (`simplest_equivalent`)."""
    first = leader(claimed)
    reasons = []
    while True:
        simpler = [c for c in claimed
                   if knobs_changed(c.params, knob_defaults) < knobs_changed(first.params,
                                                                               knob_defaults)]
        unbeaten = [c for c in simpler
                    if not earns_its_knobs(first, c, policy, family=max(1, len(simpler)))]
        if not unbeaten:
            break
        replacement = leader(unbeaten)
        reasons.append(_not_earned(first, replacement, knob_defaults))
        first = replacement
    winner = simplest_equivalent([c for c in claimed if c is first or knobs_changed(
        c.params, knob_defaults) <= knobs_changed(first.params, knob_defaults)],
        knob_defaults, policy, first)
    return winner, "; ".join(reasons)


def _not_earned(cand: Candidate, simpler: Candidate, knob_defaults: dict[str, Any]) -> str:
    diffs = paired_differences(cand, simpler)
    change = (math.exp(-statistics.fmean(diffs)) - 1) * 100 if diffs else 0.0
    return (f"trial {cand.trial} ({knobs_changed(cand.params, knob_defaults)} knobs) read "
            f"{change:+.1f}% against trial {simpler.trial} "
            f"({knobs_changed(simpler.params, knob_defaults)} knobs) over {len(diffs)} paired "
            f"rounds, not faster beyond doubt: its extra knobs did not earn their place, so the "
            f"simpler trial {simpler.trial} is the answer")


def simplest_equivalent(claimed: list[Candidate], knob_defaults: dict[str, Any],
                        policy: ConfirmPolicy, first: Candidate | None = None) -> Candidate:
    """The winner: of the leader (see `leader`) and the claimed candidates that preferring to it
    is expected to cost less than `simpler_within` (E[max(0, it - leader)] over their paired
    rounds), the one that changes the fewest knobs from their defaults; the leader on a tie.
    Between configurations the measurements cannot tell apart by a gain worth having, the
    simpler one is the better answer: fewer settings to carry to other jobs and nodes, fewer to
    be wrong about (plain `pml=ucx` rather than it with a restricted UCX_TLS that measured the
    same). `first`: the leader, when the caller chose it (see `choose_winner`)."""
    first = first if first is not None else leader(claimed)

    def cost_of_preferring(cand: Candidate) -> float:
        mine = dict(zip(first.round_index, first.round_scores))
        diffs = [mine[r] - score for r, score in zip(cand.round_index, cand.round_scores)
                 if r in mine]  # negative: cand slower
        return expected_shortfall(diffs) if len(diffs) >= 2 else math.inf

    equivalent = [c for c in claimed
                  if c is first or cost_of_preferring(c) < policy.simpler_within]
    return min(equivalent,
               key=lambda c: (knobs_changed(c.params, knob_defaults), c is not first))


def racing(candidates: list[Candidate], policy: ConfirmPolicy,
           knob_defaults: dict[str, Any] | None = None, done: int = 0) -> list[Candidate]:
    """The claimed candidates still racing for the win: the leader (see `leader`) and every claimed
    one that may still be worth preferring to it: its round-by-round difference to the leader is
    not surely positive (the leader surely faster), and what preferring the leader could lose,
    the expected shortfall E[max(0, leader - it)] under the difference's Student-t estimate, is
    at least `race_loss` (so near-ties are not raced for a gain nobody could use); and every
    claimed one that changes fewer knobs than the leader, while their rounds have not yet told
    whether the leader earns its extra knobs (`may_be_preferred`). The leader
    alone while an undecided candidate is measured on (one that may still overtake it: see
    `drop_behind`): the winner is then chosen between estimates of as many rounds, not between
    a leader's first five and twenty of a configuration whose level comes and goes. None when
    nothing is left to settle. After `done` >= `promising_from` rounds, a race for the lead
    alone ends (the simpler candidate wins a tie: `choose_winner`), while one that may still be
    preferred because it changes fewer knobs races on until that is told or `race_rounds`
    rounds are done (then the simpler one wins: its rival did not earn its knobs)."""
    claimed = _claimed(candidates)
    if not claimed or done >= policy.race_rounds:
        return []
    first = leader(claimed)
    late = done >= policy.promising_from
    chasing = [c for c in claimed if c is not first and (
        (not late and may_overtake(c, first, policy))
        or may_be_preferred(c, first, policy, knob_defaults or {}))]
    challenged = any(c.open for c in candidates)
    return [first, *chasing] if chasing or challenged else []


def may_be_preferred(simpler: Candidate, first: Candidate, policy: ConfirmPolicy,
                     knob_defaults: dict[str, Any]) -> bool:
    """Whether more rounds may still tell if the leader `first` earns the knobs it changes
    beyond the claimed `simpler` (see `earns_its_knobs`): it changes more of them, their paired
    difference is not decided either way yet, and preferring the simpler could cost at least
    `simpler_within`."""
    if knobs_changed(first.params, knob_defaults) <= knobs_changed(simpler.params, knob_defaults):
        return False
    diffs = paired_differences(first, simpler)
    if len(diffs) < 2:
        return True
    interval = trimmed_interval(diffs, policy.earn_confidence)
    undecided = interval.low < 0 < interval.high
    return undecided and expected_shortfall(diffs) >= policy.simpler_within


def drop_behind(candidates: list[Candidate], policy: ConfirmPolicy,
                knob_defaults: dict[str, Any] | None = None) -> None:
    """Once a candidate is claimed, an undecided one that may no longer be worth preferring to
    the claimed leader (`may_overtake`) is dropped (verdict BEHIND): it could still be claimed,
    but never win, and its rounds would be spent for nothing. One that changes fewer knobs than
    the leader is kept while it may still be preferred (`may_be_preferred`): claimed, it would
    win unless the leader earns its extra knobs."""
    claimed = _claimed(candidates)
    if not claimed:
        return
    first = leader(claimed)
    for cand in candidates:
        if cand.open and not may_overtake(cand, first, policy) and not may_be_preferred(
                cand, first, policy, knob_defaults or {}):
            cand.verdict = BEHIND


def may_overtake(cand: Candidate, first: Candidate, policy: ConfirmPolicy) -> bool:
    """Whether `cand` may still be worth preferring to the leader `first`: its round-by-round
    difference to it is not surely positive (the leader surely faster), and what preferring the
    leader could lose, the expected shortfall E[max(0, leader - it)] under the difference's
    Student-t estimate, is at least `race_loss` (near-ties are not raced for a gain nobody could
    use). Fewer than two common rounds: not known yet, so yes."""
    mine = dict(zip(first.round_index, first.round_scores))
    diffs = [score - mine[r] for r, score in zip(cand.round_index, cand.round_scores)
             if r in mine]
    if len(diffs) < 2:
        return True
    interval = mean_interval(diffs, policy.confidence)
    return not (interval.low > 0 or expected_shortfall(diffs) < policy.race_loss)


def _claimed(candidates: list[Candidate]) -> list[Candidate]:
    return [c for c in candidates if c.verdict == CLAIMED and c.mean is not None
            and not c.failed]


def expected_shortfall(diffs: list[float]) -> float:
    """E[max(0, -d)] for the mean difference d (a candidate's score less the leader's; negative:
    the candidate is faster), d ~ its mean with its standard error, normal: what keeping the
    leader loses on average if the candidate is in fact faster."""
    mean = statistics.fmean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else math.inf
    if not math.isfinite(se) or se <= 0:
        return max(0.0, -mean)
    z = mean / se
    return float(se * stats.norm.pdf(z) - mean * stats.norm.cdf(-z))


def no_candidate(study: optuna.Study, policy: ConfirmPolicy) -> Confirmation:
    """The confirmation of a search that saw no configuration faster than the default: stored,
    so that the untuned stack is the answer and no earlier claim stands."""
    result = Confirmation(rounds=0, candidates=[], best_trial=None, finished=time.time(),
                          confidence=policy.confidence, family=0, looks=policy.looks(),
                          stopped="no candidate: the search measured none faster than the default")
    study.set_user_attr(CONFIRMATION_ATTR, result.to_dict())
    return result
