"""C plugin: where the SCTP packet ends comes from the enclosing IPv4 / IPv6 / UDP headers' own length
fields (read from the bytes, not from ip.len & co. in the tree), so link-layer trailers never read as
chunks, and lengths a header does not state (IPv4 total length 0 from TSO, IPv6 jumbograms, UDP-Lite's
checksum coverage) bound nothing. TCP payload lengths come from the headers too (tcp.len), so a capture
cut short by its snap length still counts every byte sent.

Scenario (values by hand): handshake, TSNs 11-13 of 1000 bytes from A, an NR-SACK with NR block 2-2
(TSN 12 NR-acked), then one cum-acking 13: the queue holds 3000 bytes after frame 5, 1000 of them are
NR-acked by frame 6, none are left after frame 7; no finding in any variant. Where the IP length leaves
less than the SCTP common header or the TCP header's data offset, the packet is malformed (GEN-01) even
if the frame holds more bytes."""

import struct
import subprocess

import pytest
from scapy.layers.inet import IP, UDP, IPOption_NOP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrHopByHop
from scapy.layers.l2 import Ether
from scapy.layers.sctp import SCTP
from scapy.packet import Raw

from support import pcaps, tshark
from support.sctp_scenario import A, ack, handshake, nr, sent

pytestmark = pytest.mark.tshark

V6 = {True: ("2001:db8::1", "2001:db8::2"), False: ("2001:db8::2", "2001:db8::1")}
UDP_LITE = 136
PAD_CHUNK, JUMBO_OPTION = 0x84, 0xC2


def scenario():
    return handshake() + sent(11, 13) + [ack(0.3, nr(10, (2, 2))), ack(0.4, nr(13))]


def sctp_bytes(p) -> bytes:
    s = p["SCTP"]
    return bytes(SCTP(sport=s.sport, dport=s.dport, tag=s.tag) / Raw(bytes(s.payload)))


def timed(frame: bytes, like):
    pkt = Ether(frame)
    pkt.time = like.time
    return pkt


def ipv4(p, payload: bytes, proto: int = 132, options=()) -> bytes:
    return bytes(Ether() / IP(src=p["IP"].src, dst=p["IP"].dst, proto=proto, options=list(options)) / Raw(payload))


def ipv6(p, payload: bytes, hop_by_hop: bool = False) -> bytes:
    src, dst = V6[p["IP"].src == A]
    ip = IPv6(src=src, dst=dst, nh=0 if hop_by_hop else 132)
    return bytes(Ether() / (ip / IPv6ExtHdrHopByHop(nh=132) if hop_by_hop else ip) / Raw(payload))


def ethernet_trailer(frame: bytes) -> bytes:
    return frame + b"\0" * 14


def tso(frame: bytes) -> bytes:
    """IPv4 total length 0, as a capture on a host with TCP segmentation offload has it."""
    return frame[:16] + b"\0\0" + frame[18:]


def jumbogram(p) -> bytes:
    """IPv6 payload length 0 and a Jumbo Payload option (RFC 2675) with the real length, which the two PAD
    chunks (RFC 4820) added to every packet take above 65535 bytes. (Wireshark 4.0's own SCTP dissector
    marks these packets malformed: it reads the remaining length modulo 65536.)"""
    body = sctp_bytes(p) + 2 * pcaps.chunk(PAD_CHUNK, b"\0" * 40000)
    src, dst = V6[p["IP"].src == A]
    hop_by_hop = struct.pack("!BBBBI", 132, 0, JUMBO_OPTION, 4, 8 + len(body))
    return bytes(Ether() / IPv6(src=src, dst=dst, nh=0, plen=0)) + hop_by_hop + body


def udp_lite(p, coverage: int) -> bytes:
    """UDP-Lite's third field is the checksum coverage, not a length."""
    return ipv4(p, struct.pack("!HHHH", 9899, 9899, coverage, 0) + sctp_bytes(p), proto=UDP_LITE)


def udp_shorter_than_ip(p) -> bytes:
    body = sctp_bytes(p)
    return ipv4(p, bytes(UDP(sport=9899, dport=9899, len=8 + len(body), chksum=0) / Raw(body)) + b"\0" * 12, proto=17)


