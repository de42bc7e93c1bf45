"""C plugin, TCP and MPTCP: NR-SACK option decode (kind 253/254, ExID preference), never-renege, the
TN-/MN- rules, sequence wrap, and MPTCP data-level NR blocks across two subflows (wire-formats.md 3, 4).

Scenario: 1000-byte segments from A (ISN 1000, first byte 1001) to B; values worked out by hand."""

import struct

import pytest

from support import pcaps, tshark
from support.tcp_scenario import (A, A2, B, DSN0, KEY_B, PA, PB, ack, four_segments, handshake, mack, mptcp_handshake, mseg,
                                  seg, token)

pytestmark = pytest.mark.tshark

@pytest.fixture
def run(nrsack_c_plugin, tmp_path):
    def run(packets, sndbuf=0):
        return tshark.parse_golden(tshark.golden_output(pcaps.write(tmp_path / "t.pcap", packets), nrsack_c_plugin,
                                                        sndbuf=sndbuf))
    return run


@pytest.fixture
def fields(nrsack_c_plugin, tmp_path):
    def fields(packets, names, prefs=None):
        path = pcaps.write(tmp_path / "f.pcap", packets)
        args = ["-T", "fields", "-E", "occurrence=a"] + sum((["-e", n] for n in names), [])
        out = tshark.run_tshark(args, nrsack_c_plugin, prefs=prefs, pcap=path).stdout
        return [dict(zip(names, line.split("\t"))) for line in out.splitlines()]
    return fields


def findings(g):
    return {(frame, rule) for frame, rule, _ in g.expert}


def test_options_decode_and_rtxq(run):
    g = run(handshake(nr_flags=(0, 0)) + four_segments() + [ack(0.3, 0, sack=[(1000, 2000)], nr=[(2000, 3000)])])
    syn = g.row(1)
    assert syn["nrsack.tcp.permitted"] == ["1"] and syn["nrsack.tcp.exid"] == ["0x4e52"]
    assert syn["nrsack.tcp.never_renege"] == ["0"] and syn["nrsack.mptcp.capable"] == ["0"]
    a = g.row(8)
    assert a["nrsack.tcp.block_count"] == ["1"]
    assert a["nrsack.tcp.block.left"] == ["3001"] and a["nrsack.tcp.block.right"] == ["4001"]
    assert a["nrsack.rtxq.sack_bytes"] == ["4000"] and a["nrsack.rtxq.sacked_bytes"] == ["2000"]
    assert a["nrsack.rtxq.nr_acked_bytes"] == ["1000"] and a["nrsack.freed_bytes"] == ["1000"]
    assert a["nrsack.rtxq.bytes"] == ["3000"] and a["nrsack.rtxq.whatif_bytes"] == ["2000"]
    assert findings(g) == set()


def test_never_renege_counts_sack_blocks_as_non_renegable(run):
    g = run(handshake(nr_flags=(0, 0x01)) + four_segments() + [ack(0.3, 0, sack=[(1000, 3000)])])
    assert g.row(2)["nrsack.tcp.never_renege"] == ["1"]
    assert g.row(8)["nrsack.rtxq.nr_acked_bytes"] == ["2000"] and g.row(8)["nrsack.rtxq.bytes"] == ["2000"]
    assert findings(g) == set()


def test_plain_sack_connection_has_whatif(run):
    g = run(handshake(permitted=False) + four_segments() + [ack(0.3, 0, sack=[(1000, 3000)])])
    a = g.row(8)
    assert a["nrsack.rtxq.bytes"] == ["4000"] and a["nrsack.rtxq.whatif_bytes"] == ["2000"]
    assert a["nrsack.rtxq.nr_acked_bytes"] == ["0"] and a["nrsack.gap_open"] == ["1"]


@pytest.mark.parametrize("isn", [0xFFFFF000, 1000])
def test_sequence_wrap_gives_the_same_figures(run, isn):
    g = run(handshake(isn=(isn, 5000)) + four_segments(isn)
            + [ack(0.3, 0, nr=[(1000, 3000)], isn=isn), ack(0.31, 3000, isn=isn), ack(0.32, 4000, isn=isn)])
    assert [g.row(f)["nrsack.rtxq.bytes"] for f in range(4, 11)] == [["1000"], ["2000"], ["3000"], ["4000"], ["2000"],
                                                                     ["1000"], ["0"]]
    assert findings(g) == set()


