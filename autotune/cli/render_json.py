"""The JSON form of command results (render.emit prints it): one document per result, built by
`to_json`, one registration per result type (models.*)."""

from __future__ import annotations

from functools import singledispatch
from typing import Any

from .models import (
    BestReport,
    CampaignStatusReport,
    ProbeReport,
    SpaceDetail,
    SpaceList,
    SpaceValidation,
    StatusReport,
    VerifyReport,
)


def conditions(p: Any) -> list[str]:
    """When a knob of a space is searched, in words (the space listings, text and JSON)."""
    conditions = []
    if p.collectives:
        conditions.append("/".join(p.collectives))
    if p.scope != "any":
        conditions.append(p.scope)
    conditions += [f"{k} in {'|'.join(map(str, v))}" for k, v in p.when]
    conditions += [f"needs {r}" for r in p.requires]
    if p.yields_to:
        conditions.append(f"unless {' and '.join(p.yields_to)} apply")
    conditions += [f"{c} needs {', '.join(map(str, reqs))}" for c, reqs in p.choice_requires]
    conditions += [f"{c} brings {', '.join(f'{k}={v}' for k, v in pairs)}"
                   for c, pairs in p.choice_implies]
    if p.unset_means:
        conditions.append("unset: what Open MPI selects on the nodes (probed)")
    return conditions


@singledispatch
def to_json(result: Any) -> Any:
    raise TypeError(f"no JSON form for {type(result).__name__}")


@to_json.register
def _(result: StatusReport) -> Any:
    return result.status.to_dict()


@to_json.register
def _(result: SpaceList) -> Any:
    return [{"name": s.name, "stack": s.stack, "knobs": len(s.parameters),
             "description": s.description, "parameters": list(s.parameters)}
            for s in result.spaces]


@to_json.register
def _(result: SpaceDetail) -> Any:
    space = result.space
    return {
        "name": space.name, "stack": space.stack, "description": space.description,
        "sources": list(space.sources), "digest": space.digest,
        "fixed": [{"name": s.name, "apply": s.apply, "value": s.value, "args": list(s.args),
                   "why": s.why} for s in space.fixed],
        "parameters": [_parameter_json(p) for p in space.parameters],
        "compose": [{"name": c.name, "apply": c.apply, "template": c.template,
                     "parts": list(c.parts)} for c in space.compose],
    }


def _parameter_json(p: Any) -> dict[str, Any]:
    return {
        "name": p.name, "apply": p.apply, "type": p.type, "default": p.default,
        "choices": list(p.choices), "low": p.low, "high": p.high, "step": p.step, "log": p.log,
        "choices_text": p.describe_choices(), "choices_from": p.choices_from or None,
        "context": p.context or None, "collectives": list(p.collectives), "scope": p.scope,
        "when": {key: list(values) for key, values in p.when},
        "requires": [str(r) for r in p.requires],
        "choice_requires": {str(c): [str(r) for r in reqs] for c, reqs in p.choice_requires},
        "yields_to": list(p.yields_to), "implies": dict(p.implies),
        "choice_implies": {str(c): dict(pairs) for c, pairs in p.choice_implies},
        "unset_means": p.unset_means,
        "args": {str(choice): list(argv) for choice, argv in p.args},
        "only_when": "; ".join(conditions(p)), "source": p.source, "help": p.help,
    }


@to_json.register
def _(result: SpaceValidation) -> Any:
    return {"path": result.path, "valid": True, "stack": result.stack,
            "parameters": list(result.parameters),
            "removed": {collective: list(removed) for collective, removed in result.removed},
            "machine_error": result.machine_error}


@to_json.register
def _(result: ProbeReport) -> Any:
    return {**result.caps.to_dict(), "other_mpis": [other.to_dict() for other in result.others],
            "spaces": {family: list(names) for family, names in result.spaces.items()}}


@to_json.register
def _(result: BestReport) -> Any:
    cfg = result.best
    from ..claims import below_noise_floor

    check = cfg.verification
    speedup, value = cfg.search_figures
    data = {"study": cfg.study, "trial": cfg.trial, "value": value, "speedup": speedup,
            "pruned": cfg.pruned,
            "is_default": cfg.is_default, "params": cfg.params, "env": cfg.env, "mca": cfg.mca,
            "mpirun_args": list(cfg.mpirun_args),
            "confirmed_speedup": list(cfg.confirmed_speedup) if cfg.confirmed_speedup else None,
            "verification": check.to_dict() if check is not None else None,
            "verification_text": check.describe() if check is not None else None,
            "noise_floor": cfg.noise.to_dict() if cfg.noise is not None else None,
            "below_noise_floor": below_noise_floor(cfg.noise, cfg.claimed),
            "recommended": not cfg.disagrees}
    if result.overlap is not None:  # a non-blocking collective: IMB-NBC's columns per size
        from dataclasses import asdict

        data["overlap"] = {"objective": result.overlap.objective, **{
            tag: None if side is None else {"trial": side.trial, "label": side.label,
                                            "rows": [asdict(r) for r in side.rows]}
            for tag, side in (("default", result.overlap.default),
                              ("best", result.overlap.best))}}
    return data


@to_json.register
def _(result: VerifyReport) -> Any:
    return {"study": result.study, **result.verification.to_dict(),
            "text": result.verification.describe()}


@to_json.register
def _(result: CampaignStatusReport) -> Any:
    return result.status.to_dict()
