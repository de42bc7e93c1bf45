"""Fixtures of the C Wireshark plugin's tests (dissector/): build it once per session."""

import shutil

import pytest

from support import tshark


@pytest.fixture(scope="session")
def nrsack_c_plugin():
    """Plugin.c(...) of a fresh CMake build of dissector/ into build/dissector."""
    # not under pytest's tmp_path: its 0700 parents would hide the plugin from the unprivileged tshark
    folder = tshark.c_plugin_folder(tshark.build_c_plugin())
    yield tshark.Plugin.c(folder)
    shutil.rmtree(folder, ignore_errors=True)
