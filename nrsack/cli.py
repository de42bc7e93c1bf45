"""The `nrsack` command: one click group whose subcommands live in the packages that own them.

Subcommands are imported only when invoked, so `nrsack generate` does not pay for pandas and
`nrsack analyze` does not pay for Dash.
"""

import importlib
import os

import click

# nrsack does no linear algebra, but numpy's OpenBLAS starts a thread per core at import and they
# spin for a while (~5% of a short analysis' CPU); the command, unlike the library, owns its process
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# name -> "module:attribute" of a click command or group. Only working commands are listed.
SUBCOMMANDS = {
    "generate": "nrsack.generator.cli:generate",
    "analyze": "nrsack.analyzer.views.cli:analyze",
    "plot": "nrsack.analyzer.views.cli:plot",
    "compare": "nrsack.analyzer.views.cli:compare",
    "dashboard": "nrsack.dashboard.cli:dashboard",
    "check": "nrsack.analyzer.views.check_cli:check",
    "reproduce": "nrsack.generator.sim.reproduce:reproduce",
    "lab": "nrsack.lab.cli:lab",
    "wireshark": "nrsack.wireshark.cli:wireshark",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx, name):
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        return getattr(importlib.import_module(module_name), attribute)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nrsack")
def main():
    """NR-SACK and Fast SACK toolkit: generate, analyze and check captures."""
