"""`python -m autotune.cli` runs the CLI, like `python -m autotune`."""

from .main import main

main()
