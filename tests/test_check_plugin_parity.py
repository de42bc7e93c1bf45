"""`nrsack check` against the C plugin's expert info (dissector/, run by the real tshark 4.0 through
tests/support/tshark.py): for every sample capture, the (breaking frame, rule ID) pairs must be the same,
for every rule both decide in one pass."""


import pytest

from nrsack.analyzer import check
from support import tshark
from support.paths import SAMPLES

pytestmark = pytest.mark.tshark

# FS-02 needs what comes after the FSACK-INIT (the next one, or the end of the capture: docs/decisions.md
# 20); a one-pass dissector cannot decide it, so the plugin does not raise it.
NOT_ONE_PASS = {"FS-02"}
# about the capture file, not the traffic (docs/decisions.md 30, 33): the clock's steps (GEN-02) and the
# reader's repair notes (GEN-01 at severity note) are the analyzer's alone; Wireshark shows times as they are
ANALYZER_ONLY = {"GEN-02"}


def compared(row):
    return row.rule not in NOT_ONE_PASS | ANALYZER_ONLY and not (row.rule == "GEN-01" and row.severity == "note")


@pytest.mark.parametrize("pcap", sorted(SAMPLES.rglob("*.pcap")), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_findings_equal_the_c_plugins_expert_info(pcap, nrsack_c_plugin):
    plugin = set(tshark.expert_findings(pcap, nrsack_c_plugin))
    ours = {(row.frames[-1], row.rule) for row in check(pcap).itertuples() if compared(row)}
    assert ours == plugin
    # (the conformance vectors make this no vacuous agreement: test_check_vectors pins our findings)
