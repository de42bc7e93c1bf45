"""The papers' timelines: reproducible pcaps whose packets are what the expected files (written by
hand from the figures) say, and which the real tshark 4.0 reads without a malformed mark."""

import json
from decimal import Decimal

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.sctp import SCTP, SCTPChunkData, SCTPChunkInit, SCTPChunkInitAck, SCTPChunkSACK
from scapy.utils import rdpcap

from nrsack.analyzer.read.events import format_endpoint
from nrsack.generator.layers import (
    SCTPChunkFsackAck,
    SCTPChunkFsackComplete,
    SCTPChunkFsackInit,
    SCTPChunkNRSACK,
)
from nrsack.generator.timelines import write_all
from support.tshark import Plugin, run_tshark
from support.paths import SAMPLES, timeline_pcaps

EXPECTED = sorted(SAMPLES.rglob("*.expected.json"))
# Keys of an expected packet that describe it rather than a decoded value.
DESCRIPTIVE = {"frame", "t_ms", "src", "dst", "label", "chunk", "retransmission"}


def _blocks(gap_list):
    return [[int(x) for x in block.split(":")] for block in gap_list]


def sctp_values(sctp):
    """Decoded values of an SCTP packet, under the expected files' key names."""
    values = {}
    chunk = sctp.payload
    while chunk and chunk.__class__.__name__ not in ("Raw", "Padding", "NoPayload"):
        if isinstance(chunk, SCTPChunkData):
            values.update(tsn=chunk.tsn, payload_bytes=chunk.len - 16, unordered=bool(chunk.unordered))
        elif isinstance(chunk, (SCTPChunkInit, SCTPChunkInitAck)):
            values["init_tsn"] = chunk.init_tsn
            values["supported_extensions"] = [
                ext for p in chunk.params if p.type == 0x8008 for ext in p.supported_extensions]
        elif isinstance(chunk, SCTPChunkSACK):
            values.update(cum_ack=chunk.cumul_tsn_ack, gap_blocks=_blocks(chunk.gap_ack_list),
                          dup_tsns=list(chunk.dup_tsn_list))
        elif isinstance(chunk, SCTPChunkNRSACK):
            values.update(cum_ack=chunk.cumul_tsn_ack, r_blocks=_blocks(chunk.r_gap_ack_list),
                          nr_blocks=_blocks(chunk.nr_gap_ack_list), dup_tsns=list(chunk.dup_tsn_list))
        elif isinstance(chunk, (SCTPChunkFsackInit, SCTPChunkFsackAck)):
            values.update(fsack_type=chunk.type, fsack_timestamp=chunk.timestamp)
        elif isinstance(chunk, SCTPChunkFsackComplete):
            values.update(fsack_type=chunk.type, fsack_address=chunk.params[0].addr)
        chunk = chunk.payload
    return values


def endpoints(packet):
    network = packet[IP] if IP in packet else packet[IPv6]
    transport = packet[SCTP] if SCTP in packet else packet[TCP]
    return format_endpoint(network.src, transport.sport), format_endpoint(network.dst, transport.dport)


def test_generate_timelines_reproduces_sample_pcaps_byte_for_byte(tmp_path):
    written = {p.relative_to(tmp_path) for p in write_all(tmp_path)}
    committed = {p.relative_to(SAMPLES) for p in timeline_pcaps()}
    assert written == committed
    for relative in sorted(written):
        assert (tmp_path / relative).read_bytes() == (SAMPLES / relative).read_bytes(), relative


def test_every_sample_pcap_has_an_expected_file():
    pcaps = {p.with_suffix("") for p in timeline_pcaps()}
    assert pcaps == {p.with_suffix("").with_suffix("") for p in EXPECTED}


@pytest.mark.parametrize("expected_path", EXPECTED, ids=lambda p: p.name)
def test_decoded_packets_match_the_expected_file(expected_path):
    expected = json.loads(expected_path.read_text())
    packets = rdpcap(str(expected_path.parent / expected["capture"]))
    assert len(packets) == len(expected["packets"])
    epoch = Decimal(expected["epoch_s"])
    for packet, want in zip(packets, expected["packets"]):
        where = "frame %d (%s)" % (want["frame"], want["label"])
        assert (packet.time - epoch) * 1000 == pytest.approx(want["t_ms"], abs=1e-3), where
        assert endpoints(packet) == (want["src"], want["dst"]), where
        if SCTP not in packet:
            continue  # TCP and MPTCP frames: tests/test_timelines_*.py decode those
        decoded = sctp_values(packet[SCTP])
        for key in set(want) - DESCRIPTIVE:
            assert decoded.get(key) == want[key], "%s: %s" % (where, key)


def _tshark(pcap, *args):
    return run_tshark(["-n", *args], Plugin.none(), pcap=pcap, timeout=120).stdout


CLEAN = [p for p in SAMPLES.rglob("*.pcap") if "broken" not in p.parts]


@pytest.mark.tshark
@pytest.mark.parametrize("pcap", CLEAN, ids=lambda p: p.name)
def test_tshark_reads_clean_samples_without_malformed_marks(pcap):
    marked = _tshark(pcap, "-Y", "_ws.malformed or _ws.expert.group == 0x07000000",
                     "-T", "fields", "-e", "frame.number")
    assert marked.split() == []


@pytest.mark.tshark
@pytest.mark.parametrize("expected_path", [p for p in EXPECTED if p.name.startswith("sctp-nrsack")],
                         ids=lambda p: p.name)
def test_tshark_shows_the_intended_nr_sack_fields(expected_path):
    expected = json.loads(expected_path.read_text())
    rows = _tshark(expected_path.parent / expected["capture"], "-Y", "sctp.chunk_type == 16",
                   "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,",
                   "-e", "frame.number", "-e", "sctp.nr_sack_cumulative_tsn_ack",
                   "-e", "sctp.nr_sack_nr_gap_block_start", "-e", "sctp.nr_sack_nr_gap_block_end",
                   "-e", "sctp.nr_sack_number_of_gap_blocks")
    seen = {}
    for row in rows.splitlines():
        frame, cum, starts, ends, n_r = row.split("\t")
        blocks = [[int(s), int(e)] for s, e in zip(starts.split(","), ends.split(","))] if starts else []
        seen[int(frame)] = (int(cum), blocks, int(n_r))
    want = {p["frame"]: (p["cum_ack"], p["nr_blocks"], len(p["r_blocks"]))
            for p in expected["packets"] if p.get("chunk") == "nr-sack"}
    assert seen == want
