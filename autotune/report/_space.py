"""The search space a study actually searched, rebuilt from its storage (no probe: a report may be
made far from the nodes), so the cost of a staged sweep and of the full grid can be counted.

What resolution removed is stored as text (`NAME: why`, `NAME=CHOICE: why`); the choices each knob
offered are in the trials' Optuna distributions (choices read from ompi_info live nowhere else);
the conditions between knobs come from the space file. A knob set in the default trial is active
there, so its conditions hold for the default's values too (pml unset may mean ucx). When the
space file is gone or changed, the knobs the trials saw are taken as independent and said so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution

from ..errors import AutotuneError
from ..space import Parameter, SearchSpace, TrialContext, assignments, is_choice
from ..storage import RESOLUTION_ATTR, StudyConfig, TrialRecord, config_key

MAX_COUNT = 1_000_000  # enumerating beyond this says nothing more than "astronomical"


@dataclass(frozen=True)
class StudySpace:
    """The knobs of a study as they were searched, and how faithfully they were rebuilt."""

    space: SearchSpace
    ctx: TrialContext
    context_values: dict[str, Any]
    exact: bool  # False: the space file was not found as stored; knobs taken as independent
    note: str = ""


def rebuild_space(study: optuna.Study, config: StudyConfig,
                  records: Sequence[TrialRecord]) -> StudySpace:
    """The study's resolved space, from its stored resolution, trials and space file."""
    ctx = TrialContext(config.collective, config.nodes)
    resolution = study.user_attrs.get(RESOLUTION_ATTR) or {}
    context_values = {str(k): v for k, v in dict(resolution.get("context") or {}).items()}
    default = next((r.params for r in records if r.is_default), {})
    offered = _offered(study)
    whole, choices_out = _removals(resolution.get("removed") or [])
    try:
        from ..space import load_space

        loaded = load_space(config.space)
        if config.space_digest and loaded.digest != config.space_digest:
            raise AutotuneError("changed since the study started")
    except AutotuneError as exc:
        return StudySpace(_flat_space(config.space, offered, default, context_values), ctx,
                          context_values, exact=False,
                          note=f"space {config.space!r} not readable as the study used it "
                               f"({str(exc).splitlines()[0][:120]}): the knobs its trials saw "
                               "are counted as independent")
    narrowed: dict[str, tuple[Any, ...]] = {}
    dropped = set(whole)
    for p in loaded.parameters:
        if p.name in offered:
            narrowed[p.name] = offered[p.name]
        elif p.choices_from and not p.choices:
            dropped.add(p.name)  # its choices came from ompi_info and no trial saw it
        elif any(name == p.name for name, _ in choices_out):
            narrowed[p.name] = tuple(c for c in p.choices if (p.name, str(c)) not in choices_out)
    space = loaded.without(dropped, narrowed)
    params = [_holds_at_default(p, default) for p in space.parameters]
    return StudySpace(replace(space, parameters=tuple(params)), ctx, context_values, exact=True)


def _offered(study: optuna.Study) -> dict[str, tuple[Any, ...]]:
    """Each knob's choices as the sampler was offered them, from the latest trial that asked."""
    out: dict[str, tuple[Any, ...]] = {}
    for trial in study.get_trials(deepcopy=False):
        for name, dist in trial.distributions.items():
            if isinstance(dist, CategoricalDistribution):
                out[name] = tuple(dist.choices)
            elif isinstance(dist, IntDistribution):
                out[name] = tuple(range(dist.low, dist.high + 1, dist.step))
    return out


def _removals(removed: Sequence[Any]) -> tuple[set[str], set[tuple[str, str]]]:
    whole: set[str] = set()
    choices: set[tuple[str, str]] = set()
    for line in removed:
        what = str(line).split(": ", 1)[0]
        name, sep, choice = what.partition("=")
        if sep:
            choices.add((name, choice))
        else:
            whole.add(name)
    return whole, choices


def _holds_at_default(p: Parameter, default: Mapping[str, Any]) -> Parameter:
    """A knob the default trial set is active at the default: widen its conditions to say so."""
    if p.name not in default or not p.when:
        return p
    when = tuple((parent, values if parent not in default or default[parent] in values
                  else (*values, default[parent])) for parent, values in p.when)
    return replace(p, when=when)


def _flat_space(name: str, offered: Mapping[str, tuple[Any, ...]], default: Mapping[str, Any],
                context_values: Mapping[str, Any]) -> SearchSpace:
    params = tuple(Parameter(name=knob, apply="context" if knob in context_values else "env",
                             type="categorical", default=default.get(knob, choices[0]),
                             choices=choices)
                   for knob, choices in sorted(offered.items()) if choices)
    return SearchSpace(name=name, description="rebuilt from the trials", stack="any", fixed=(),
                       parameters=params)


# ------------------------------------------------------------------ counting


@dataclass(frozen=True)
class Count:
    configs: int
    capped: bool = False  # True: at least `configs`, enumeration stopped there

    def __str__(self) -> str:
        return f"\u2265 {self.configs:,}" if self.capped else f"{self.configs:,}"


def _knobs(sp: StudySpace) -> tuple[Parameter, ...]:
    return sp.space.for_context(sp.ctx)



def _key(params: Sequence[Parameter], point: Mapping[str, Any]) -> tuple:
    """Configurations that set the same knobs to the same values are one (a default is unset)."""
    return config_key({p.name: ("" if is_choice(point[p.name], (p.default,)) else point[p.name])
                       for p in params if p.name in point and p.apply != "context"})


def count_full_grid(sp: StudySpace, cap: int = MAX_COUNT) -> Count:
    """Distinct configurations of the whole space (what an exhaustive sweep measures)."""
    params = _knobs(sp)
    seen: set[tuple] = set()
    for point in assignments(params, sp.context_values):
        seen.add(_key(params, point))
        if len(seen) >= cap:
            return Count(len(seen), capped=True)
    return Count(len(seen))


def count_staged(sp: StudySpace, fixed: Mapping[str, Any]) -> Count:
    """Distinct configurations the staged sweep of seeds/000 measures: each stage's knobs swept
    jointly over the earlier stages' picks, as strategy._staged does; each stage's pick is taken
    from `fixed` (this study's best), so a stage whose knobs that pick leaves inactive adds
    nothing. The default configuration (trial 0) is counted once."""
    from ..strategy import StagedStrategy

    params = list(_knobs(sp))
    staged = StagedStrategy()
    best: dict[str, Any] = {p.name: sp.context_values.get(p.name, p.default) for p in params}
    seen: set[tuple] = {_key(params, _active_defaults(params, sp.context_values))}
    for stage in staged._stages(params):
        for point in staged._points(params, stage, best):
            seen.add(_key(params, point))
            if len(seen) >= MAX_COUNT:
                return Count(len(seen), capped=True)
        best.update({n: fixed[n] for n in stage if n in fixed})
    return Count(len(seen))


def _active_defaults(params: Sequence[Parameter], context_values: Mapping[str, Any]
                     ) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in params:
        if p.active(out):
            out[p.name] = context_values.get(p.name, p.default)
    return out


def stage_names(sp: StudySpace) -> tuple[tuple[str, ...], ...]:
    """The knobs of each stage of the staged sweep, in order (for the page's explanation)."""
    from ..strategy import StagedStrategy

    return tuple(StagedStrategy()._stages(list(_knobs(sp))))


__all__ = ["Count", "StudySpace", "count_full_grid", "count_staged", "rebuild_space",
           "stage_names"]
