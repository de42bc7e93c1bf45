"""TCP and MPTCP timelines: the pcaps decode (with Scapy and with the real tshark 4.0) to the values
their expected files, written by hand from the papers' figures, say; the option layers round-trip."""

import json
from decimal import Decimal

import pytest
from scapy.layers.inet import IP, TCP
from scapy.utils import rdpcap

from nrsack.generator.timelines import (notation_tcp, broken as timelines_broken, mptcp as timelines_mptcp,
                                        tcp as timelines_tcp)
from nrsack.generator.layers import (
    MPTCPCapable,
    MPTCPDSS,
    MPTCPJoinSyn,
    MPTCPJoinSynAck,
    TCPOptNRSack,
    TCPOptNRSackPermitted,
    tcp_option_layers,
)
from support.tshark import Plugin, run_tshark
from support.paths import SAMPLES

# The expected files of every TCP and MPTCP timeline the generator writes (broken vectors included).
TCP_EXPECTED = [SAMPLES / t.options.get("subdir", "") / (t.name + ".expected.json")
                for module in (timelines_tcp, timelines_mptcp, timelines_broken)
                for t in (factory() for factory in module.TIMELINES) if t.notation is notation_tcp]
CLEAN = [p for p in TCP_EXPECTED if "broken" not in p.parts]
# Keys of an expected packet that describe it rather than a decoded value.
DESCRIPTIVE = {"frame", "t_ms", "src", "dst", "label", "retransmission"}


def _load(expected_path):
    expected = json.loads(expected_path.read_text())
    return expected, rdpcap(str(expected_path.parent / expected["capture"]))


def tcp_values(tcp):
    """Decoded values of a TCP segment, under the expected files' key names."""
    values = {"flags": str(tcp.flags), "seq": tcp.seq, "ack": tcp.ack,
              "payload_bytes": len(bytes(tcp.payload)), "sack_blocks": [], "nr_blocks": []}
    options = dict((k, v) for k, v in tcp.options if isinstance(k, str))
    if "MSS" in options:
        values.update(mss=options["MSS"], window=tcp.window, nr_sack_permitted=None)
    if "SAckOK" in options:
        values["sack_permitted"] = True
    if "SAck" in options:
        edges = list(options["SAck"])
        values["sack_blocks"] = [edges[i:i + 2] for i in range(0, len(edges), 2)]
    for layer in tcp_option_layers(tcp):
        if isinstance(layer, TCPOptNRSackPermitted):
            values["nr_sack_permitted"] = layer.flags
        elif isinstance(layer, TCPOptNRSack):
            values["nr_blocks"] = [[b.left, b.right] for b in layer.blocks]
        elif isinstance(layer, MPTCPCapable):
            values["mp_capable_version"] = layer.version
            if layer.sender_key is not None:
                values["mptcp_sender_key"] = layer.sender_key
            if layer.receiver_key is not None:
                values["mptcp_receiver_key"] = layer.receiver_key
        elif isinstance(layer, MPTCPJoinSyn):
            values.update(mp_join_token=layer.receiver_token, mp_join_nonce=layer.sender_nonce,
                          mp_join_address_id=layer.address_id)
        elif isinstance(layer, MPTCPJoinSynAck):
            values.update(mp_join_nonce=layer.sender_nonce, mp_join_address_id=layer.address_id)
        elif isinstance(layer, MPTCPDSS):
            if layer.A:
                values["data_ack"] = layer.data_ack if layer.a else layer.data_ack32
            if layer.M:
                values.update(dsn=layer.dsn if layer.m else layer.dsn32, ssn=layer.ssn,
                              data_len=layer.data_len)
            if layer.N and layer.A:
                values["nr_blocks"] = [list(r) for r in layer.nr_dsn_ranges()]
    return values


