"""Command line: argument parsing and rendering only; the work is done by the modules it calls.

`main` is the console-script entry point (`autotune = "autotune.cli:main"`), `cli` the click group.
"""

from .main import cli, main
from .options import parse_duration

__all__ = ["cli", "main", "parse_duration"]
