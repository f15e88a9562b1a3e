"""`autotune report`: (being written)."""

import click


@click.command()
def report() -> None:
    """(being written)"""
    raise click.ClickException("report is being written")
