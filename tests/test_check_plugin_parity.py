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


@pytest.mark.parametrize("pcap", sorted(SAMPLES.rglob("*.pcap")), ids=lambda p: str(p.relative_to(SAMPLES)))
def test_findings_equal_the_c_plugins_expert_info(pcap, nrsack_c_plugin):
    plugin = set(tshark.expert_findings(pcap, nrsack_c_plugin))
    ours = {(row.frames[-1], row.rule) for row in check(pcap).itertuples() if row.rule not in NOT_ONE_PASS}
    assert ours == plugin
    # (the conformance vectors make this no vacuous agreement: test_check_vectors pins our findings)