@pytest.mark.parametrize("name,packets,expected", [
    ("TN-02 SACK and NR overlap", [ack(0.3, 0, sack=[(1000, 2000)], nr=[(1000, 2000)])], {(8, "TN-02")}),
    ("TN-03 reported renegable", [ack(0.3, 0, nr=[(1000, 2000)]), ack(0.31, 0, sack=[(1000, 3000)])], {(9, "TN-03")}),
    ("TN-03 left out inside the span", [ack(0.3, 0, nr=[(1000, 2000)]), ack(0.31, 0, nr=[(500, 600), (2000, 3000)])],
     {(9, "TN-03")}),
    ("TN-03 older block left out is legal", [ack(0.3, 0, nr=[(1000, 2000)]), ack(0.31, 0, nr=[(2000, 3000)])], set()),
    ("TN-04 retransmission", [ack(0.3, 0, nr=[(1000, 2000)]), seg(0.31, 1)], {(9, "TN-04")}),
    ("TN-05 left >= right", [ack(0.3, 0, nr=[(2000, 1000)])], {(8, "TN-05")}),
    ("TN-05 block at the ack", [ack(0.3, 1000, nr=[(1000, 2000)])], {(8, "TN-05")}),
    ("kind 254 accepted", [ack(0.3, 0, nr=[(1000, 2000)], kind=254)], set()),
])
def test_rules(run, name, packets, expected):
    assert findings(run(handshake() + four_segments() + packets)) == expected


def test_tn05_wrong_length(run):
    bad = (253, struct.pack("!HI", 0x4E52, 1))
    assert findings(run(handshake() + four_segments() + [ack(0.3, 0, extra=[bad])])) == {(8, "TN-05")}


def test_tn01_error_with_handshake_note_without(run):
    tail = four_segments() + [ack(0.3, 0, nr=[(1000, 2000)])]
    assert run(handshake(permitted=False) + tail).expert == [(8, "TN-01", "error")]
    assert run(tail).expert == [(5, "TN-01", "note")]


def test_exid_preference_and_other_exids(fields):
    packets = handshake() + four_segments() + [
        pcaps.tcp_packet(0.3, B, A, PB, PA, 5001, 1001, "A", [(253, struct.pack("!HII", 0x1234, 2001, 3001))])]
    names = ["nrsack.tcp.block.left", "tcp.options.experimental.exid"]
    default = fields(packets, names)[-1]
    assert default["nrsack.tcp.block.left"] == "" and default["tcp.options.experimental.exid"] == "0x1234"
    moved = fields(packets, names, prefs={"nrsack.tcp_exid": "0x1234"})[-1]
    assert moved["nrsack.tcp.block.left"] == "2001"


def test_mptcp_capability_and_dss_blocks(run):
    g = run(mptcp_handshake() + [mseg(0.2 + i / 1000, i) for i in range(4)]
            + [mack(0.3, 0, nr=[(1000, 2000)]), mack(0.31, 0, nr=[(1000, 3000)], wide=True)])
    assert g.row(1)["nrsack.mptcp.capable"] == ["1"] and g.row(2)["nrsack.mptcp.capable"] == ["1"]
    first, second = g.row(8), g.row(9)
    assert first["nrsack.mptcp.block.start"] == [str(DSN0 + 1000)] and first["nrsack.mptcp.block.end"] == [str(DSN0 + 2000)]
    assert first["nrsack.mptcp.wide"] == ["0"] and second["nrsack.mptcp.wide"] == ["1"]
    assert first["nrsack.rtxq.nr_acked_bytes"] == ["1000"] and first["nrsack.freed_bytes"] == ["1000"]
    assert second["nrsack.rtxq.bytes"] == ["2000"] and second["nrsack.freed_bytes"] == ["1000"]
    assert findings(g) == set()


def test_mptcp_checksum_before_the_count_byte(run):
    g = run(mptcp_handshake(csum=True) + [mseg(0.2 + i / 1000, i, csum=0xABCD) for i in range(4)]
            + [mack(0.3, 0, nr=[(1000, 2000)])])
    assert g.row(7)["nrsack.rtxq.sack_bytes"] == ["4000"]
    assert g.row(8)["nrsack.rtxq.nr_acked_bytes"] == ["1000"]
    assert findings(g) == set()


