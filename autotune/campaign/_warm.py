"""Warm start from finished neighbours: a case of a campaign begins with what the cases nearest to
it found (their confirmed winner first, then their best other candidates), so a case whose
neighbours agree may need little more than confirmation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import TrialState

from ..export import best_config
from ..errors import AutotuneError
from ..storage import TrialRecord, params_key
from ._model import Case

TOP_PER_NEIGHBOUR = 3  # the confirmed winner and the next best candidates of each neighbour
NEIGHBOURS = 2


@dataclass(frozen=True)
class Candidate:
    """A configuration a finished case found good, as that case's params."""

    params: dict[str, Any]
    note: str  # e.g. "allreduce-1n1p: confirmed winner (trial 7)"
    winner: bool = False


def case_candidates(study: optuna.Study, label: str, top: int = TOP_PER_NEIGHBOUR) -> list[Candidate]:
    """The study's confirmed winner (when a candidate beat the default beyond doubt), then its best
    other completed non-default trials that the search saw faster than the default, distinct;
    a trial its own confirmation found not faster (or broken) is left out."""
    from ..endgame.confirm import FAILED, NOT_FASTER
    from ..storage import stored_confirmation

    confirmation = stored_confirmation(study)
    refuted = {c.trial for c in (confirmation.candidates if confirmation else ())
               if c.verdict in (NOT_FASTER, FAILED)}
    chosen: list[Candidate] = []
    seen: set[tuple] = set()
    try:
        best = best_config(study)
    except AutotuneError:
        best = None
    if best is not None and not best.is_default and best.confirmed:
        chosen.append(Candidate(dict(best.params), f"{label}: confirmed winner (trial {best.trial})",
                                winner=True))
        seen.add(params_key(best.params))
    trials = sorted((t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                     if t.value is not None and t.value < 0 and t.number not in refuted
                     and not TrialRecord.from_trial(t).is_default), key=lambda t: t.value)
    for trial in trials:
        if len(chosen) >= top:
            break
        key = params_key(trial.params)
        if key in seen:
            continue
        seen.add(key)
        chosen.append(Candidate(dict(trial.params), f"{label}: trial {trial.number}, "
                                f"{math.exp(-trial.value):.3f}x in its search"))
    return chosen


def distance(a: Case, b: Case) -> float:
    """How unlike two cases are: a factor of two in nodes or ppn counts 1, another collective 1.5
    (the patterns of seeds/000 hold across node counts more than across collectives)."""
    return (abs(math.log2(a.nodes / b.nodes)) + abs(math.log2(a.ppn / b.ppn))
            + (0.0 if a.collective == b.collective else 1.5))


def nearest(case: Case, finished: list[Case], count: int = NEIGHBOURS) -> list[Case]:
    """The finished cases nearest to `case` (ties: the one listed first)."""
    ranked = sorted((c for c in finished if c != case), key=lambda c: distance(case, c))
    return ranked[:count]


def winners_agree(candidates: list[Candidate], adapt, default: dict[str, Any]) -> bool:
    """Whether at least two neighbours' confirmed winners are the same configuration once adapted
    to this case (`adapt(params) -> params`), and that configuration is not this case's default:
    winners that changed only knobs this case lacks (another collective's algorithm) say nothing
    about it."""
    winners = [params_key(adapt(c.params)) for c in candidates if c.winner]
    winners = [w for w in winners if w != params_key(default)]
    return len(winners) >= 2 and len(set(winners)) == 1
