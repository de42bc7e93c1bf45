"""Small captures built with Scapy (the project's layers for NR-SACK, FSACK, TCP NR-SACK and MPTCP),
on every link type of docs/wire-formats.md section 5, written as pcap: the reader's and the bad-input
tests' material."""

import struct
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
from scapy.layers.sctp import (SCTP, SCTPChunkCookieAck, SCTPChunkCookieEcho, SCTPChunkData, SCTPChunkInit,
                               SCTPChunkInitAck, SCTPChunkParamStateCookie)

from nrsack.generator.pcapfile import PcapWriter
from nrsack.generator.timelines import sctp as timelines_sctp
from nrsack.generator.timelines.timeline import Step, write_pcap as write_timeline

from nrsack.generator.layers import (MPTCPDSS, MPTCPNRBlock, SCTPChunkFsackAck, SCTPChunkFsackComplete,
                                     SCTPChunkFsackInit, SCTPChunkNRSACK, TCPOptNRSack, TCPOptNRSackPermitted,
                                     NRSackBlock, address_parameter, supported_extensions, tcp_option)

EPOCH = 1_700_000_000
TSN0 = 0xFFFFFFFE  # the association's TSNs wrap after the second DATA chunk
ISN = 0xFFFFFF00   # the TCP sequence numbers wrap inside the transfer


def sctp_packets(a, b, udp=False):
    """(t_ns, transport bytes factory) of a small NR-SACK association from a:5000 to b:5001."""
    def sctp(src_to_dst, tag, *chunks):
        layer = SCTP(sport=5000 if src_to_dst else 5001, dport=5001 if src_to_dst else 5000, tag=tag)
        for chunk in chunks:
            layer = layer / chunk
        return (True if src_to_dst else False), (UDP(sport=9899, dport=9899) / layer if udp else layer)

    sizes = [100, 200, 300, 400]
    return [
        sctp(True, 0, SCTPChunkInit(init_tag=0x1111, init_tsn=TSN0, n_out_streams=2, n_in_streams=2,
                                    params=[address_parameter("192.0.2.1"), address_parameter("192.0.2.2"),
                                            supported_extensions(0x10, 0xA0)])),
        sctp(False, 0x1111, SCTPChunkInitAck(init_tag=0x2222, init_tsn=1, n_out_streams=2, n_in_streams=2,
                                             params=[SCTPChunkParamStateCookie(cookie=b"c" * 8),
                                                     supported_extensions(0x10, 0xA0)])),
        sctp(True, 0x2222, SCTPChunkCookieEcho(cookie=b"c" * 8)),
        sctp(False, 0x1111, SCTPChunkCookieAck()),
        # four DATA chunks bundled in one packet, TSNs fffffffe, ffffffff, 0, 1
        sctp(True, 0x2222, *[SCTPChunkData(tsn=(TSN0 + i) & 0xFFFFFFFF, stream_id=1, stream_seq=i, proto_id=0,
                                           data=b"x" * size, unordered=1 if i == 3 else 0,
                                           beginning=1, ending=1)
                             for i, size in enumerate(sizes)]),
        # cum fffffffe; TSN 1 in an R block (3-3), TSN 0 in an NR block (2-2); a duplicate TSN
        sctp(False, 0x1111, SCTPChunkNRSACK(cumul_tsn_ack=TSN0, r_gap_ack_list=["3:3"], nr_gap_ack_list=["2:2"],
                                            dup_tsn_list=[TSN0])),
        sctp(True, 0x2222, SCTPChunkFsackInit(timestamp=1234)),
        sctp(False, 0x1111, SCTPChunkFsackAck(timestamp=1234)),
        sctp(True, 0x2222, SCTPChunkFsackComplete(params=[address_parameter("198.51.100.9")])),
        sctp(False, 0x1111, SCTPChunkNRSACK(cumul_tsn_ack=1)),
    ]


