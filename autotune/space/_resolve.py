"""Check a space against what this machine offers: remove every choice that cannot work here and
say why, fill enumerations from ompi_info, and read allocation context (NPS) from the nodes."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import SpaceError
from ..probe import Capabilities, mpich_accepts
from ._model import UNSET, Parameter, Requirement, SearchSpace, TrialContext

CVAR_PREFIX = "MPIR_CVAR_"
STACK_FAMILIES = {"openmpi": ("openmpi",), "mpich": ("mpich",), "cray-mpich": ("mpich",)}


def family_of(stack: str) -> str | None:
    """The MPI family to probe for a space's stack: MPICH for the MPICH stacks (Debian installs
    it beside Open MPI, which the probe finds first), else None (whatever the machine runs)."""
    families = STACK_FAMILIES.get(stack, ())
    return "mpich" if "mpich" in families else None


@dataclass(frozen=True)
class Removal:
    parameter: str
    choice: Any
    reason: str

    def __str__(self) -> str:
        what = self.parameter if self.choice is None else f"{self.parameter}={self.choice}"
        return f"{what}: {self.reason}"


@dataclass(frozen=True)
class ResolvedSpace:
    space: SearchSpace
    removed: tuple[Removal, ...]
    context_values: dict[str, Any]  # context parameter -> this allocation's value
    in_force: dict[str, str] | None = None  # selector -> what `unset` selects on these nodes


def unmet(requirement: Requirement, caps: Capabilities, ctx: TrialContext | None = None) -> str:
    """Why a requirement does not hold here, or '' when it does."""
    if requirement.kind == "scope":
        nodes = ctx.nodes if ctx else 1
        if (requirement.value == "single-node") == (nodes > 1):
            return f"{requirement.value} only; this study runs on {nodes} node(s)"
        return ""
    if requirement.kind == "mca_component":
        framework, _, component = requirement.value.partition("/")
        if not caps.has_component(framework, component):
            return f"{caps.mpi} has no {framework}/{component} component"
    elif requirement.kind == "ucx_transport":
        if not caps.has_ucx_transport(requirement.value):
            devices = ", ".join(caps.ucx_transports) or "none"
            return f"no UCX {requirement.value} transport on this node (UCX transports: {devices})"
    elif requirement.kind == "ucx_feature":
        if requirement.value not in caps.ucx_features:
            return f"UCX {caps.ucx_version or '(absent)'} lacks {requirement.value}"
    elif requirement.kind == "mpi" and requirement.value != caps.mpi_family:
        return f"needs {requirement.value}, this machine runs {caps.mpi}"
    return ""


def cvar_problems(param: Parameter, choices: tuple[Any, ...], caps: Capabilities
                  ) -> tuple[str, dict[Any, str]]:
    """An MPICH control variable checked against the MPICH that runs the study, as UCX knobs
    are: its name among those `mpivars` lists (MPICH ignores a name it does not know, so a
    misspelled one would tune nothing), and each value started once (MPICH aborts in MPI_Init
    on a value it does not know). Returns why the name is unknown ('' when known) and the
    rejected choices with why."""
    if param.name not in caps.cvars:
        return (f"not a control variable of {caps.mpi} (`mpivars` lists {len(caps.cvars)}; "
                "MPICH would ignore it)"), {}
    rejected = {c: f"{caps.mpi} rejects {param.name}={c} at MPI_Init" for c in choices
                if c != UNSET and not mpich_accepts(param.name, str(c))}
    return "", rejected


def context_value(param: Parameter, caps: Capabilities) -> Any:
    if param.context == "nps":
        return caps.numa.nps
    raise SpaceError(f"unknown allocation property {param.context!r}")


def resolve(space: SearchSpace, caps: Capabilities, ctx: TrialContext) -> ResolvedSpace:
    families = STACK_FAMILIES.get(space.stack)
    if families and caps.mpi_family not in families:
        raise SpaceError(f"search space {space.name} is for {space.stack}; this machine runs "
                         f"{caps.mpi}")
    removed: list[Removal] = []
    drop: set[str] = set()
    narrowed: dict[str, tuple[Any, ...]] = {}
    context_values: dict[str, Any] = {}
    available: dict[str, tuple[Any, ...]] = {}
    for p in space.parameters:
        if p.collectives and ctx.collective not in p.collectives:
            continue  # another collective's knob: not worth a line
        if not p.applies_to(ctx):
            drop.add(p.name)
            removed.append(Removal(p.name, None, f"{p.scope} only; this study runs on {ctx.nodes} node(s)"))
            continue
        reasons = [r for r in (unmet(req, caps, ctx) for req in p.requires) if r]
        if reasons:
            drop.add(p.name)
            removed.append(Removal(p.name, None, reasons[0]))
            continue
        choices = p.choices
        if p.choices_from == "ompi_info":
            listed = caps.enumerators.get(p.name)
            if not listed:
                drop.add(p.name)
                removed.append(Removal(p.name, None, f"{caps.mpi} does not list this parameter"))
                continue
            if p.choices:
                for c in p.choices:
                    if c not in listed:
                        removed.append(Removal(p.name, c, f"not offered by {caps.mpi}"))
                choices = tuple(c for c in p.choices if c in listed)
            else:
                choices = tuple(sorted(listed))
            if p.default not in choices:
                drop.add(p.name)
                removed.append(Removal(p.name, None, f"its default {p.default} is not offered by {caps.mpi}"))
                continue
        if p.name.startswith(CVAR_PREFIX) and caps.cvars:  # MPICH's, checked live
            unknown, rejected = cvar_problems(p, choices, caps)
            if unknown or p.default in rejected:
                drop.add(p.name)
                removed.append(Removal(p.name, None, unknown or f"{caps.mpi} rejects its default "
                                       f"{p.default}: {rejected[p.default]}"))
                continue
            removed += [Removal(p.name, c, why) for c, why in rejected.items()]
            choices = tuple(c for c in choices if c not in rejected)
        if p.apply == "context":
            value = context_value(p, caps)
            if value not in choices:
                raise SpaceError(f"{space.name}: {p.name} of this allocation is {value}, not one of "
                                 f"{', '.join(map(str, choices))}")
            context_values[p.name] = value
        for choice, requirements in p.choice_requires:
            reasons = [r for r in (unmet(req, caps, ctx) for req in requirements) if r]
            if reasons and choice in choices:
                choices = tuple(c for c in choices if c != choice)
                removed.append(Removal(p.name, choice, reasons[0]))
        if p.type != "int" and p.apply != "context" and len(choices) < 2:
            drop.add(p.name)
            removed.append(Removal(p.name, None, "only its default is possible here"))
            continue
        if choices != p.choices:
            narrowed[p.name] = choices
        available[p.name] = choices
    # a conditional parameter whose condition can no longer hold is never active
    for p in space.parameters:
        if p.name in drop or p.name not in available:
            continue
        for parent, values in p.when:
            if parent in drop or not set(values) & set(available.get(parent, ())):
                drop.add(p.name)
                removed.append(Removal(p.name, None, f"needs {parent} in {list(values)}, which is not "
                                                     "possible here"))
                break
    # a knob with a finer replacement (UCX_RNDV_THRESH -> intra/inter parts) stays only where
    # the replacement cannot be used: one node, or a UCX without the split form
    kept = set(available) - drop
    for p in space.parameters:
        if p.name in kept and p.gives_way(kept):
            drop.add(p.name)
            removed.append(Removal(p.name, None, f"gives way to {', '.join(p.yields_to)} on "
                                                 f"{ctx.nodes} node(s)"))
    resolved = space.without(drop, narrowed)
    resolved, in_force = _unset_in_force(resolved, caps, removed)
    return ResolvedSpace(space=resolved, removed=tuple(removed), context_values=context_values,
                         in_force=in_force)


def selector_in_force(name: str, caps: Capabilities) -> str:
    """The component Open MPI selects on its own for a framework selector (only pml so far):
    what a site's own setting names (mca-params.conf shows as the parameter's default), else pml
    ucx where one of the nodes' devices matches pml_ucx_devices (Open MPI 4.1: mlx*), else ob1
    (cm needs an MTL that these spaces do not search)."""
    if name != "pml":
        raise SpaceError(f"the probe cannot tell which {name} Open MPI selects")
    site = caps.mca_defaults.get("pml", "").strip()
    if site and not site.startswith("^") and "," not in site:
        return site
    excluded = site[1:].split(",") if site.startswith("^") else []
    if "ucx" not in excluded and caps.pml_ucx_selected_by_default():
        return "ucx"
    return "ob1"


def _unset_in_force(space: SearchSpace, caps: Capabilities, removed: list[Removal]
                    ) -> tuple[SearchSpace, dict[str, str]]:
    """For a selector whose `unset` is read from the nodes (pml): conditions that name the
    component in force hold for `unset` too (UCX knobs are live under the untuned stack where
    pml ucx is selected by default), and choosing it explicitly is no separate configuration,
    so that choice (and the companions it brings) goes (on the quick start here, pml=ob1 with
    nothing else set was proposed 3 times in 20 trials and measured 0.84x..1.06x: noise)."""
    in_force: dict[str, str] = {}
    params = list(space.parameters)
    for p in space.parameters:
        if p.unset_means != "probe":
            continue
        chosen = selector_in_force(p.name, caps)
        in_force[p.name] = chosen
        if chosen in p.choices and len(p.choices) > 2:
            removed.append(Removal(p.name, chosen, f"the same as {UNSET} here: Open MPI selects "
                                                   f"{chosen} on its own"))
            params = [replace(q, choices=tuple(c for c in q.choices if c != chosen),
                              choice_implies=tuple(c for c in q.choice_implies if c[0] != chosen))
                      if q.name == p.name else q for q in params]
        params = [replace(q, when=tuple((n, (*v, UNSET) if n == p.name and chosen in v
                                         and UNSET not in v else v) for n, v in q.when))
                  for q in params]
    return replace(space, parameters=tuple(params)), in_force
