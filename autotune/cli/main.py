"""The `autotune` command: the click group and the entry point. Parsing only; each command lives
in the module of its group (start, results, spaces, grid) and prints through `render`."""

from __future__ import annotations

import os
import sys

import click

from .. import __version__
from ..errors import AutotuneError
from .analyze import analyze
from .campaign import campaign
from .grid import bench, grid
from .report import report
from .results import best, export, history
from .spaces import probe, spaces
from .start import logs, start, status, stop
from .verify import verify


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="autotune")
def cli() -> None:
    """Find the fastest MPI runtime configuration for a collective on the nodes you have."""


for command in (start, status, stop, logs, campaign, history, best, export, verify, report, analyze, probe,
                spaces, grid, bench):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> None:
    """Entry point: every expected error is one line on stderr and a non-zero exit, no traceback."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(args=args, prog_name="autotune", standalone_mode=False, obj={"argv": args})
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        sys.stderr.write("autotune: aborted\n")
        sys.exit(130)
    except click.ClickException as exc:
        message = exc.format_message().replace("\n", " ")
        sys.stderr.write(f"autotune: error: {message}\n")
        sys.exit(exc.exit_code)
    except AutotuneError as exc:
        sys.stderr.write(f"autotune: error: {exc}\n")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("autotune: interrupted\n")
        sys.exit(130)
    except Exception as exc:  # a bug or an unforeseen environment problem: still one line
        if os.environ.get("AUTOTUNE_DEBUG"):
            raise
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        sys.stderr.write(f"autotune: internal error: {exc.__class__.__name__}: {first} "
                         "(AUTOTUNE_DEBUG=1 shows the traceback)\n")
        sys.exit(70)