@pytest.mark.parametrize("expected_path", TCP_EXPECTED, ids=lambda p: p.name)
def test_decoded_segments_match_the_expected_file(expected_path):
    expected, packets = _load(expected_path)
    assert len(packets) == len(expected["packets"])
    epoch = Decimal(expected["epoch_s"])
    for packet, want in zip(packets, expected["packets"]):
        where = "frame %d (%s)" % (want["frame"], want["label"])
        assert (packet.time - epoch) * 1000 == pytest.approx(want["t_ms"], abs=1e-3), where
        ends = ("%s:%d" % (packet[IP].src, packet[TCP].sport), "%s:%d" % (packet[IP].dst, packet[TCP].dport))
        assert ends == (want["src"], want["dst"]), where
        decoded = tcp_values(packet[TCP])
        for key in set(want) - DESCRIPTIVE:
            assert decoded.get(key, "absent") == want[key], "%s: %s" % (where, key)


@pytest.mark.parametrize("expected_path", TCP_EXPECTED, ids=lambda p: p.name)
def test_option_layers_round_trip_on_every_segment(expected_path):
    """bytes -> layer -> the same bytes, for every NR-SACK and MPTCP option of the capture."""
    expected, packets = _load(expected_path)
    seen = 0
    for packet in packets:
        raw_options = [(k, v) for k, v in packet[TCP].options if isinstance(k, int)]
        layers = tcp_option_layers(packet[TCP])
        assert len(layers) == len(raw_options)
        for (kind, value), layer in zip(raw_options, layers):
            assert bytes(layer) == bytes([kind, len(value) + 2]) + value
            rebuilt = layer.__class__(bytes(layer))
            rebuilt.length = None  # recomputed from the fields
            assert bytes(rebuilt) == bytes(layer)
            seen += 1
    carried = sum(1 for p in expected["packets"] for key in ("nr_blocks", "nr_sack_permitted",
                                                               "mp_capable_version", "data_ack")
                  if p.get(key) not in (None, []))
    assert (seen > 0) == (carried > 0)


def test_mptcp_nr_block_of_the_papers_example():
    """wire-formats.md 4: DATA ACK 14001 with Start 5600, End 7000 reports DSNs 19601..21000."""
    expected, packets = _load(SAMPLES / "mptcp-nrsack-fig2.expected.json")
    first = next(p for p in expected["packets"] if p["label"].startswith("A:26401"))
    dss = next(l for l in tcp_option_layers(packets[first["frame"] - 1][TCP]) if isinstance(l, MPTCPDSS))
    assert (dss.N, dss.nr_count, dss.nr_blocks[0].start, dss.nr_blocks[0].end) == (1, 1, 5600, 7000)
    idsn = expected["idsn"]
    assert dss.nr_dsn_ranges() == [(idsn + 19601, idsn + 21001)]


def _tshark(pcap, *args):
    stdout = run_tshark(["-n", *args], Plugin.none(), pcap=pcap, timeout=120).stdout
    return [line.split("\t") for line in stdout.splitlines()]


def test_every_tcp_timeline_has_its_pcap_and_expected_file():
    assert len(TCP_EXPECTED) >= 8  # TCP and MPTCP figures 1-2, four broken vectors
    for path in TCP_EXPECTED:
        expected = json.loads(path.read_text())
        assert (path.parent / expected["capture"]).exists(), path


def test_dss_nr_blocks_without_data_ack_have_no_dsn_range():
    """MN-02 vector: flag N without flag A decodes, but its offsets name no data: a clear error."""
    expected, packets = _load(SAMPLES / "broken" / "mn02-dss-n-without-data-ack.expected.json")
    frame = next(p["frame"] for p in expected["packets"] if p["label"].endswith("noack"))
    dss = next(l for l in tcp_option_layers(packets[frame - 1][TCP]) if isinstance(l, MPTCPDSS))
    assert (dss.N, dss.A, dss.nr_count) == (1, 0, 1)
    with pytest.raises(ValueError, match="DATA ACK"):
        dss.nr_dsn_ranges()


