"""Launchers by name. A launcher builds argv; `run_command` executes it."""

from __future__ import annotations

from ..errors import InputError
from ._base import Command, Launcher, LaunchSpec, RunResult
from .executor import run_command
from .local import LocalLauncher
from .mpich import MpichLauncher

_REGISTRY = {"local": LocalLauncher, "mpich": MpichLauncher}


def get_launcher(name: str) -> Launcher:
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise InputError(f"unknown launcher {name!r} (available: {', '.join(_REGISTRY)})") from None


__all__ = ["Command", "Launcher", "LaunchSpec", "LocalLauncher", "MpichLauncher", "RunResult",
           "get_launcher",
           "run_command"]
