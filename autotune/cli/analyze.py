"""`autotune analyze`: (being written)."""

import click


@click.command()
def analyze() -> None:
    """(being written)"""
    raise click.ClickException("analyze is being written")
