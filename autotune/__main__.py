"""`python -m autotune` runs the CLI (the daemon re-executes itself this way)."""

from .cli import main

main()
