"""The Lua plugin anchors each sender direction as docs/scoreboard.md says, and agrees with `nrsack analyze`.

- Receiver-side SCTP captures whose first DATA chunk was lost (later TSNs arrive before the lowest one),
  with and without the INIT / INIT-ACK, across the TSN wrap: no GEN-01, and after every frame that
  changes the scoreboard Lua's RtxQ fields equal the analyzer's rtxq table (the analyzer anchors on the
  lowest TSN seen); the same for TCP with the first segment lost.
- A chunk or option that fails its own length check feeds nothing: an NR-SACK whose counts say 65535
  in a 24-byte chunk is NR-05, yet no NR-09 about unsent TSNs and no figures.
"""

from __future__ import annotations


import pytest

from support import pcaps, tshark
from support.pcaps import data_chunk, init_chunk, nr_sack_chunk, sack_chunk, sctp_packet, tcp_packet
from support.lua_compare import analyzer_rows, lua_rows
from support.tshark import LUA_PLUGIN

pytestmark = pytest.mark.tshark

SND, RCV = "192.0.2.1", "198.51.100.1"
def sctp_early_loss(handshake: bool, tsn0: int = 0xFFFFFFFD):
    """TSN tsn0 is lost before the capture point: tsn0+1 .. tsn0+3 arrive first, an NR-SACK reports them
    (one R, one NR block), then tsn0 comes (its retransmission, the first copy captured) and more."""
    t = [0.0]

    def at():
        t[0] += 0.001
        return t[0]
    pkts = []
    if handshake:
        pkts += [sctp_packet(at(), SND, RCV, 0, [init_chunk(0x11, tsn0, ext=[pcaps.NR_SACK])]),
                 sctp_packet(at(), RCV, SND, 0x11, [init_chunk(0x22, 7, ext=[pcaps.NR_SACK], ack=True)], 5001, 5000)]
    data = lambda tsn, size=1000: sctp_packet(at(), SND, RCV, 0x22, [data_chunk(tsn, size)])  # noqa: E731
    ack = lambda chunk: sctp_packet(at(), RCV, SND, 0x11, [chunk], 5001, 5000)  # noqa: E731
    pkts += [data(tsn0 + 1, 900), data(tsn0 + 2, 800), data(tsn0 + 3, 700)]
    pkts.append(ack(nr_sack_chunk(tsn0 - 1, r_gaps=[(2, 2)], nr_gaps=[(3, 4)])))
    pkts += [data(tsn0, 1000), data(tsn0 + 4, 600)]
    pkts.append(ack(nr_sack_chunk(tsn0 + 2, nr_gaps=[(2, 2)])))
    pkts.append(ack(sack_chunk(tsn0 + 4)))
    return pkts


def tcp_early_loss(isn: int = 0xFFFFF000):
    """Bytes isn+1 .. isn+1000 are lost before the capture: the later segments arrive first, SACKed."""
    t = [0.0]

    def at():
        t[0] += 0.001
        return t[0]
    seg = lambda seq, n: tcp_packet(at(), SND, RCV, 40000, 80, seq, 77, "A", payload=n)  # noqa: E731
    ack = lambda a, opts=(): tcp_packet(at(), RCV, SND, 80, 40000, 77, a, "A", options=opts)  # noqa: E731
    first = isn + 1
    return [seg(first + 1000, 1000), seg(first + 2000, 1000),
            ack(first, [("SAck", (first + 1000, first + 3000))]),
            seg(first, 1000), ack(first + 3000), seg(first + 3000, 500), ack(first + 3500)]


def check_against_analyzer(pkts, tmp_path):
    pcap = pcaps.write(tmp_path / "capture.pcap", pkts)
    golden = tshark.parse_golden(tshark.golden_output(pcap, LUA_PLUGIN))
    assert not [e for e in golden.expert if e[1] == "GEN-01"], golden.expert
    expected = analyzer_rows(pcap, tmp_path)
    got = lua_rows(golden)
    assert len(expected) >= 5
    assert got == expected
    return got


@pytest.mark.parametrize("handshake", [False, True], ids=["mid-association", "with-init"])
def test_sctp_first_data_lost_matches_analyzer(handshake, tmp_path):
    got = check_against_analyzer(sctp_early_loss(handshake), tmp_path)
    # the lost-then-retransmitted TSN joins the queue: 900 + 800 + 700 + 1000 outstanding, 1500 NR-acked
    frame = 5 + (2 if handshake else 0)
    assert got[(frame, f"{SND}:5000 -> {RCV}:5001")]["rtxq_sack_bytes"] == 3400
    assert got[(frame, f"{SND}:5000 -> {RCV}:5001")]["nr_acked_bytes"] == 1500


def test_tcp_first_segment_lost_matches_analyzer(tmp_path):
    got = check_against_analyzer(tcp_early_loss(), tmp_path)
    assert got[(4, f"{SND}:40000 -> {RCV}:80")]["rtxq_sack_bytes"] == 3000


def test_nr_sack_failing_its_length_check_feeds_nothing(tmp_path):
    pkts = [sctp_packet(0.001, SND, RCV, 0x22, [data_chunk(100, 500)]),
            sctp_packet(0.002, RCV, SND, 0x11, [nr_sack_chunk(100, nr_gaps=[(2, 3)], n_r=65535, n_nr=65535)],
                        5001, 5000)]
    pcap = pcaps.write(tmp_path / "counts.pcap", pkts)
    golden = tshark.parse_golden(tshark.golden_output(pcap, LUA_PLUGIN))
    rules = {rule for frame, rule, _ in golden.expert if frame == 2}
    assert "NR-05" in rules and "NR-09" not in rules, rules
    assert golden.row(2)["nrsack.direction"] == []
    assert golden.row(1)["nrsack.rtxq.sack_bytes"] == ["500"]
