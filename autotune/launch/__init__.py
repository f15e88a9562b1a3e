"""Launchers build argv for one kind of allocation; `run_command` executes it. The session picks
the launcher (see session.make_launcher)."""

from __future__ import annotations

from ._base import Command, Launcher, LaunchSpec, RunResult
from .executor import run_command
from .local import LocalLauncher
from .mpich import MpichLauncher


__all__ = ["Command", "Launcher", "LaunchSpec", "LocalLauncher", "MpichLauncher", "RunResult",

           "run_command"]
