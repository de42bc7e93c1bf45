"""`nrsack generate ...`: write captures."""

import click


@click.group()
def generate():
    """Write captures: the papers' timelines, simulated transfers."""


@generate.command()
@click.option("--out", "out_dir", default="sample-pcaps", show_default=True,
              type=click.Path(file_okay=False), help="Folder to write the pcaps into.")
def timelines(out_dir):
    """Write the papers' timelines (and the broken and conformance vectors) as pcaps, byte for byte
    reproducibly, with the conformance vectors' expected files (made from the vectors themselves)."""
    from nrsack.generator.timelines import conformance, write_all

    for path in write_all(out_dir) + conformance.write_expected(out_dir):
        click.echo(str(path))


from nrsack.generator.simulate_cli import simulate, sweep  # noqa: E402  (the simulator's commands)

generate.add_command(simulate)
generate.add_command(sweep)
