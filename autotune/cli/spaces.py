"""`autotune spaces list|show|validate` and `autotune probe`: what can be tuned, and on what."""

from __future__ import annotations

import click

from ..benchmarks import ALL_COLLECTIVES
from ..errors import AutotuneError
from . import render
from .models import ProbeReport, SpaceDetail, SpaceList, SpaceValidation, space_summary
from .options import format_option

TEXT_HELP = "text: a table on a terminal, tab-separated lines with a header when piped"


@click.command()
@format_option("text", "json")
def probe(fmt: str) -> None:
    """What this machine offers: MPI, components, UCX transports, NUMA layout, pml ucx."""
    from ..probe import installed_families, probe_capabilities
    from ..space import available_spaces, family_of, load_space

    caps = probe_capabilities()
    others = tuple(probe_capabilities(family) for family in installed_families()
                   if family != caps.mpi_family)
    spaces: dict[str, list[str]] = {}
    for name in available_spaces():
        stack = load_space(name).stack
        spaces.setdefault(family_of(stack) or stack, []).append(name)
    render.emit(ProbeReport(caps, others, {k: tuple(v) for k, v in spaces.items()}), fmt)


@click.group()
def spaces() -> None:
    """Search spaces: list, show, validate."""


@spaces.command("list")
@format_option("text", "json", help=TEXT_HELP)
def spaces_list(fmt: str) -> None:
    """Shipped search spaces."""
    from ..space import available_spaces, load_space

    render.emit(SpaceList(tuple(space_summary(name, load_space(name))
                                for name in available_spaces())), fmt)


@spaces.command("show")
@click.argument("name")
@format_option("text", "json", help=TEXT_HELP)
def spaces_show(name: str, fmt: str) -> None:
    """Every knob of a space (NAME, FILE or A+B) with how it is applied, its default and source."""
    from ..space import load_space

    render.emit(SpaceDetail(load_space(name)), fmt)


@spaces.command("validate")
@click.argument("path")
@format_option("text", "json")
def spaces_validate(path: str, fmt: str) -> None:
    """Check a space file (schema, safety); with the installed MPI, show what would be removed."""
    from ..probe import probe_capabilities
    from ..space import TrialContext, load_space, resolve

    space = load_space(path)
    caps = probe_capabilities()
    removed: list[tuple[str, tuple[str, ...]]] = []
    machine_error = None
    for collective in ALL_COLLECTIVES:
        ctx = TrialContext(collective, 1)
        if not any(p.applies_to(ctx) for p in space.parameters):
            continue
        try:
            resolved = resolve(space, caps, ctx)
        except AutotuneError as exc:
            machine_error = str(exc)
            break
        removed.append((collective, tuple(str(r) for r in resolved.removed)))
    render.emit(SpaceValidation(path=path, stack=space.stack,
                                parameters=tuple(p.name for p in space.parameters),
                                removed=tuple(removed), machine_error=machine_error), fmt)
