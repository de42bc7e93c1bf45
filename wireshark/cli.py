"""`nrsack wireshark install [--c | --lua] [--user | --system] [--force]`, `uninstall`, `status`.

Problems the user can act on (no tshark, an untested Wireshark, no headers for --c, a build failure)
end with one line on stderr and exit code 2.
"""

import sys

import click

from nrsack.wireshark import install as installer


def _wireshark(tshark):
    try:
        return installer.find_wireshark(tshark)
    except installer.InstallError as e:
        _fail(e)


def _fail(error):
    click.echo(f"nrsack: error: {error}", err=True)
    sys.exit(2)


_scope = [click.option("--user", "scope", flag_value="user", default=True,
                       help="Your personal Wireshark folders (default; no root needed)."),
          click.option("--system", "scope", flag_value="system", help="The global folders (needs root).")]
_tshark = click.option("--tshark", metavar="PATH", help="The tshark whose Wireshark to use (default: from PATH).")


def _options(options):
    def apply(f):
        for option in reversed(options):
            f = option(f)
        return f
    return apply


@click.group()
def wireshark():
    """Install the nrsack Wireshark plugin and profile, remove them, or show what tshark loads."""


@wireshark.command()
@click.option("--c", "kind", flag_value="c", help="The C plugin (needs wireshark-dev of the same version, cmake, gcc).")
@click.option("--lua", "kind", flag_value="lua", help="The Lua plugin.")
@_options(_scope)
@click.option("--force", is_flag=True, help="Install on a Wireshark release nrsack was not tested with.")
@_tshark
def install(kind, scope, force, tshark):
    """Install the plugin (C when this Wireshark's headers are present, else Lua) and the "nrsack" profile."""
    ws = _wireshark(tshark)
    try:
        installer.check_tested(ws, force)
        chosen = installer.choose_kind(ws, kind)
        for line in installer.install(ws, chosen, scope == "system"):
            click.echo(line)
    except (installer.InstallError, OSError) as e:
        _fail(e)
    click.echo(f"Use it: wireshark -C {installer.PROFILE_NAME} (or tshark -C {installer.PROFILE_NAME}); "
               "`nrsack wireshark status` shows what tshark loads.")


@wireshark.command()
@_options(_scope)
@_tshark
def uninstall(scope, tshark):
    """Remove the nrsack plugin and profile from one scope."""
    ws = _wireshark(tshark)
    try:
        done = installer.uninstall(ws, scope == "system")
    except OSError as e:
        _fail(e)
    click.echo("\n".join(done) if done else "nothing of nrsack was installed there")


@wireshark.command()
@_tshark
def status(tshark):
    """Wireshark's version, what nrsack installed where, and what tshark loads."""
    ws = _wireshark(tshark)
    lines, warnings = installer.status(ws)
    click.echo("\n".join(lines))
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
