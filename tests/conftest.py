"""Fixtures of the C Wireshark plugin's tests (dissector/): build it once per session."""

import pytest

from support import tshark


@pytest.fixture(scope="session")
def nrsack_c_plugin(tmp_path_factory):
    """Plugin.c(...) of a fresh CMake build of dissector/ into build/dissector."""
    so = tshark.build_c_plugin()
    return tshark.Plugin.c(tshark.c_plugin_folder(so, tmp_path_factory.mktemp("plugin")))
