"""C plugin: a chunk or option that fails its own length check feeds nothing to the scoreboard
(docs/scoreboard.md "Events"): its finding is raised, and a later valid ack finds the state as if the
malformed one had never been there (values by hand: 1000-byte units from A).

- SCTP: an NR-SACK whose counts say 65535 R blocks in a 24-byte chunk, cum ack far beyond the data and
  bundled with a DATA chunk of the other direction: NR-05 only (the old plugin used the block that fit,
  adopted the cum ack and raised NR-09; a later correct ack then looked stale, NR-07).
- TCP: an NR-SACK option of 4 + 8 + 4 bytes (TN-05): its block is not NR-acked.
- MPTCP: DSS NR blocks whose count disagrees with the option length (MN-02): not NR-acked."""

import struct

import pytest

from support import pcaps, tcp_scenario, tshark
from support.pcaps import NR_SACK
from support.sctp_scenario import A, B, TAG_A, ack, handshake, nr, sent

pytestmark = pytest.mark.tshark


def run(plugin, tmp_path, packets):
    return tshark.parse_golden(tshark.golden_output(pcaps.write(tmp_path / "t.pcap", packets), plugin))


def update_of(row, direction_prefix):
    """{field: value} of the row's update for the direction whose sender starts with the prefix, or None."""
    for i, name in enumerate(row["nrsack.direction"]):
        if name.startswith(direction_prefix):
            return {f: row[f][i] for f in ("nrsack.rtxq.sack_bytes", "nrsack.rtxq.nr_acked_bytes")}
    return None


def test_sctp_nr_sack_with_impossible_counts_feeds_nothing(nrsack_c_plugin, tmp_path):
    body = struct.pack("!IIHHHH", 1000, 65536, 65535, 0, 0, 0) + struct.pack("!HH", 2, 2)
    bad = pcaps.sctp_packet(0.3, B, A, TAG_A, [pcaps.chunk(NR_SACK, body), pcaps.data_chunk(1)], sport=5001, dport=5000)
    g = run(nrsack_c_plugin, tmp_path, handshake() + sent(11, 14) + [bad, ack(0.4, nr(12))])
    assert {(f, rule) for f, rule, _ in g.expert} == {(7, "NR-05")}
    assert update_of(g.row(7), A) is None, "the A -> B scoreboard saw nothing of it"
    assert update_of(g.row(7), B) == {"nrsack.rtxq.sack_bytes": "1000", "nrsack.rtxq.nr_acked_bytes": "0"}
    assert update_of(g.row(8), A)["nrsack.rtxq.sack_bytes"] == "2000"


def test_tcp_nr_option_of_bad_length_feeds_nothing(nrsack_c_plugin, tmp_path):
    s = tcp_scenario
    isn = 1000
    block = struct.pack("!HII", pcaps.TCP_EXID, isn + 1001, isn + 2001)
    bad = s.ack(0.3, 0, extra=[(253, block + b"\0" * 4)])
    good = s.ack(0.31, 0, nr=[(1000, 2000)])
    g = run(nrsack_c_plugin, tmp_path, s.handshake() + s.four_segments() + [bad, good])
    assert {(f, rule) for f, rule, _ in g.expert} == {(8, "TN-05")}
    assert g.row(8)["nrsack.rtxq.nr_acked_bytes"] == ["0"] and g.row(8)["nrsack.freed_bytes"] == ["0"]
    assert g.row(9)["nrsack.rtxq.nr_acked_bytes"] == ["1000"] and g.row(9)["nrsack.freed_bytes"] == ["1000"]


def test_mptcp_nr_count_disagreeing_with_length_feeds_nothing(nrsack_c_plugin, tmp_path):
    s = tcp_scenario
    packets = (s.mptcp_handshake() + [s.mseg(0.2 + i / 1000, i) for i in range(4)]
               + [s.mack(0.3, 0, nr=[(1000, 2000)], count=3), s.mack(0.31, 0, nr=[(1000, 2000)])])
    g = run(nrsack_c_plugin, tmp_path, packets)
    assert {(f, rule) for f, rule, _ in g.expert} == {(8, "MN-02")}
    assert g.row(8)["nrsack.rtxq.nr_acked_bytes"] == ["0"]
    assert g.row(9)["nrsack.rtxq.nr_acked_bytes"] == ["1000"] and g.row(9)["nrsack.freed_bytes"] == ["1000"]
