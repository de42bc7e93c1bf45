"""`nrsack generate ...`: write captures."""

import click


@click.group()
def generate():
    """Write captures: the papers' timelines, simulated transfers."""
