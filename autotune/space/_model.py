"""The search-space model: parameters, how each is applied, and params -> launch settings.

A parameter is applied as an environment variable (`env`), an Open MPI MCA parameter (`mca`),
mpirun arguments per choice (`mpirun`), a part of a composed value (`template`, see `compose`), or
it is allocation `context` (a property of the nodes such as NPS: recorded and learnt from, never
set by a trial; the sampler is pinned to the allocation's value).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import SpaceError
from ..units import parse_size

APPLY_KINDS = ("env", "mca", "mpirun", "template", "context")
TYPES = ("categorical", "size", "int", "bool")
SCOPES = ("any", "single-node", "multi-node")
UNSET = "unset"  # a choice that leaves the variable unset (the MPI's own default)
VALUE_RE = re.compile(r"^[A-Za-z0-9_.,:+*][A-Za-z0-9_.,:+*-]{0,255}$")


@dataclass(frozen=True)
class TrialContext:
    """What a parameter's relevance depends on besides other parameters."""

    collective: str
    nodes: int = 1


@dataclass(frozen=True)
class Setting:
    """A value applied to every launch: env var, MCA param, or raw mpirun arguments."""

    apply: str
    name: str
    value: str = ""
    args: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True)
class Compose:
    """An env/MCA value built from template parameters, e.g. intra:{A},inter:{B}."""

    apply: str
    name: str
    template: str
    parts: tuple[str, ...]


@dataclass(frozen=True)
class LaunchSettings:
    env: tuple[tuple[str, str], ...] = ()
    mca: tuple[tuple[str, str], ...] = ()
    mpirun_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Requirement:
    """What must exist on the machine: an MCA component, a UCX transport, an MPI family."""

    kind: str  # "mca_component" | "ucx_transport" | "ucx_feature" | "mpi"
    value: str

    def __str__(self) -> str:
        return f"{self.kind.replace('_', ' ')} {self.value}"


@dataclass(frozen=True)
class Parameter:
    name: str
    apply: str
    type: str
    default: Any
    choices: tuple[Any, ...] = ()
    low: int | None = None
    high: int | None = None
    step: int = 1
    log: bool = False
    when: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    collectives: tuple[str, ...] = ()
    scope: str = "any"
    implies: tuple[tuple[str, str], ...] = ()  # MCA settings added when value != default
    args: tuple[tuple[Any, tuple[str, ...]], ...] = ()  # mpirun: choice -> argv
    requires: tuple[Requirement, ...] = ()
    choice_requires: tuple[tuple[Any, tuple[Requirement, ...]], ...] = ()
    choices_from: str = ""  # "ompi_info": the installed MPI's enumeration of this MCA param
    context: str = ""  # for apply: context, which property of the allocation (e.g. "nps")
    choice_implies: tuple[tuple[Any, tuple[tuple[str, str], ...]], ...] = ()  # MCA per choice
    unset_means: str = ""  # "probe": which choice `unset` amounts to is read from the nodes
    # removed when all these survive resolution (one UCX_RNDV_THRESH gives way to intra/inter)
    yields_to: tuple[str, ...] = ()
    source: str = ""
    help: str = ""

    def applies_to(self, ctx: TrialContext) -> bool:
        if self.collectives and ctx.collective not in self.collectives:
            return False
        if self.scope == "single-node" and ctx.nodes > 1:
            return False
        return not (self.scope == "multi-node" and ctx.nodes < 2)

    def gives_way(self, present: set[str]) -> bool:
        """True when every parameter this one yields to is present (see yields_to)."""
        return bool(self.yields_to) and all(name in present for name in self.yields_to)

    def active(self, params: Mapping[str, Any]) -> bool:
        return all(params.get(name, _MISSING) in values for name, values in self.when)

    def format_value(self, value: Any) -> str:
        """The string the MPI sees: MCA sizes in bytes, UCX sizes as written (`8kb`, `auto`)."""
        if self.type == "bool":
            return "1" if value else "0"
        if self.type == "size" and self.apply == "mca" and str(value) != "auto":
            return str(parse_size(str(value)))
        return str(value)

    def describe_choices(self) -> str:
        if self.type == "int":
            return f"{self.low}..{self.high}" + (f" step {self.step}" if self.step != 1 else "")
        if self.choices_from and not self.choices:
            return f"from {self.choices_from}"
        return ", ".join(str(c) for c in self.choices)


_MISSING = object()


class _RandomTrial:
    """Stands in for an Optuna trial so that `suggest` draws at random."""

    def __init__(self, rng: Any) -> None:
        self.rng = rng

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        return self.rng.choice(choices)

    def suggest_int(self, name: str, low: int, high: int, step: int = 1, log: bool = False) -> int:
        return self.rng.randrange(low, high + 1, step)


