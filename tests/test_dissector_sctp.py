"""C plugin, SCTP: NR-SACK analysis, Supported Extensions, FSACK chunks and the NR-/FS-/GEN- rules on
small hand-built captures (raw chunk bytes per wire-formats.md sections 1, 2 and 5).

Expected values are worked out by hand from the scenario (1000-byte DATA chunks, TSN 11 first)."""

import pytest

from support import pcaps, tshark
from support.pcaps import FSACK_ACK, FSACK_COMPLETE, FSACK_INIT, NR_SACK
from support.sctp_scenario import A, B, B2, TAG_A, TAG_B, ack, data, handshake, nr, sent

pytestmark = pytest.mark.tshark

@pytest.fixture
def run(nrsack_c_plugin, tmp_path):
    def run(packets, sndbuf=0, prefs=None):
        path = pcaps.write(tmp_path / "t.pcap", packets)
        if prefs is not None:
            out = tshark.run_tshark(["-T", "fields", "-E", "occurrence=a", "-e", "frame.number", *sum(
                (["-e", f] for f in tshark.NRSACK_FIELDS), [])], nrsack_c_plugin, prefs=prefs, pcap=path).stdout
            return [dict(zip(["frame.number", *tshark.NRSACK_FIELDS], line.split("\t"))) for line in out.splitlines()]
        return tshark.parse_golden(tshark.golden_output(path, nrsack_c_plugin, sndbuf=sndbuf))
    return run


def findings(g):
    return {(frame, rule) for frame, rule, _ in g.expert}


def test_nr_sack_rtxq_freed_and_extensions(run):
    g = run(handshake() + sent() + [ack(0.3, nr(10, (2, 2))), ack(0.31, nr(10, (2, 3))), ack(0.4, nr(14))])
    assert g.row(1)["nrsack.sctp.ext_nr_sack"] == ["1"] and g.row(2)["nrsack.sctp.ext_nr_sack"] == ["1"]
    assert g.row(1)["nrsack.sctp.ext_fsack"] == ["0"]
    assert [g.row(f)["nrsack.rtxq.sack_bytes"] for f in (3, 6)] == [["1000"], ["4000"]]
    first, second, full = g.row(7), g.row(8), g.row(9)
    assert first["nrsack.rtxq.nr_acked_bytes"] == ["1000"] and first["nrsack.freed_bytes"] == ["1000"]
    assert first["nrsack.rtxq.bytes"] == ["3000"] and first["nrsack.gap_open"] == ["1"]
    assert second["nrsack.rtxq.nr_acked_bytes"] == ["2000"] and second["nrsack.freed_bytes"] == ["1000"]
    assert second["nrsack.rtxq.sack_bytes"] == ["4000"] and second["nrsack.rtxq.whatif_bytes"] == ["2000"]
    assert full["nrsack.rtxq.bytes"] == ["0"] and full["nrsack.freed_bytes"] == ["0"] and full["nrsack.gap_open"] == ["0"]
    assert {r["nrsack.stream"][0] for r in g.rows} == {"0"}
    assert findings(g) == set()


def test_blocked_follows_sndbuf_preference(run):
    packets = handshake() + sent() + [ack(0.3, nr(10, (2, 2)))]
    estimated, on = run(packets), run(packets, sndbuf=4000)
    # no preference: B estimated; one flight so far, so never held back (docs/metrics.md, "Estimating B")
    assert estimated.row(6)["nrsack.blocked"] == ["0"]
    assert on.row(5)["nrsack.blocked"] == ["0"] and on.row(6)["nrsack.blocked"] == ["1"]
    assert on.row(7)["nrsack.blocked"] == ["0"], "the NR-SACK frees one chunk: 4000 - 3000 >= 1000"


def test_bundled_data_and_sack_update_both_directions(run):
    packets = handshake() + [data(0.2, 11), pcaps.sctp_packet(0.3, B, A, TAG_A, [pcaps.data_chunk(1), nr(11)],
                                                              sport=5001, dport=5000)]
    row = run(packets).row(4)
    assert row["nrsack.direction"] == ["10.0.0.2:5001 -> 10.0.0.1:5000", "10.0.0.1:5000 -> 10.0.0.2:5001"]
    assert row["nrsack.rtxq.sack_bytes"] == ["1000", "0"]


