"""MPTCP data-level `sacked` from subflow acks (docs/decisions.md 12, revised), the same in the C plugin,
the Lua plugin and the analyzer: subflow bytes that a subflow's cum ack or SACK block covers are mapped
to DSNs through the DSS mappings byte for byte, count as sacked (not NR-acked) above the DATA ACK, and
keep gap_open while any is held.

Scenario (values by hand): 4 segments of 1000 bytes from A (subflow ISN 1000, first byte 1001) mapped to
DSN0 + 0 .. DSN0 + 3999, no NR-SACK. Then three acks from B, each with a DSS DATA ACK:
- frame 8: DATA ACK DSN0, subflow ack 1501 (half of segment 0: DSN0 + 0..499) and SACK 2501-3001
  (the second half of segment 1: DSN0 + 1500..1999): sacked 1000, whatif 3000, gap_open.
- frame 9: DATA ACK DSN0 + 1000, subflow ack 3001 (newly 1501..3000: DSN0 + 500..1999): above the
  DATA ACK DSN0 + 1000..1999 is held: rtxq 3000, sacked 1000, whatif 2000, gap_open.
- frame 10: DATA ACK DSN0 + 2000, subflow ack 3001 again: sacked 0, whatif 2000, no gap."""

import pytest

from nrsack.analyzer import analyze
from support import pcaps, tshark
from support.tcp_scenario import DSN0, A, B, PA, PB, mptcp_handshake, mseg
from support.tshark import LUA_PLUGIN

pytestmark = pytest.mark.tshark

EXPECTED = {  # frame: (rtxq_sack, sacked, nr_acked, whatif, gap_open)
    8: (4000, 1000, 0, 3000, True),
    9: (3000, 1000, 0, 2000, True),
    10: (2000, 0, 0, 2000, False),
}


def subflow_ack(t, data_acked, sub_ack, sack=()):
    opts = [("SAck", tuple(sack))] if sack else []
    dss = pcaps.dss_option(data_ack=DSN0 + data_acked)
    return pcaps.tcp_packet(t, B, A, PB, PA, 5001, sub_ack, "A", opts + [dss])


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    packets = (mptcp_handshake(nr_flags=(0, 0)) + [mseg(0.2 + i / 1000, i) for i in range(4)]
               + [subflow_ack(0.3, 0, 1501, sack=(2501, 3001)), subflow_ack(0.31, 1000, 3001),
                  subflow_ack(0.32, 2000, 3001)])
    return pcaps.write(tmp_path_factory.mktemp("mptcp") / "subflow-acks.pcap", packets)


@pytest.mark.parametrize("plugin", ["c", "lua"])
def test_plugins_map_subflow_acks_to_dsns(capture, nrsack_c_plugin, plugin):
    g = tshark.parse_golden(tshark.golden_output(capture, nrsack_c_plugin if plugin == "c" else LUA_PLUGIN))
    for frame, (sack, sacked, nr, whatif, gap) in EXPECTED.items():
        row = g.row(frame)
        assert row["nrsack.rtxq.sack_bytes"] == [str(sack)], frame
        assert row["nrsack.rtxq.sacked_bytes"] == [str(sacked)], frame
        assert row["nrsack.rtxq.nr_acked_bytes"] == [str(nr)], frame
        assert row["nrsack.rtxq.whatif_bytes"] == [str(whatif)], frame
        assert row["nrsack.gap_open"] == ["1" if gap else "0"], frame
    assert not g.expert


def test_analyzer_maps_subflow_acks_to_dsns(capture):
    a = analyze(capture)
    top = a.summary[a.summary.parent.isna()].iloc[0]
    rows = a.rtxq[(a.rtxq.flow == top.id) & (a.rtxq.event == "ack")].set_index("frame")
    for frame, (sack, sacked, nr, whatif, gap) in EXPECTED.items():
        got = rows.loc[frame]
        assert (got.rtxq_sack_bytes, got.sacked_bytes, got.nr_acked_bytes, got.rtxq_whatif_bytes, bool(got.gap_open)) \
            == (sack, sacked, nr, whatif, gap), frame
