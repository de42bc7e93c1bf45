"""`nrsack generate ...`: write captures."""

import click


@click.group()
def generate():
    """Write captures: the papers' timelines, simulated transfers."""


@generate.command()
@click.option("--out", "out_dir", default="sample-pcaps", show_default=True,
              type=click.Path(file_okay=False), help="Folder to write the pcaps into.")
def timelines(out_dir):
    """Write the papers' timelines (and the broken vectors) as pcaps, byte for byte reproducibly."""
    from nrsack.generator.timelines import write_all

    for path in write_all(out_dir):
        click.echo(str(path))


from nrsack.generator.simulate_cli import simulate, sweep  # noqa: E402  (the simulator's commands)

generate.add_command(simulate)
generate.add_command(sweep)
