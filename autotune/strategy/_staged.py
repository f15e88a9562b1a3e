"""The staged sweep of seeds/000, the manual method autotune replaces, as a strategy (so it is
measured by the same yardstick): step 1 sweeps transports x rendezvous threshold, step 2 the
zero-copy threshold with step 1's best fixed, step 3 everything else (collective components,
algorithms, mapping) with the earlier steps fixed. Every point is measured in full (no pruning);
the untuned default is trial 0 as in every study. Interactions across steps are never seen.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from ..storage import write_planned_params
from ._base import Strategy
from ._planned import PlannedSampler

if TYPE_CHECKING:
    from ..space import SearchSpace, TrialContext

STAGES = (("pml", "UCX_TLS", "UCX_RNDV_THRESH", "UCX_RNDV_THRESH_INTRA", "UCX_RNDV_THRESH_INTER"),
          ("UCX_ZCOPY_THRESH",))  # then every other knob


class StagedStrategy(Strategy):
    name = "staged"
    summary = "the manual staged sweep, as a yardstick"

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._sampler = PlannedSampler()
        self._done = False
        self.fixed: dict[str, Any] = {}

    def sampler(self, fixed: Mapping[str, Any] | None = None) -> optuna.samplers.BaseSampler:
        self.fixed = dict(fixed or {})
        return self._sampler

    def exhausted(self) -> bool:
        return self._done

    def suggest(self, trial: optuna.Trial, space: SearchSpace, ctx: TrialContext
                ) -> dict[str, Any]:
        """The next point of the current step: the best of the earlier steps, this step's knobs
        swept jointly; a point already measured is not measured again."""
        params = [p for p in space.for_context(ctx)]
        measured = [t for t in trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))]
        tried = {_key(t.params) for t in trial.study.get_trials(deepcopy=False)
                 if t.number != trial.number}
        best: dict[str, Any] = {p.name: self.fixed.get(p.name, p.default) for p in params}
        for stage in self._stages(params):
            points = self._points(params, stage, best)
            fresh = [pt for pt in points if _key(pt) not in tried]
            if fresh:
                return self._ask(trial, space, ctx, fresh[0])
            # the stage is done: fix its knobs to its best measured point
            in_stage = [t for t in measured if _key(t.params) in {_key(pt) for pt in points}]
            if in_stage:
                winner = min(in_stage, key=lambda t: t.value)
                best.update({n: winner.params[n] for n in stage if n in winner.params})
        self._done = True
        return self._ask(trial, space, ctx, best)  # nothing left: measure the final pick

    def _stages(self, params) -> list[tuple[str, ...]]:  # noqa: ANN001
        names = [p.name for p in params if p.apply != "context"]
        stages = [tuple(n for n in names if n in stage) for stage in STAGES]
        rest = tuple(n for n in names if not any(n in stage for stage in STAGES))
        return [s for s in (*stages, rest) if s]

    @staticmethod
    def _points(params, stage: tuple[str, ...], best: dict[str, Any]) -> list[dict[str, Any]]:  # noqa: ANN001
        """Every combination of this stage's knobs (the active ones) over `best`."""
        by_name = {p.name: p for p in params}
        points, seen = [], set()
        for values in itertools.product(*(by_name[n].choices for n in stage)):
            point = {**best, **dict(zip(stage, values))}
            active = _active(params, point)
            if _key(active) not in seen:
                seen.add(_key(active))
                points.append(active)
        return points

    def _ask(self, trial: optuna.Trial, space: SearchSpace, ctx: TrialContext,
             point: dict[str, Any]) -> dict[str, Any]:
        self._sampler.plan = {**{p.name: p.default for p in space.for_context(ctx)}, **point}
        return write_planned_params(trial, space, ctx, self._sampler.plan)

    def describe(self) -> str:
        return "the manual staged sweep: transports x RNDV, then ZCOPY, then the rest; no pruning"


def _active(params, point: dict[str, Any]) -> dict[str, Any]:  # noqa: ANN001
    out: dict[str, Any] = {}
    for p in params:
        if p.active(out):
            out[p.name] = point.get(p.name, p.default)
    return out


def _key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))
