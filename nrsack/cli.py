"""The `nrsack` command: one click group whose subcommands live in the packages that own them.

Subcommands are imported only when invoked, so `nrsack generate` does not pay for pandas and
`nrsack analyze` does not pay for Dash; `nrsack --help` imports none of them.
"""

import importlib
import os

import click

# nrsack does no linear algebra, but numpy's OpenBLAS starts a thread per core at import and they
# spin for a while (~5% of a short analysis' CPU); the command, unlike the library, owns its process
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# name -> ("module:attribute" of a click command or group, its line in `nrsack --help`). Only working
# commands are listed. The lines are written here, whole: click would cut each command's docstring at
# its first full stop ("Throughput of RUN_A (e.g.") or at the terminal's width.
SUBCOMMANDS = {
    "analyze": ("nrsack.analyzer.views.cli:analyze", "RtxQ, send-buffer blocking and p/q of a capture"),
    "check": ("nrsack.analyzer.views.check_cli:check", "Conformance of the peers in captures to the rules"),
    "compare": ("nrsack.analyzer.views.cli:compare", "Throughput and gain of one run over another"),
    "dashboard": ("nrsack.dashboard.cli:dashboard", "RtxQ, blocking and findings in the browser"),
    "docs": ("nrsack.cli:docs", "Print one of nrsack's documents (metrics, rules, ...)"),
    "generate": ("nrsack.generator.cli:generate", "Write captures: the papers' timelines, simulations"),
    "lab": ("nrsack.lab.cli:lab", "Real stacks over an emulated path, NR-SACK on and off"),
    "plot": ("nrsack.dashboard.cli:plot", "An HTML plot of the RtxQ over time, blocking shaded"),
    "reproduce": ("nrsack.generator.sim.reproduce:reproduce", "Rerun a paper's figure beside its statements"),
    "wireshark": ("nrsack.wireshark.cli:wireshark", "Install, inspect or remove the Wireshark plugin"),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx, name):
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, attribute = target[0].split(":")
        return getattr(importlib.import_module(module_name), attribute)

    def format_commands(self, ctx, formatter):
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in sorted(SUBCOMMANDS.items())])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nrsack")
def main():
    """NR-SACK and Fast SACK toolkit: generate, analyze and check captures."""


def shipped_docs() -> dict:
    """name -> path of the documents the package carries (docs/*.md, package nrsack.docs)."""
    from importlib.resources import files

    return {entry.name[:-3]: entry for entry in files("nrsack.docs").iterdir() if entry.name.endswith(".md")}


@click.command()
@click.argument("name", required=False)
def docs(name):
    """Print the document NAME (e.g. metrics, rules, decisions); without NAME, list them.

    The help texts cite documents by these names; they travel with the package, so an installed
    wheel has them too."""
    found = shipped_docs()
    if name is None:
        for known in sorted(found):
            title = next((line.lstrip("# ") for line in found[known].read_text().splitlines()
                          if line.startswith("# ")), "")
            click.echo(f"{known:16} {title}")
        return
    key = name.removeprefix("docs/").removesuffix(".md")
    if key not in found:
        raise click.UsageError(f"no document {name!r} (there are: {', '.join(sorted(found))})")
    click.echo(found[key].read_text(), nl=False)
