"""Small hand-built captures for the plugin tests, from raw chunk and option bytes per
docs/wire-formats.md: the shapes the sample captures do not hold (bad counts, odd lengths, edge values).

Each builder returns Scapy packets with explicit capture times; `write` stores them as a pcap.
"""

from __future__ import annotations

import struct
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.layers.sctp import SCTP
from scapy.config import conf
from scapy.packet import Raw

from nrsack.generator.pcapfile import LINKTYPE_ETHERNET, write_packets

NR_SACK = 0x10
FSACK_INIT, FSACK_ACK, FSACK_COMPLETE = 0xA0, 0xA1, 0xA2
TCP_EXID = 0x4E52


def pad4(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


def chunk(ctype: int, body: bytes, flags: int = 0, length: int | None = None) -> bytes:
    return pad4(struct.pack("!BBH", ctype, flags, 4 + len(body) if length is None else length) + body)


def cookie_ack_chunk() -> bytes:
    return chunk(0x0B, b"")


def data_chunk(tsn: int, size: int = 1000, sid: int = 0, ssn: int = 0) -> bytes:
    return chunk(0x00, struct.pack("!IHHI", tsn & 0xFFFFFFFF, sid, ssn & 0xFFFF, 0) + b"x" * size, flags=0x03)


def _params(ext: list[int] | None, addrs: list[str]) -> bytes:
    """Address parameters, then Supported Extensions; the last parameter is left unpadded (the chunk pads)."""
    out = [struct.pack("!HH4s", 5, 8, bytes(int(x) for x in a.split("."))) for a in addrs]
    if ext is not None:
        out.append(struct.pack("!HH", 0x8008, 4 + len(ext)) + bytes(ext))
    return b"".join(pad4(p) for p in out[:-1]) + (out[-1] if out else b"")


def init_chunk(tag: int, tsn: int, ext: list[int] | None = None, addrs: list[str] = (), ack: bool = False) -> bytes:
    body = struct.pack("!IIHHI", tag, 65536, 10, 10, tsn) + _params(ext, list(addrs))
    return chunk(0x02 if ack else 0x01, body)


def sack_chunk(cum: int, gaps=(), dups=()) -> bytes:
    body = struct.pack("!IIHH", cum & 0xFFFFFFFF, 65536, len(gaps), len(dups))
    body += b"".join(struct.pack("!HH", s, e) for s, e in gaps) + b"".join(struct.pack("!I", d) for d in dups)
    return chunk(0x03, body)


def nr_sack_chunk(cum: int, r_gaps=(), nr_gaps=(), dups=(), n_r: int | None = None, n_nr: int | None = None) -> bytes:
    body = struct.pack("!IIHHHH", cum & 0xFFFFFFFF, 65536, len(r_gaps) if n_r is None else n_r,
                       len(nr_gaps) if n_nr is None else n_nr, len(dups), 0)
    body += b"".join(struct.pack("!HH", s, e) for s, e in list(r_gaps) + list(nr_gaps))
    body += b"".join(struct.pack("!I", d) for d in dups)
    return chunk(NR_SACK, body)


def fsack_chunk(ctype: int, timestamp: int | None = None, address: str | None = None) -> bytes:
    if address is not None:
        return chunk(ctype, struct.pack("!HH4s", 5, 8, bytes(int(x) for x in address.split("."))))
    return chunk(ctype, struct.pack("!I", timestamp & 0xFFFFFFFF))


def sctp_packet(t: float, src: str, dst: str, vtag: int, chunks: list[bytes], sport: int = 5000, dport: int = 5001,
                udp_port: int | None = None):
    sctp = SCTP(sport=sport, dport=dport, tag=vtag) / Raw(b"".join(chunks))
    if udp_port is not None:
        sctp = UDP(sport=udp_port, dport=udp_port) / sctp
    pkt = Ether() / IP(src=src, dst=dst) / sctp
    pkt.time = t
    return pkt


def nr_permitted_option(flags: int = 0, kind: int = 253) -> tuple:
    return (kind, struct.pack("!HB", TCP_EXID, flags))


def nr_blocks_option(blocks, kind: int = 253) -> tuple:
    return (kind, struct.pack("!H", TCP_EXID) + b"".join(struct.pack("!II", l & 0xFFFFFFFF, r & 0xFFFFFFFF) for l, r in blocks))


def tcp_packet(t: float, src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: str, options=(),
               payload: int = 0, v6: bool = False):
    ip = IPv6(src=src, dst=dst) if v6 else IP(src=src, dst=dst)
    pkt = Ether() / ip / TCP(sport=sport, dport=dport, seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, flags=flags,
                             window=65535, options=list(options))
    if payload:
        pkt = pkt / Raw(b"y" * payload)
    pkt.time = t
    return pkt


def write(path, packets) -> str:
    packets = list(packets)
    # the link type of the first packet's outer layer, as Scapy's wrpcap chose it
    linktype = conf.l2types.layer2num.get(type(packets[0]), LINKTYPE_ETHERNET) if packets else LINKTYPE_ETHERNET
    return str(write_packets(path, packets, linktype))


def mptcp_capable_option(version: int = 1, flags: int = 0x01, keys: tuple = ()) -> tuple:
    return (30, struct.pack("!BB", (0x0 << 4) | version, flags) + b"".join(struct.pack("!Q", k) for k in keys))


def mptcp_join_syn_option(token: int, nonce: int = 1, addr_id: int = 1) -> tuple:
    return (30, struct.pack("!BBII", 0x1 << 4, addr_id, token, nonce))


def dss_option(data_ack: int | None = None, dsn: int | None = None, ssn: int = 0, dll: int = 0,
               checksum: int | None = None, nr_blocks=None, wide: bool = False, ack8: bool = True, dsn8: bool = True,
               count: int | None = None) -> tuple:
    """DSS (RFC 8684) with the NR blocks of wire-formats.md section 4 (offsets from the DATA ACK)."""
    flags, body = 0, b""
    if data_ack is not None:
        flags |= 0x01 | (0x02 if ack8 else 0)
        body += struct.pack("!Q" if ack8 else "!I", data_ack)
    if dsn is not None:
        flags |= 0x04 | (0x08 if dsn8 else 0)
        body += struct.pack("!Q" if dsn8 else "!I", dsn) + struct.pack("!IH", ssn, dll)
        if checksum is not None:
            body += struct.pack("!H", checksum)
    if nr_blocks is not None:
        flags |= 0x20 | (0x40 if wide else 0)
        body += struct.pack("!BB", len(nr_blocks) if count is None else count, 0)
        body += b"".join(struct.pack("!QQ" if wide else "!II", s, e) for s, e in nr_blocks)
    return (30, struct.pack("!BB", 0x2 << 4, flags) + body)


# ---- link types without an Ethernet / IP header (wire-formats.md section 5) ----

LINKTYPE_NFLOG, LINKTYPE_SCTP = 239, 248
NFULA_PACKET_HDR, NFULA_PAYLOAD, NFULA_PREFIX = 1, 9, 10


def nflog_frame(ip: bytes, big_endian: bool = False) -> bytes:
    """An IP packet as Linux NFLOG logs it: header (family, version, resource id), then TLVs in the
    logging host's byte order: packet header, prefix, payload (each padded to 4 bytes)."""
    order = ">" if big_endian else "<"

    def tlv(kind, value):
        return pad4(struct.pack(order + "HH", 4 + len(value), kind) + value)

    family = 10 if ip[0] >> 4 == 6 else 2
    ethertype = 0x86DD if family == 10 else 0x0800
    return (struct.pack("!BBH", family, 0, 7) + tlv(NFULA_PACKET_HDR, struct.pack("!HBB", ethertype, 3, 0))
            + tlv(NFULA_PREFIX, b"nrsack\0") + tlv(NFULA_PAYLOAD, ip))



def usrsctp_dump(pcap_path, text_path) -> str:
    """The SCTP packets of an Ethernet + IPv4 pcap written as usrsctp_dumppacket() prints them
    ("O hh:mm:ss.uuuuuu 0000 <hex bytes> # SCTP_PACKET", UTC time of day): text2pcap's input."""
    from scapy.utils import RawPcapReader

    lines = []
    for frame, meta in RawPcapReader(str(pcap_path)):
        seconds, micros = meta.sec, meta.usec
        day = seconds % 86400
        sctp = frame[14 + (frame[14] & 15) * 4:]
        lines.append(f"\nO {day // 3600:02d}:{day // 60 % 60:02d}:{day % 60:02d}.{micros:06d} 0000 "
                     f"{' '.join(f'{b:02x}' for b in sctp)} # SCTP_PACKET\n")
    Path(text_path).write_text("".join(lines))
    return str(text_path)