@pytest.mark.tshark
@pytest.mark.parametrize("expected_path", CLEAN, ids=lambda p: p.name)
def test_tshark_reads_without_malformed_or_error_marks(expected_path):
    expected = json.loads(expected_path.read_text())
    marked = _tshark(SAMPLES / expected["capture"], "-o", "tcp.check_checksum:TRUE", "-Y",
                     "_ws.malformed or _ws.expert.severity >= 0x00800000 or tcp.checksum.status == 0",
                     "-T", "fields", "-e", "frame.number")
    assert marked == []


@pytest.mark.tshark
@pytest.mark.parametrize("expected_path", [p for p in CLEAN if p.name.startswith("tcp-")],
                         ids=lambda p: p.name)
def test_tshark_shows_the_intended_tcp_sack_and_nr_sack_options(expected_path):
    expected = json.loads(expected_path.read_text())
    rows = _tshark(SAMPLES / expected["capture"], "-o", "tcp.relative_sequence_numbers:FALSE",
                   "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,",
                   "-e", "tcp.seq", "-e", "tcp.ack", "-e", "tcp.options.sack_le",
                   "-e", "tcp.options.sack_re", "-e", "tcp.options.experimental.exid",
                   "-e", "tcp.options.experimental.data")
    for row, want in zip(rows, expected["packets"], strict=True):
        seq, ack, sack_le, sack_re, exid, data = row
        assert int(seq) == want["seq"]
        assert int(ack) == want["ack"]
        sack = [[int(l), int(r)] for l, r in zip(sack_le.split(","), sack_re.split(","))] if sack_le else []
        assert sack == want.get("sack_blocks", [])
        # Wireshark knows the experiment only by its ExID; the NR-SACK body is data to it.
        if want.get("nr_blocks") or want.get("nr_sack_permitted") is not None:
            assert int(exid, 16) == 0x4E52
            body = bytes.fromhex(data.replace(":", ""))
            if want.get("nr_blocks"):
                edges = [int.from_bytes(body[i:i + 4], "big") for i in range(0, len(body), 4)]
                assert [edges[i:i + 2] for i in range(0, len(edges), 2)] == want["nr_blocks"]
            else:
                assert body == bytes([want["nr_sack_permitted"]])
        else:
            assert exid == ""


@pytest.mark.tshark
@pytest.mark.parametrize("expected_path", [p for p in CLEAN if p.name.startswith("mptcp-")],
                         ids=lambda p: p.name)
def test_tshark_shows_the_intended_mptcp_fields(expected_path):
    """Wireshark's own MPTCP analysis: one connection, IDSN from the key, relative DSN / DATA ACK
    equal to the figure's numbers."""
    expected = json.loads(expected_path.read_text())
    rows = _tshark(SAMPLES / expected["capture"], "-T", "fields", "-E", "occurrence=f",
                   "-e", "mptcp.stream", "-e", "tcp.options.mptcp.rawdataseqno",
                   "-e", "tcp.options.mptcp.rawdataack", "-e", "mptcp.dss.dsn", "-e", "mptcp.ack",
                   "-e", "mptcp.expected_idsn", "-e", "tcp.stream")
    idsn = {int(r[5]) for r in rows if r[5]}
    assert expected["idsn"] in idsn
    # Both subflows (TCP streams 0 and 1) belong to one MPTCP connection: the MP_JOIN token matched.
    assert {(r[6], r[0]) for r in rows if r[0]} == {("0", "0"), ("1", "0")}
    for row, want in zip(rows, expected["packets"], strict=True):
        _, raw_dsn, raw_ack, rel_dsn, rel_ack, _, _ = row
        if "dsn" in want:
            assert int(raw_dsn) == want["dsn"]
            assert int(rel_dsn) == int(want["label"].split()[1].split(":")[1])
        if "data_ack" in want:
            assert int(raw_ack) == want["data_ack"]
        if want["label"].startswith("A:"):
            assert int(rel_ack) == int(want["label"].split()[1].split(":")[1])


