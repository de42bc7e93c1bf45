"""The reader names the malformations that rules.md gives their own rule (NR-05 counts vs chunk length,
TN-05 option length, MN-02 flag N without DATA ACK or a bad count) instead of a GEN-01, and keeps
analysing the packet with what fits."""

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.layers.sctp import SCTP
from scapy.utils import wrpcap

from nrsack.analyzer.read import events as E
from nrsack.generator.layers import MPTCPDSS, MPTCPNRBlock, SCTPChunkNRSACK

ADDRS = dict(src="192.0.2.1", dst="198.51.100.1")


def read(tmp_path, *transports):
    packets = [Ether() / IP(**ADDRS) / t for t in transports]
    for i, p in enumerate(packets):
        p.time = 1_700_000_000 + i
    path = tmp_path / "malformed.pcap"
    wrpcap(str(path), packets)
    return E.read_capture(path)


def test_nrsack_counts_longer_and_shorter_than_the_chunk(tmp_path):
    too_many = SCTPChunkNRSACK(cumul_tsn_ack=10, nr_gap_ack_list=["2:4"], n_nr_gap=3)
    too_long = SCTPChunkNRSACK(cumul_tsn_ack=10, nr_gap_ack_list=["2:4", "6:6"], n_nr_gap=1)
    cap = read(tmp_path, SCTP(sport=1, dport=2, tag=7) / too_many, SCTP(sport=1, dport=2, tag=7) / too_long)
    assert [(f, rule) for f, rule, _ in cap.rule_findings] == [(1, "NR-05"), (2, "NR-05")]
    assert cap.findings == []
    # an ack whose counts fail its length is unreadable as a whole: no ack, no block (decisions.md 40)
    acks = cap.ev[cap.ev["chunk"] == 16]
    assert list(acks["blk_count"]) == [0, 0] and not (acks["flags"] & E.ACK).any()
    assert "need 32 bytes, chunk length is 24" in cap.rule_findings[0][2]


def test_tcp_nrsack_option_of_wrong_length(tmp_path):
    option = (253, bytes.fromhex("4e52") + bytes(6))  # 8 bytes: not 4 + 8n
    cap = read(tmp_path, TCP(sport=1, dport=2, flags="A", options=[option]))
    assert [(f, rule) for f, rule, _ in cap.rule_findings] == [(1, "TN-05")]
    assert cap.findings == []


def test_tcp_nrsack_option_overrunning_the_header(tmp_path):
    # kind 253, length 13 (one block needs 12), ExID NR, one block: the length runs past the options
    option = (253, bytes.fromhex("4e52") + bytes(8))
    segment = TCP(sport=1, dport=2, flags="A", options=[option])
    raw = bytearray(bytes(segment))
    raw[21] = 13
    cap = read(tmp_path, TCP(bytes(raw)))
    assert [(f, rule) for f, rule, _ in cap.rule_findings] == [(1, "TN-05")]
    assert cap.findings == []


def test_dss_flag_n_without_data_ack_and_bad_count(tmp_path):
    no_ack = MPTCPDSS(N=1, nr_blocks=[MPTCPNRBlock(start=5, end=9)])
    bad_count = MPTCPDSS(A=1, data_ack32=100, N=1, nr_blocks=[MPTCPNRBlock(start=5, end=9)], nr_count=2)
    cap = read(tmp_path, TCP(sport=1, dport=2, flags="A", options=[(30, bytes(no_ack)[2:])]),
               TCP(sport=1, dport=2, flags="A", options=[(30, bytes(bad_count)[2:])]))
    assert [(f, rule) for f, rule, _ in cap.rule_findings] == [(1, "MN-02"), (2, "MN-02")]
    assert cap.findings == []