@dataclass(frozen=True)
class SearchSpace:
    name: str
    description: str
    stack: str
    fixed: tuple[Setting, ...]
    parameters: tuple[Parameter, ...]
    compose: tuple[Compose, ...] = ()
    sources: tuple[str, ...] = field(default=())
    digest: str = ""

    def for_context(self, ctx: TrialContext) -> tuple[Parameter, ...]:
        here = [p for p in self.parameters if p.applies_to(ctx)]
        names = {p.name for p in here}
        return tuple(p for p in here if not p.gives_way(names))

    def context_parameters(self, ctx: TrialContext) -> tuple[Parameter, ...]:
        return tuple(p for p in self.for_context(ctx) if p.apply == "context")

    def suggest(self, trial: Any, ctx: TrialContext) -> dict[str, Any]:
        """Define-by-run suggestion: inactive conditional parameters are never asked for."""
        params: dict[str, Any] = {}
        for p in self.for_context(ctx):
            if not p.active(params):
                continue
            if p.type == "int":
                params[p.name] = trial.suggest_int(p.name, p.low, p.high, step=p.step, log=p.log)
            else:
                params[p.name] = trial.suggest_categorical(p.name, list(p.choices))
        return params

    def sample(self, rng: Any, ctx: TrialContext) -> dict[str, Any]:
        """One configuration drawn uniformly, choice by choice (`rng`: a random.Random)."""
        return self.suggest(_RandomTrial(rng), ctx)

    def defaults(self, ctx: TrialContext, context_values: Mapping[str, Any] | None = None
                 ) -> dict[str, Any]:
        """The MPI's own defaults for every parameter active in the default configuration;
        context parameters take the allocation's value."""
        context_values = context_values or {}
        params: dict[str, Any] = {}
        for p in self.for_context(ctx):
            if p.active(params):
                params[p.name] = context_values.get(p.name, p.default)
        return params

    def settings(self, params: Mapping[str, Any], ctx: TrialContext) -> LaunchSettings:
        """Fixed settings plus the parameters' values, validated again (values may come from
        storage). A value equal to its parameter's default is not applied: the default is the
        MPI's own, so the default configuration is the untuned stack, with no setting at all."""
        env: dict[str, str] = {}
        mca: dict[str, str] = {}
        argv: list[str] = []
        for s in self.fixed:
            _apply(s, env, mca, argv)
        texts: dict[str, str] = {}
        for p in self.for_context(ctx):
            if p.name not in params:
                continue
            value = params[p.name]
            if p.type == "int":
                if not isinstance(value, int) or not p.low <= value <= p.high:
                    raise SpaceError(f"{self.name}: {p.name}={value!r} outside {p.low}..{p.high}")
            elif not is_choice(value, p.choices):
                raise SpaceError(f"{self.name}: {p.name}={value!r} is not one of its choices")
            texts[p.name] = p.format_value(value)
            if is_choice(value, (p.default,)) or value == UNSET:
                pass  # the MPI's own default: the variable stays unset
            elif p.apply == "mpirun":
                _apply(Setting("mpirun", p.name, args=dict(p.args)[value]), env, mca, argv)
            elif p.apply in ("env", "mca"):
                check_value(self.name, p.name, texts[p.name])
                _apply(Setting(p.apply, p.name, texts[p.name]), env, mca, argv)
            if not is_choice(value, (p.default,)):
                for name, implied in p.implies:
                    mca[name] = implied
                for name, implied in dict(p.choice_implies).get(value, ()):
                    mca[name] = implied
        by_name = {p.name: p for p in self.parameters}
        for c in self.compose:
            if all(part in texts for part in c.parts) and not all(
                    is_choice(params[part], (by_name[part].default,)) for part in c.parts):
                value = c.template.format(**texts)
                check_value(self.name, c.name, value)
                _apply(Setting(c.apply, c.name, value), env, mca, argv)
        return LaunchSettings(env=tuple(env.items()), mca=tuple(mca.items()), mpirun_args=tuple(argv))

    def without(self, removed: set[str], narrowed: Mapping[str, tuple[Any, ...]]) -> "SearchSpace":
        """A copy with some parameters removed and others' choices narrowed (see resolve)."""
        params = []
        for p in self.parameters:
            if p.name in removed:
                continue
            if p.name in narrowed:
                choices = narrowed[p.name]
                p = replace(p, choices=choices,
                            args=tuple((c, a) for c, a in p.args if c in choices))
            params.append(p)
        return replace(self, parameters=tuple(params))


def assignments(params: Sequence[Parameter], context_values: Mapping[str, Any] | None = None
                ) -> Iterator[dict[str, Any]]:
    """Every assignment of the active parameters (a full grid), conditions followed as the
    sampler asks them: a parameter inactive under the values chosen before it is left out;
    context parameters take the allocation's value."""
    context_values = context_values or {}

    def walk(index: int, chosen: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if index == len(params):
            yield dict(chosen)
            return
        p = params[index]
        if not p.active(chosen):
            yield from walk(index + 1, chosen)
            return
        if p.apply == "context":
            values: Sequence[Any] = (context_values.get(p.name, p.default),)
        elif p.type == "int" and p.low is not None and p.high is not None:
            values = range(p.low, p.high + 1, p.step)  # every integer the sampler may ask
        else:
            values = p.choices
        for value in values:
            chosen[p.name] = value
            yield from walk(index + 1, chosen)
            del chosen[p.name]

    return walk(0, {})


def is_choice(value: Any, choices: tuple[Any, ...]) -> bool:
    """Membership with types: True == 1 and 1.0 == 1 in Python, but not here."""
    return any(type(value) is type(c) and value == c for c in choices)


def check_value(where: str, name: str, text: str) -> None:
    if not VALUE_RE.fullmatch(text):
        raise SpaceError(f"{where}: value {text!r} of {name} has characters outside "
                         "[A-Za-z0-9_.,:+*-] or starts with '-'")


def _apply(setting: Setting, env: dict, mca: dict, argv: list) -> None:
    if setting.apply == "env":
        env[setting.name] = setting.value
    elif setting.apply == "mca":
        mca[setting.name] = setting.value
    else:
        argv.extend(setting.args)
