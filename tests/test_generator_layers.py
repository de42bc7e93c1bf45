"""Round trips of the Scapy layers of generator/layers.py: bytes -> layer -> the same bytes, and
lengths and counts filled in when left unset."""

import struct

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.sctp import SCTP

from nrsack.generator.layers import (
    MPTCPCapable,
    MPTCPDSS,
    MPTCPJoinAck,
    MPTCPJoinSyn,
    MPTCPJoinSynAck,
    MPTCPNRBlock,
    MPTCPNRBlock64,
    NRSackBlock,
    SCTPChunkFsackAck,
    SCTPChunkFsackComplete,
    SCTPChunkFsackInit,
    SCTPChunkNRSACK,
    TCPOptNRSack,
    TCPOptNRSackPermitted,
    address_parameter,
    supported_extensions,
    tcp_option,
    tcp_option_layers,
)


def test_nr_sack_chunk_builds_the_spec_layout():
    chunk = SCTPChunkNRSACK(cumul_tsn_ack=10, a_rwnd=4096, r_gap_ack_list=["2:3"],
                            nr_gap_ack_list=["5:6", "8:8"], dup_tsn_list=[7])
    raw = bytes(chunk)
    # Chunk length = 20 + 4N + 4M + 4X (wire-formats.md section 1)
    assert len(raw) == 20 + 4 * 1 + 4 * 2 + 4 * 1
    assert struct.unpack(">BBHIIHHHH", raw[:20]) == (16, 0, len(raw), 10, 4096, 1, 2, 1, 0)
    assert struct.unpack(">HHHHHHI", raw[20:]) == (2, 3, 5, 6, 8, 8, 7)


@pytest.mark.parametrize("chunk", [
    SCTPChunkNRSACK(cumul_tsn_ack=0xFFFFFFFE, r_gap_ack_list=["2:2"], nr_gap_ack_list=["4:9"]),
    SCTPChunkNRSACK(cumul_tsn_ack=5),
    SCTPChunkFsackInit(timestamp=0xFFFFFFFF),
    SCTPChunkFsackAck(timestamp=1234),
    SCTPChunkFsackComplete(params=[address_parameter("192.0.2.2")]),
    SCTPChunkFsackComplete(params=[address_parameter("2001:db8::2")]),
])
def test_sctp_chunks_round_trip_inside_a_packet(chunk):
    packet = IP(src="192.0.2.1", dst="198.51.100.1") / SCTP(sport=1, dport=2, tag=3) / chunk
    raw = bytes(packet)
    parsed = IP(raw)
    assert type(parsed[SCTP].payload) is type(chunk)
    assert bytes(parsed) == raw


def test_fsack_complete_lengths_follow_the_address_family():
    assert len(bytes(SCTPChunkFsackComplete(params=[address_parameter("192.0.2.2")]))) == 12
    assert len(bytes(SCTPChunkFsackComplete(params=[address_parameter("2001:db8::2")]))) == 24


def test_supported_extensions_lists_nr_sack_and_fsack():
    raw = bytes(supported_extensions(0x10, 0xA0))
    assert raw[:4] == b"\x80\x08\x00\x06" and raw[4:6] == b"\x10\xa0"


@pytest.mark.parametrize("option, expected", [
    (TCPOptNRSackPermitted(flags=0x01), b"\xfd\x05\x4e\x52\x01"),
    (TCPOptNRSackPermitted(flags=0x02, kind=254), b"\xfe\x05\x4e\x52\x02"),
    (TCPOptNRSack(blocks=[NRSackBlock(left=3000, right=4000)]),
     b"\xfd\x0c\x4e\x52" + struct.pack(">II", 3000, 4000)),
])
def test_tcp_nr_sack_options_bytes(option, expected):
    assert bytes(option) == expected
    assert bytes(type(option)(expected)) == expected


def test_tcp_options_survive_scapy_tcp_and_come_back_as_layers():
    options = [TCPOptNRSackPermitted(flags=1),
               TCPOptNRSack(blocks=[NRSackBlock(left=0xFFFFFF00, right=0x100)])]
    tcp = TCP(bytes(TCP(options=[("SAckOK", b"")] + [tcp_option(o) for o in options])))
    layers = tcp_option_layers(tcp)
    assert [bytes(layer) for layer in layers] == [bytes(o) for o in options]
    assert layers[1].blocks[0].left == 0xFFFFFF00 and layers[1].blocks[0].right == 0x100


def test_other_experimental_options_are_not_taken_for_nr_sack():
    tcp = TCP(bytes(TCP(options=[(254, b"\xf9\x89abcd")])))  # TCP Fast Open's ExID
    assert tcp_option_layers(tcp) == []


@pytest.mark.parametrize("option", [
    MPTCPCapable(),
    MPTCPCapable(sender_key=0x0102030405060708),
    MPTCPCapable(sender_key=1, receiver_key=2),
    MPTCPJoinSyn(address_id=1, receiver_token=0xDEADBEEF, sender_nonce=7),
    MPTCPJoinSynAck(address_id=1, sender_hmac=99, sender_nonce=8),
    MPTCPJoinAck(sender_hmac=[1, 2, 3, 4, 5]),
    MPTCPDSS(A=1, a=1, data_ack=14001),
    MPTCPDSS(A=1, a=1, M=1, m=1, data_ack=1, dsn=2, ssn=3, data_len=1400),
    MPTCPDSS(A=1, a=1, M=1, m=1, data_ack=1, dsn=2, ssn=3, data_len=1400, checksum=0xBEEF),
    MPTCPDSS(A=1, a=1, N=1, data_ack=14001, nr_blocks=[MPTCPNRBlock(start=5600, end=7000)]),
    MPTCPDSS(A=1, a=0, M=1, m=0, N=1, data_ack32=5, dsn32=6, ssn=7, data_len=8, checksum=9,
             nr_blocks=[MPTCPNRBlock(start=2, end=3), MPTCPNRBlock(start=5, end=6)]),
    MPTCPDSS(A=1, a=1, N=1, n=1, data_ack=2**64 - 10,
             nr_blocks=[MPTCPNRBlock64(start=2**40, end=2**40 + 1400)]),
])
def test_mptcp_options_round_trip(option):
    raw = bytes(option)
    assert raw[1] == len(raw)
    parsed = type(option)(raw)
    assert bytes(parsed) == raw
    tcp = TCP(bytes(TCP(options=[tcp_option(option)])))
    assert [bytes(layer) for layer in tcp_option_layers(tcp)] == [raw]


def test_dss_nr_blocks_are_offsets_from_the_data_ack():
    # The MPTCP paper's example: DATA ACK 14001, block 5600..7000 -> DSNs 19601..21000.
    dss = MPTCPDSS(bytes(MPTCPDSS(A=1, a=1, N=1, data_ack=14001,
                                  nr_blocks=[MPTCPNRBlock(start=5600, end=7000)])))
    assert dss.nr_dsn_ranges() == [(19601, 21001)]
    assert len(bytes(dss)) == 4 + 8 + 2 + 8  # option grows by 2 + 8K


def test_dss_nr_ranges_wrap_at_2_to_the_64():
    dss = MPTCPDSS(A=1, a=1, N=1, data_ack=2**64 - 100, nr_blocks=[MPTCPNRBlock(start=50, end=150)])
    assert dss.nr_dsn_ranges() == [(2**64 - 50, 50)]