@pytest.mark.parametrize("name,tail,expected", [
    ("MN-02 N without DATA ACK", [mack(0.3, 0, nr=[(1000, 2000)], with_ack=False)], {(8, "MN-02")}),
    ("MN-02 count vs length", [mack(0.3, 0, nr=[(1000, 2000)], count=3)], {(8, "MN-02")}),
    ("MN-03 left out inside the span", [mack(0.3, 0, nr=[(1000, 2000)]), mack(0.31, 0, nr=[(500, 600), (2000, 3000)])],
     {(9, "MN-03")}),
    ("MN-03 older block left out is legal", [mack(0.3, 0, nr=[(1000, 2000)]), mack(0.31, 0, nr=[(2000, 3000)])], set()),
    ("MN-04 reinjection", [mack(0.3, 0, nr=[(1000, 2000)]), mseg(0.31, 1)], {(9, "MN-04")}),
    ("MN-05 start >= end", [mack(0.3, 0, nr=[(2000, 1000)])], {(8, "MN-05")}),
    ("MN-05 overlapping", [mack(0.3, 0, nr=[(1000, 3000), (2000, 4000)])], {(8, "MN-05")}),
])
def test_mptcp_rules(run, name, tail, expected):
    assert findings(run(mptcp_handshake() + [mseg(0.2 + i / 1000, i) for i in range(4)] + tail)) == expected


def test_mn01_without_capability(run):
    tail = [mseg(0.2 + i / 1000, i) for i in range(4)] + [mack(0.3, 0, nr=[(1000, 2000)])]
    assert run(mptcp_handshake(nr_flags=(0x02, 0)) + tail).expert == [(8, "MN-01", "error")]
    assert run(tail).expert == [(5, "MN-01", "note")]


def test_mptcp_second_subflow_shares_the_data_level(run):
    """Segments 0-1 on the initial subflow, 2-3 on an MP_JOIN subflow; a DATA ACK on the first covers all."""
    join = [
        pcaps.tcp_packet(0.15, A2, B, PA + 1, PB, 7000, 0, "S", [pcaps.mptcp_join_syn_option(token(KEY_B))]),
        pcaps.tcp_packet(0.16, B, A2, PB, PA + 1, 9000, 7001, "SA", []),
        pcaps.tcp_packet(0.17, A2, B, PA + 1, PB, 7001, 9001, "A", []),
    ]
    data = [mseg(0.2, 0), mseg(0.201, 1),
            mseg(0.202, 2, k=0, src=A2, sport=PA + 1, isn=7000), mseg(0.203, 3, k=1, src=A2, sport=PA + 1, isn=7000)]
    g = run(mptcp_handshake() + join + data + [mack(0.3, 0, nr=[(2000, 4000)])])
    assert {r["nrsack.stream"][0] for r in g.rows} == {"0"}, "both subflows are one MPTCP connection"
    assert g.row(10)["nrsack.rtxq.sack_bytes"] == ["4000"]
    last = g.row(11)
    assert last["nrsack.rtxq.nr_acked_bytes"] == ["2000"] and last["nrsack.rtxq.bytes"] == ["2000"]
    assert findings(g) == set()


def test_ipv6_and_vlan_give_the_same_figures(run):
    """Encapsulation is Wireshark's job: TCP over IPv6 in a VLAN tag analyses like TCP over IPv4."""
    from scapy.layers.l2 import Dot1Q, Ether

    packets = handshake() + four_segments() + [ack(0.3, 0, sack=[(1000, 2000)], nr=[(2000, 3000)])]
    v6 = []
    for p in packets:
        ip = p["IP"]
        q = Ether() / Dot1Q(vlan=7) / pcaps.IPv6(src=f"2001:db8::{ip.src.split('.')[-1]}",
                                                  dst=f"2001:db8::{ip.dst.split('.')[-1]}") / p["TCP"]
        q.time = p.time
        v6.append(q)
    plain, tagged = run(packets), run(v6)
    for field in ("nrsack.rtxq.bytes", "nrsack.rtxq.nr_acked_bytes", "nrsack.freed_bytes", "nrsack.tcp.block.left"):
        assert [r[field] for r in tagged.rows] == [r[field] for r in plain.rows], field
    assert tagged.row(8)["nrsack.direction"] == ["[2001:db8::1]:40000 -> [2001:db8::2]:5001"]