# --- broken vectors: the defect each is for, in Wireshark's own fields ------------------------

def _broken(name):
    expected = json.loads((SAMPLES / "broken" / (name + ".expected.json")).read_text())
    rows = _tshark(SAMPLES / "broken" / expected["capture"], "-o", "tcp.relative_sequence_numbers:FALSE",
                   "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "tcp.ack",
                   "-e", "tcp.options.experimental.exid", "-e", "tcp.options.experimental.data",
                   "-e", "tcp.options.sack_le", "-e", "tcp.options.sack_re", "-e", "_ws.expert.message",
                   "-e", "tcp.options.mptcp.flags", "-e", "tcp.options")
    keys = ["ack", "exid", "data", "sack_le", "sack_re", "expert", "mptcp_flags", "options"]
    return expected, [dict(zip(keys, row)) for row in rows]


def _option(options, kind):
    """The first option of that kind in a raw TCP options area (kind, length, body)."""
    at = 0
    while options[at] != kind:
        at += 1 if options[at] in (0, 1) else options[at + 1]
    return options[at:at + options[at + 1]]


def _edges(data):
    body = bytes.fromhex(data.replace(":", ""))
    return [(int.from_bytes(body[i:i + 4], "big"), int.from_bytes(body[i + 4:i + 8], "big"))
            for i in range(0, len(body), 8)]


@pytest.mark.tshark
def test_tn01_nr_block_option_although_the_syn_ack_lacks_nr_sack_permitted():
    expected, rows = _broken("tn01-nr-option-without-permitted")
    (finding,) = expected["findings"]
    assert rows[0]["exid"] == "0x4e52" and rows[1]["exid"] == ""
    assert [i + 1 for i, r in enumerate(rows[3:], 3) if r["exid"]] == finding["frames"][-1:]


@pytest.mark.tshark
def test_tn03_nr_acked_bytes_are_later_only_in_a_sack_block():
    expected, rows = _broken("tn03-revocation")
    ((earlier, later),) = [f["frames"] for f in expected["findings"]]
    (nr_block,) = _edges(rows[earlier - 1]["data"])
    sack = (int(rows[later - 1]["sack_le"]), int(rows[later - 1]["sack_re"]))
    assert rows[later - 1]["exid"] == "" and sack[0] <= nr_block[0] < nr_block[1] <= sack[1]


@pytest.mark.tshark
def test_tn05_empty_block_block_below_the_ack_and_wrong_option_length():
    expected, rows = _broken("tn05-malformed-option")
    empty, below, wrong_length = (f["frames"][-1] for f in expected["findings"])
    assert [left >= right for left, right in _edges(rows[empty - 1]["data"])] == [True]
    assert [right <= int(rows[below - 1]["ack"]) for _, right in _edges(rows[below - 1]["data"])] == [True]
    assert "option length = 13 bytes" in rows[wrong_length - 1]["expert"]


@pytest.mark.tshark
def test_mn02_dss_flag_n_without_data_ack_and_a_count_the_length_cannot_hold():
    expected, rows = _broken("mn02-dss-n-without-data-ack")
    no_ack, bad_count = (f["frames"][-1] for f in expected["findings"])
    flags = int(rows[no_ack - 1]["mptcp_flags"], 16)
    assert flags & 0x20 and not flags & 0x01
    dss = _option(bytes.fromhex(rows[bad_count - 1]["options"]), 30)
    length, fixed = dss[1], 4 + 8  # kind, length, subtype/flags, 8-octet DATA ACK
    count = dss[fixed]
    assert int(rows[bad_count - 1]["mptcp_flags"], 16) & 0x23 == 0x23
    assert length != fixed + 2 + 8 * count
