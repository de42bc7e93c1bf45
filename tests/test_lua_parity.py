"""The Lua plugin (lua/nrsack.lua) gives the same output as the C plugin.

- Every sample capture: the golden output (tests/support/tshark.py format: every nrsack field with
  -E occurrence=a, the nrsack findings and the -z expert summary) equals the C plugin's checked-in
  tests/golden/NAME.golden; where a capture has no golden file yet, the live C build's output.
- Hand-built captures that exercise every rule one pass can decide, FSACK, SCTP over UDP, IPv6, TSN /
  sequence wrap, never-renege, MPTCP v0 (SHA-1 tokens) and v1 (SHA-256) with a joined subflow and
  64-bit DSNs: Lua output equals the live C build's.
- The Lua plugin shows the same on one pass, on two passes (-2) and under a display filter.
The difference is printed on failure.
"""

from __future__ import annotations


import pytest

from support import tshark
from support.samples import PCAPS, SAMPLES, golden_path, golden_sndbuf, ident
from support.lua_compare import assert_same, table_rows
from support.tshark import LUA_PLUGIN
from support.vectors import VECTORS

pytestmark = pytest.mark.tshark

REPO = tshark.REPO


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------

def test_sample_captures_present():
    assert PCAPS, f"no captures in {SAMPLES}"


@pytest.mark.parametrize("pcap", PCAPS, ids=ident)
def test_sample_capture_matches_c_plugin(pcap, nrsack_c_plugin):
    golden = golden_path(pcap)
    lua = tshark.golden_output(pcap, LUA_PLUGIN, sndbuf=golden_sndbuf(pcap))
    if golden.exists():
        assert_same(golden.read_text(), lua, f"{pcap.name} vs {golden.name}", expected_name=str(golden.name))
    else:  # the C plugin has no checked-in golden file for it yet: compare with its live output
        c = tshark.golden_output(pcap, nrsack_c_plugin, sndbuf=golden_sndbuf(pcap))
        assert_same(c, lua, f"{pcap.name} vs the C build")


@pytest.mark.parametrize("name", sorted(VECTORS))
@pytest.mark.parametrize("sndbuf", [0, 3000])
def test_hand_built_capture_matches_c_plugin(name, sndbuf, vector_pcaps, nrsack_c_plugin):
    pcap = vector_pcaps[name]
    c = tshark.golden_output(pcap, nrsack_c_plugin, sndbuf=sndbuf)
    lua = tshark.golden_output(pcap, LUA_PLUGIN, sndbuf=sndbuf)
    assert_same(c, lua, name)
    # the vectors are built to raise findings; a silent run would make the comparison vacuous
    if name != "sctp-udp-ipv6":
        assert tshark.parse_golden(lua).expert, f"{name} raised no finding"


def test_vectors_raise_the_rules_they_were_built_for(vector_pcaps):
    raised = set()
    for pcap in vector_pcaps.values():
        raised |= {rule for _, rule in tshark.expert_findings(pcap, LUA_PLUGIN)}
    wanted = {"NR-01", "NR-02", "NR-03", "NR-04", "NR-05", "NR-06", "NR-07", "NR-08", "NR-09",
              "TN-01", "TN-02", "TN-03", "TN-04", "TN-05", "MN-01", "MN-02", "MN-03", "MN-04", "MN-05",
              "FS-01", "FS-03", "FS-04", "FS-06", "GEN-01"}
    assert wanted <= raised, f"never raised: {sorted(wanted - raised)}"


@pytest.mark.parametrize("name", ["sctp-rules", "tcp-rules-wrap", "mptcp-v1-wide"])
def test_lua_same_on_two_passes_and_filtered(name, vector_pcaps):
    pcap = vector_pcaps[name]
    one = tshark.golden_output(pcap, LUA_PLUGIN, sndbuf=3000)
    two = tshark.golden_output(pcap, LUA_PLUGIN, sndbuf=3000, two_pass=True)
    assert_same(one, two, f"{name}: one pass vs -2", "one pass", "two passes")
    # a display filter hides frames but must not change what the shown ones say
    shown = tshark.golden_output(pcap, LUA_PLUGIN, sndbuf=3000, two_pass=True, display_filter="nrsack.rtxq.bytes")
    all_rows, shown_rows = table_rows(one), table_rows(shown)
    frames = [k for k in shown_rows if isinstance(k, int)]
    assert frames, "the filter kept no frame"
    for key, row in shown_rows.items():
        assert row == all_rows[key], f"{name}: {key} differs under the display filter"
