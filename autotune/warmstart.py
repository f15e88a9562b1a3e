"""Warm start: enqueue known-good configurations (e.g. the published winners of seeds/000) before
the sampler explores, keeping only what the resolved space and this allocation allow."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from .errors import InputError, SpaceError
from .files import WARMSTART_MAX_BYTES, read_text_input
from .space import SPACES_DIR, SearchSpace, TrialContext, is_choice, parse_yaml
from .storage import TrialKey

SHIPPED = SPACES_DIR / "warm-start"  # beside the shipped spaces, found the same way


@dataclass(frozen=True)
class WarmConfig:
    collective: str
    nodes: int
    ppn: int
    params: dict[str, Any]
    note: str = ""


@dataclass
class WarmParams:
    params: dict[str, Any]
    note: str
    dropped: list[str] = field(default_factory=list)


def load_warm_start(spec: str) -> list[WarmConfig]:
    """A file path, or the name of a shipped file (e.g. `seed000-winners`)."""
    path = Path(spec)
    if not path.is_file():
        path = SHIPPED / f"{spec}.yaml"
        if not path.is_file():
            shipped = ", ".join(p.stem for p in sorted(SHIPPED.glob("*.yaml")))
            raise InputError(f"warm-start file {spec!r} not found (shipped: {shipped})")
    try:
        doc = parse_yaml(read_text_input(path, "warm-start file", WARMSTART_MAX_BYTES), str(path))
    except SpaceError as exc:
        raise InputError(str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("configs"), list):
        raise InputError(f"{path}: expected `configs:` with a list of entries")
    configs = []
    for i, item in enumerate(doc["configs"]):
        where = f"{path}: configs[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("params"), dict):
            raise InputError(f"{where}: needs params: (a mapping)")
        match = item.get("match") or {}
        try:
            configs.append(WarmConfig(collective=str(match["collective"]), nodes=int(match["nodes"]),
                                      ppn=int(match["ppn"]), params=dict(item["params"]),
                                      note=str(item.get("note", ""))))
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{where}: match: needs collective, nodes and ppn") from None
    return configs


def select(configs: list[WarmConfig], collective: str, nodes: int, ppn: int) -> list[WarmConfig]:
    """Entries of this collective and node count, at the exact ppn or else the nearest one."""
    same = [c for c in configs if c.collective == collective and c.nodes == nodes]
    if not same:
        return []
    best = min(abs(c.ppn - ppn) for c in same)
    return [c for c in same if abs(c.ppn - ppn) == best]


def to_params(config: WarmConfig, space: SearchSpace, ctx: TrialContext,
              context_values: dict[str, Any]) -> WarmParams:
    """The entry as params of the resolved space: unknown or impossible values fall back to the
    default (and are reported), context parameters take this allocation's value."""
    params: dict[str, Any] = {}
    dropped: list[str] = []
    known = {p.name for p in space.for_context(ctx)}
    for name in config.params:
        if name not in known:
            dropped.append(f"{name} (not searchable here)")
    for p in space.for_context(ctx):
        if not p.active(params):
            continue
        value = config.params.get(p.name, p.default)
        if p.apply == "context":
            if p.name in config.params and value != context_values.get(p.name):
                dropped.append(f"{p.name}={value} (this allocation has {context_values.get(p.name)})")
            value = context_values.get(p.name, p.default)
        elif p.type == "int":
            if not isinstance(value, int) or not p.low <= value <= p.high:
                dropped.append(f"{p.name}={value}")
                value = p.default
        elif not is_choice(value, p.choices):
            dropped.append(f"{p.name}={value} (not possible here)")
            value = p.default
        params[p.name] = value
    return WarmParams(params=params, note=config.note, dropped=dropped)


def enqueue_warm_start(study: optuna.Study, spec: str, space: SearchSpace, ctx: TrialContext,
                       context_values: dict[str, Any], collective: str, nodes: int,
                       ppn: int) -> list[str]:
    """Enqueue matching known-good configurations once each; return one line per decision."""
    lines = enqueue_configs(study, select(load_warm_start(spec), collective, nodes, ppn), space,
                            ctx, context_values)
    return lines or [f"no entry of {spec} matches {collective} on {nodes} node(s)"]


def enqueue_configs(study: optuna.Study, configs: list[WarmConfig], space: SearchSpace,
                    ctx: TrialContext, context_values: dict[str, Any]) -> list[str]:
    """Enqueue each configuration, adapted to the resolved space, unless the study already has
    it (measured or queued); one line per decision."""
    lines = []
    seen = {tuple(sorted((t.params or t.system_attrs.get("fixed_params") or {}).items()))
            for t in study.trials}  # a queued trial has no params yet, only fixed ones
    for config in configs:
        warm = to_params(config, space, ctx, context_values)
        key = tuple(sorted(warm.params.items()))
        dropped = f" (adapted: {', '.join(warm.dropped)})" if warm.dropped else ""
        if key in seen:
            lines.append(f"skipped, already tried or queued: {warm.note}{dropped}")
            continue
        seen.add(key)
        study.enqueue_trial(warm.params, user_attrs={TrialKey.WARM_START: warm.note})
        lines.append(f"queued: {warm.note}{dropped}")
    return lines