@pytest.mark.parametrize("name,tail,expected", [
    ("NR-02 R and NR overlap", [ack(0.3, pcaps.nr_sack_chunk(10, r_gaps=[(2, 3)], nr_gaps=[(3, 4)]))], {(7, "NR-02")}),
    ("NR-03 revocation", [ack(0.3, nr(10, (2, 3))), ack(0.31, nr(10, (3, 3)))], {(8, "NR-03")}),
    ("NR-03 older ack is not one", [ack(0.3, nr(12, (2, 2))), ack(0.31, nr(11))], {(8, "NR-07")}),
    ("NR-04 retransmission", [ack(0.3, nr(10, (2, 2))), data(0.32, 12)], {(8, "NR-04")}),
    ("NR-05 start below 2", [ack(0.3, nr(10, (1, 2)))], {(7, "NR-05")}),
    ("NR-05 start above end", [ack(0.3, nr(10, (3, 2)))], {(7, "NR-05")}),
    ("NR-05 not ascending", [ack(0.3, nr(10, (3, 4), (2, 2)))], {(7, "NR-05")}),
    ("NR-05 counts vs length", [ack(0.3, nr(10, (2, 2), n_nr=3))], {(7, "NR-05")}),
    ("NR-06 SACK after negotiation", [ack(0.3, pcaps.sack_chunk(10, gaps=[(2, 2)]))], {(7, "NR-06")}),
    ("NR-07 cum backwards", [ack(0.3, nr(12)), ack(0.31, nr(11))], {(8, "NR-07")}),
    ("NR-08 touching blocks", [ack(0.3, nr(10, (2, 2), (3, 3)))], {(7, "NR-08")}),
    ("NR-09 never sent", [ack(0.3, nr(20))], {(7, "NR-09")}),
    ("NR-09 block never sent", [ack(0.3, nr(10, (2, 9)))], {(7, "NR-09")}),
    ("GEN-01 bad chunk length", [ack(0.3, pcaps.chunk(NR_SACK, b"\0" * 16, length=2))], {(7, "GEN-01")}),
])
def test_rules(run, name, tail, expected):
    g = run(handshake() + sent() + tail)
    assert findings(g) == expected
    severities = {rule: sev for _, rule, sev in g.expert}
    for _, rule in expected:
        # NR-04: a note, as the vantage is unknown without a captured COOKIE-ECHO (test_nr04_vantage)
        want = {"NR-04": "note", "NR-06": "warning", "NR-08": "warning", "NR-07": "note"}.get(rule, "error")
        assert severities[rule] == want


@pytest.mark.parametrize("init_ack_at,cookie_echo_at,severity", [(0.1, 0.1001, "warning"), (0.0001, 0.1, "note")],
                         ids=["capture-at-sender", "capture-at-receiver"])
def test_nr04_vantage(run, init_ack_at, cookie_echo_at, severity):
    """decisions 17: the capture sits by the end whose handshake turnaround is short; NR-04 is a warning only
    there, where the sender really saw the ack before retransmitting."""
    init, init_ack = handshake()
    init_ack.time = init_ack_at
    cookie_echo = pcaps.sctp_packet(cookie_echo_at, A, B, TAG_B, [pcaps.chunk(0x0A, b"cookie!!")])
    g = run([init, init_ack, cookie_echo] + sent(11, 12) + [ack(0.3, nr(10, (2, 2))), data(0.32, 12)])
    assert g.expert == [(7, "NR-04", severity)]


def test_nr01_error_with_handshake_note_without(run):
    with_hs = run(handshake(ext=None) + sent(11, 12) + [ack(0.3, nr(10, (2, 2)))])
    assert with_hs.expert == [(5, "NR-01", "error")]
    without = run(sent(11, 12) + [ack(0.3, nr(10, (2, 2)))])
    assert without.expert == [(3, "NR-01", "note")]


def test_nr09_is_a_note_when_the_capture_starts_mid_association(run):
    g = run(handshake()[:0] + sent(11, 12) + [ack(0.3, nr(20))])
    assert (3, "NR-09", "note") in g.expert


@pytest.mark.parametrize("first", [0xFFFFFFFE, 11])
def test_tsn_wrap_gives_the_same_figures(run, first):
    """TSNs 2^32-2 .. 1 must give the figures of TSNs 11 .. 14 (serial arithmetic)."""
    cum = (first - 1) & 0xFFFFFFFF
    tsns = [(first + i) & 0xFFFFFFFF for i in range(4)]
    g = run(handshake() + [data(0.2 + i / 1000, t) for i, t in enumerate(tsns)]
            + [ack(0.3, nr(cum, (2, 3))), ack(0.31, nr(tsns[2])), ack(0.32, nr(tsns[3]))])
    assert [g.row(f)["nrsack.rtxq.bytes"] for f in range(3, 10)] == [["1000"], ["2000"], ["3000"], ["4000"], ["2000"],
                                                                     ["1000"], ["0"]]
    assert findings(g) == set()