def tcp_packets():
    """A TCP connection 40000 -> 80 with SACK and NR-SACK negotiated and sequence numbers wrapping."""
    perm = [("SAckOK", b""), tcp_option(TCPOptNRSackPermitted(flags=0))]
    nr = tcp_option(TCPOptNRSack(blocks=[NRSackBlock(left=(ISN + 301) & 0xFFFFFFFF, right=(ISN + 401) & 0xFFFFFFFF)]))
    sack = ("SAck", ((ISN + 201) & 0xFFFFFFFF, (ISN + 301) & 0xFFFFFFFF))
    def out(payload=b"", **kw):
        return True, TCP(sport=40000, dport=80, **kw) / payload

    def back(**kw):
        return False, TCP(sport=80, dport=40000, **kw)

    return [
        out(flags="S", seq=ISN, options=perm),
        back(flags="SA", seq=7, ack=ISN + 1, options=perm),
        out(flags="A", seq=ISN + 1, ack=8),
        out(flags="PA", seq=ISN + 1, ack=8, payload=b"a" * 100),
        out(flags="PA", seq=ISN + 101, ack=8, payload=b"b" * 100),       # lost
        out(flags="PA", seq=(ISN + 201) & 0xFFFFFFFF, ack=8, payload=b"c" * 100),
        out(flags="PA", seq=(ISN + 301) & 0xFFFFFFFF, ack=8, payload=b"d" * 100),
        back(flags="A", seq=8, ack=ISN + 101, options=[sack, nr]),
        out(flags="PA", seq=ISN + 101, ack=8, payload=b"b" * 100),       # retransmission
        back(flags="A", seq=8, ack=(ISN + 401) & 0xFFFFFFFF),
    ]


def mptcp_packets():
    """One MPTCP subflow: a DSS mapping and a DATA ACK with one NR block (wire-formats.md 4 example)."""
    dss_map = tcp_option(MPTCPDSS(A=1, M=1, data_ack32=1, dsn32=14001, ssn=1, data_len=100))
    dss_ack = tcp_option(MPTCPDSS(A=1, N=1, data_ack32=14001, nr_blocks=[MPTCPNRBlock(start=5600, end=7000)]))
    return [
        (True, TCP(sport=41000, dport=443, flags="PA", seq=1000, ack=1, options=[dss_map]) / (b"m" * 100)),
        (False, TCP(sport=443, dport=41000, flags="A", seq=1, ack=1100, options=[dss_ack])),
    ]


def ip_packets(v6=False, udp=False):
    a, b = ("2001:db8::1", "2001:db8::2") if v6 else ("192.0.2.1", "198.51.100.1")
    net = (lambda s, d: IPv6(src=s, dst=d)) if v6 else (lambda s, d: IP(src=s, dst=d))
    packets = []
    for forward, transport in sctp_packets(a, b, udp) + tcp_packets() + mptcp_packets():
        packets.append(bytes(net(a, b) / transport if forward else net(b, a) / transport))
    return packets


def _ethertype(raw_ip):
    return 0x86DD if raw_ip[0] >> 4 == 6 else 0x0800


LINKS = {
    # name: (linktype, frame builder)
    "ethernet": (1, lambda ip: bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=_ethertype(ip))) + ip),
    "vlan": (1, lambda ip: bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / Dot1Q(vlan=5, type=_ethertype(ip))) + ip),
    "qinq": (1, lambda ip: bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / Dot1AD(vlan=7) / Dot1Q(vlan=5, type=_ethertype(ip))) + ip),
    "sll": (113, lambda ip: struct.pack(">HHH8sH", 0, 1, 6, b"\x02" * 6 + b"\0\0", _ethertype(ip)) + ip),
    "sll2": (276, lambda ip: struct.pack(">HHIHBB8s", _ethertype(ip), 0, 2, 1, 0, 6, b"\x02" * 6 + b"\0\0") + ip),
    "raw": (101, lambda ip: ip),
    "null": (0, lambda ip: struct.pack("<I", 2 if ip[0] >> 4 == 4 else 24) + ip),
    "loop": (108, lambda ip: struct.pack(">I", 2 if ip[0] >> 4 == 4 else 24) + ip),
}


def write_pcap(path, frames, linktype, nano=False, snaplen=None):
    with PcapWriter(path, linktype, nano=nano) as writer:
        for i, frame in enumerate(frames):
            ns = 1_000_000 * i + 123  # 1 ms apart, plus nanoseconds only a nano pcap keeps
            kept = frame if snaplen is None else frame[:snaplen]
            writer.write(EPOCH, ns if nano else ns // 1000, kept, orig_len=len(frame))
    return path


def nr04_capture(folder: Path) -> Path:
    """Figure 4 with TSN 15 sent again after N:10;2-6 NR-acked it (rule NR-04)."""
    timeline = timelines_sctp.sctp_nrsack_fig4()
    steps = list(timeline.steps)
    at = next(i for i, s in enumerate(steps) if s.label == "N:10;2-6")
    steps.insert(at + 1, Step(steps[at].t_ms + 0.1, timelines_sctp.SENDER, timelines_sctp.RECEIVER, "DATA 15 rtx"))
    timeline.steps = steps
    return write_timeline(timeline, folder / "nr04-rtx-of-freed-data.pcap")
