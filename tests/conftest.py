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


def pytest_sessionstart(session):
    """NRSACK_WIRESHARK=trixie|forky: make (or unpack) that chroot once, before any test, so a broken
    mirror fails the run loudly at its start rather than in every test."""
    if tshark.WIRESHARK_TARGET != "native" and not tshark.target_unavailable():
        tshark.prepare_target()


def pytest_collection_modifyitems(config, items):
    """A chroot target this machine cannot run (no root, no debootstrap) skips, saying why."""
    reason = tshark.target_unavailable() if tshark.WIRESHARK_TARGET != "native" else None
    for item in items if reason else []:
        item.add_marker(pytest.mark.skip(reason=reason))