def test_ethernet_padding_is_not_a_chunk(run):
    """A COOKIE-ACK frame is padded to 60 bytes on Ethernet; the padding must not read as a chunk."""
    cookie_ack = ack(0.15, pcaps.cookie_ack_chunk())
    padded = cookie_ack.__class__(bytes(cookie_ack) + b"\0" * 14)
    padded.time = cookie_ack.time
    g = run(handshake() + [padded] + sent(11, 11))
    assert findings(g) == set()


def test_sctp_over_udp_default_and_preference_port(run):
    over_udp = [pcaps.sctp_packet(p.time, p["IP"].src, p["IP"].dst, p["SCTP"].tag, [bytes(p["SCTP"].payload)],
                                  sport=p["SCTP"].sport, dport=p["SCTP"].dport, udp_port=9899)
                for p in handshake() + sent(11, 12) + [ack(0.3, nr(10, (2, 2)))]]
    g = run(over_udp)
    assert g.row(5)["nrsack.rtxq.nr_acked_bytes"] == ["1000"]
    moved = [p.__class__(bytes(p)) for p in over_udp]
    for p, q in zip(moved, over_udp):
        p["UDP"].sport = p["UDP"].dport = 9911
        p["UDP"].chksum = None
        p.time = q.time
    moved = [p.__class__(bytes(p)) for p in moved]
    for p, q in zip(moved, over_udp):
        p.time = q.time
    rows = run(moved, prefs={"nrsack.sctp_udp_port": "9911"})
    assert rows[4]["nrsack.rtxq.nr_acked_bytes"] == "1000"
    assert run(moved, prefs={})[4]["nrsack.rtxq.nr_acked_bytes"] == "", "without the preference port 9911 is not SCTP"


def fsack_capture(complete_address=B, late_ack_ts=None, sack_from=B):
    packets = handshake(ext=(NR_SACK, FSACK_INIT), addrs_b=[B, B2]) + sent(11, 12)
    packets += [
        pcaps.sctp_packet(1.000, A, B, TAG_B, [pcaps.fsack_chunk(FSACK_INIT, timestamp=1000)]),
        ack(1.050, pcaps.fsack_chunk(FSACK_ACK, timestamp=1000), src=B),
        ack(1.070, pcaps.fsack_chunk(FSACK_ACK, timestamp=1000), src=B2),
        pcaps.sctp_packet(1.071, A, B, TAG_B, [pcaps.fsack_chunk(FSACK_COMPLETE, address=complete_address)]),
        ack(1.2, nr(12), src=sack_from),
    ]
    if late_ack_ts is not None:
        packets.append(ack(1.3, pcaps.fsack_chunk(FSACK_ACK, timestamp=late_ack_ts), src=B))
    return packets


def test_fsack_decode_and_rtt(run):
    g = run(fsack_capture())
    assert g.row(1)["nrsack.sctp.ext_fsack"] == ["1"]
    assert g.row(5)["nrsack.fsack.type"] == ["0xa0"] and g.row(5)["nrsack.fsack.timestamp"] == ["1000"]
    assert g.row(6)["nrsack.fsack.type"] == ["0xa1"] and g.row(6)["nrsack.fsack.rtt_ms"] == ["50"]
    assert g.row(7)["nrsack.fsack.rtt_ms"] == ["70"]
    assert g.row(8)["nrsack.fsack.type"] == ["0xa2"] and g.row(8)["nrsack.fsack.address_v4"] == [B]
    assert findings(g) == set()


@pytest.mark.parametrize("kw,expected", [
    ({"late_ack_ts": 999}, {(10, "FS-01")}),
    ({"complete_address": B2, "sack_from": B2}, {(8, "FS-03")}),
    ({"sack_from": B2}, {(9, "FS-04")}),
])
def test_fsack_rules(run, kw, expected):
    assert findings(run(fsack_capture(**kw))) == expected


def test_fs06_without_negotiation(run):
    packets = handshake() + [pcaps.sctp_packet(1.0, A, B, TAG_B, [pcaps.fsack_chunk(FSACK_INIT, timestamp=5)])]
    assert run(packets).expert == [(3, "FS-06", "error")]
    assert run(packets[2:]).expert == [(1, "FS-06", "note")]


def test_fsack_chunk_types_follow_preferences(run):
    packets = [pcaps.sctp_packet(1.0, A, B, TAG_B, [pcaps.fsack_chunk(0xB0, timestamp=7)])]
    assert run(packets, prefs={"nrsack.fsack_init_type": "0xB0"})[0]["nrsack.fsack.type"] == "0xb0"
    assert run(packets, prefs={})[0]["nrsack.fsack.type"] == ""
