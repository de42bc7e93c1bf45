"""The Wireshark release under test is the one asked for (NRSACK_WIRESHARK: native 4.0, trixie 4.4,
forky 4.6), and the C plugin built for it loads there with its type: `make test` runs the plugin suites
once per release, and a chroot that silently ran another release would prove nothing."""

import re

import pytest

from support import tshark

pytestmark = pytest.mark.tshark


def tshark_release() -> str:
    out = tshark.run_tshark(["-v"], tshark.Plugin.none()).stdout
    m = re.search(r"TShark \(Wireshark\) (\d+)\.(\d+)\.\d+", out)
    assert m, out[:300]
    return f"{m.group(1)}.{m.group(2)}"


def test_runs_the_release_of_the_target():
    assert tshark_release() == tshark.WIRESHARK_RELEASE
    if tshark.WIRESHARK_TARGET != "native":
        assert tshark.WIRESHARK_RELEASE == tshark.CHROOT_SUITES[tshark.WIRESHARK_TARGET]


def test_c_plugin_is_listed_with_its_type(nrsack_c_plugin):
    listing = tshark.run_tshark(["-G", "plugins"], nrsack_c_plugin).stdout
    rows = [line.split("\t") for line in listing.splitlines() if line.startswith("nrsack.so")]
    assert rows, listing[-2000:]
    name, version, kind = rows[0][:3]
    assert version == (tshark.REPO / "VERSION").read_text().strip()
    # 4.2 and later take the type from plugin_describe() and print "unknown" without it.
    assert kind == "dissector", rows[0]


def test_lua_plugin_runs_as_the_unprivileged_user():
    """4.4+ skip `-X lua_script:` silently as root: the runner must drop privileges, or the Lua suites
    would compare nothing."""
    out = tshark.run_tshark(["-G", "plugins"], tshark.Plugin.lua(tshark.REPO / "lua" / "nrsack.lua")).stdout
    assert "nrsack.lua" in out, out[-2000:]