VARIANTS = {
    "ethernet trailer": lambda p: ethernet_trailer(bytes(p)),
    "IPv4 options and trailer": lambda p: ethernet_trailer(ipv4(p, sctp_bytes(p), options=[IPOption_NOP()] * 4)),
    "IPv4 total length 0 (TSO)": lambda p: tso(bytes(p)),
    "IPv6 and trailer": lambda p: ethernet_trailer(ipv6(p, sctp_bytes(p))),
    "IPv6 hop-by-hop header and trailer": lambda p: ethernet_trailer(ipv6(p, sctp_bytes(p), hop_by_hop=True)),
    "IPv6 jumbogram": jumbogram,
    "UDP length below the IP payload": udp_shorter_than_ip,
    "UDP-Lite, coverage = header": lambda p: udp_lite(p, 8),
    "UDP-Lite, coverage inside the first chunk": lambda p: udp_lite(p, 8 + 12 + 8),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_sctp_packet_ends_where_the_headers_say(nrsack_c_plugin, tmp_path, variant):
    packets = [timed(VARIANTS[variant](p), p) for p in scenario()]
    g = tshark.parse_golden(tshark.golden_output(pcaps.write(tmp_path / "t.pcap", packets), nrsack_c_plugin))
    assert g.expert == []
    assert g.row(5)["nrsack.rtxq.bytes"] == ["3000"]
    assert g.row(6)["nrsack.rtxq.nr_acked_bytes"] == ["1000"] and g.row(6)["nrsack.freed_bytes"] == ["1000"]
    assert g.row(7)["nrsack.rtxq.bytes"] == ["0"]


def test_tcp_payload_length_survives_the_snap_length(nrsack_c_plugin, tmp_path):
    a, b = "10.0.0.1", "10.0.0.2"
    packets = [pcaps.tcp_packet(0.0, a, b, 40000, 80, 1000, 0, "S"),
               pcaps.tcp_packet(0.1, b, a, 80, 40000, 5000, 1001, "SA"),
               pcaps.tcp_packet(0.2, a, b, 40000, 80, 1001, 5001, "A"),
               pcaps.tcp_packet(0.21, a, b, 40000, 80, 1001, 5001, "A", payload=1000),
               pcaps.tcp_packet(0.22, a, b, 40000, 80, 2001, 5001, "A", payload=1000),
               pcaps.tcp_packet(0.3, b, a, 80, 40000, 5001, 2001, "A")]
    full = pcaps.write(tmp_path / "full.pcap", packets)
    cut = tmp_path / "cut.pcap"
    subprocess.run(["editcap", "-s", "80", full, str(cut)], check=True)
    g = tshark.parse_golden(tshark.golden_output(cut, nrsack_c_plugin))
    assert [g.row(f)["nrsack.rtxq.bytes"] for f in (4, 5, 6)] == [["1000"], ["2000"], ["1000"]]


def test_headers_shorter_than_the_ip_length_allows_are_malformed(nrsack_c_plugin, tmp_path):
    a, b = "10.0.0.1", "10.0.0.2"
    sctp = bytearray(bytes(pcaps.sctp_packet(0.0, a, b, 0x1111, [pcaps.data_chunk(11)])))
    tcp = bytearray(bytes(pcaps.tcp_packet(0.1, a, b, 40000, 80, 1000, 1, "A", [("MSS", 1460)], payload=100)))
    sctp[16:18] = struct.pack("!H", 20 + 8)   # IP total length: 8 bytes of SCTP
    tcp[16:18] = struct.pack("!H", 20 + 20)   # 20 bytes of TCP, whose data offset says 24
    packets = [timed(bytes(sctp), pcaps.sctp_packet(0.0, a, b, 0, [])), timed(bytes(tcp), pcaps.tcp_packet(0.1, a, b, 1, 2, 0, 0, "A"))]
    g = tshark.parse_golden(tshark.golden_output(pcaps.write(tmp_path / "t.pcap", packets), nrsack_c_plugin))
    assert [(frame, rule) for frame, rule, _ in g.expert] == [(1, "GEN-01"), (2, "GEN-01")]
    assert g.row(2)["nrsack.rtxq.bytes"] == []
