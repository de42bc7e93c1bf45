"""Hand-built captures (raw bytes per docs/wire-formats.md) that exercise every rule one pass can
decide, FSACK, SCTP over UDP, IPv6, TSN / sequence wrap, never-renege, MPTCP v0 (SHA-1 tokens) and v1
(SHA-256) with a joined subflow and 64-bit DSNs: the Lua plugin's parity and robustness material
(written once a module by the vector_pcaps fixture of conftest.py)."""

from __future__ import annotations

import struct

from support import pcaps as P

from nrsack.generator import layers as L


A, B, A2, B2 = "10.0.0.1", "10.0.0.2", "10.0.1.1", "10.0.1.2"
TAG_A, TAG_B = 0x1111, 0x2222


def ipv4_param(address: str) -> bytes:
    return struct.pack("!HH4s", 5, 8, bytes(int(x) for x in address.split(".")))


def sctp_rules_capture():
    """A negotiated NR-SACK + FSACK association that breaks NR-02..NR-09 and FS-01/03/04 once each."""
    t = iter(i * 0.01 for i in range(1000))
    a_to_b = lambda chunks, src=A, dst=B: P.sctp_packet(next(t), src, dst, TAG_B, chunks)
    b_to_a = lambda chunks, src=B, dst=A: P.sctp_packet(next(t), src, dst, TAG_A, chunks, sport=5001, dport=5000)
    pk = [
        P.sctp_packet(next(t), A, B, 0, [P.init_chunk(TAG_A, 100, ext=[0x10, 0xA0], addrs=[A2])]),
        b_to_a([P.init_chunk(TAG_B, 500, ext=[0x10, 0xA0], addrs=[B2], ack=True)]),
    ]
    pk += [a_to_b([P.data_chunk(tsn, 1000)]) for tsn in range(100, 108)]
    pk += [
        b_to_a([P.nr_sack_chunk(99, nr_gaps=[(2, 3)])]),                       # NR 101-102
        b_to_a([P.nr_sack_chunk(99, r_gaps=[(2, 4)], nr_gaps=[(4, 5)])]),      # NR-02, NR-03 (101 dropped)
        a_to_b([P.data_chunk(102, 1000)]),                                     # NR-04
        b_to_a([P.nr_sack_chunk(99, nr_gaps=[(1, 2), (5, 3)])]),               # NR-05 twice
        b_to_a([P.nr_sack_chunk(99, nr_gaps=[(2, 3), (4, 5)])]),               # NR-08
        b_to_a([P.nr_sack_chunk(100, nr_gaps=[(2, 4)])]),
        b_to_a([P.nr_sack_chunk(99, nr_gaps=[(3, 5)])]),                       # NR-07 (stale)
        b_to_a([P.nr_sack_chunk(104, nr_gaps=[(2, 30)])]),                     # NR-09
        b_to_a([P.sack_chunk(104)]),                                           # NR-06
        b_to_a([P.nr_sack_chunk(103, nr_gaps=[(2, 3)], n_nr=5)]),              # NR-05: counts vs length
        a_to_b([P.fsack_chunk(0xA0, timestamp=1234)]),
        b_to_a([P.fsack_chunk(0xA1, timestamp=1234)], src=B2),
        b_to_a([P.fsack_chunk(0xA1, timestamp=1234)]),
        b_to_a([P.fsack_chunk(0xA1, timestamp=999)]),                          # FS-01
        a_to_b([P.fsack_chunk(0xA2, address=B)]),                              # FS-03 (B2 answered first)
        b_to_a([P.nr_sack_chunk(107)], src=B2),                                # FS-04
        b_to_a([P.nr_sack_chunk(107)]),
        # DATA bundled with an NR-SACK: both directions in one frame
        b_to_a([P.data_chunk(500, 300), P.nr_sack_chunk(107)]),
        a_to_b([P.nr_sack_chunk(500), P.data_chunk(108, 200)]),
        a_to_b([P.chunk(0x00, b"\0" * 8)]),                                    # GEN-01: DATA too short
        a_to_b([struct.pack("!BBH", 0x10, 0, 200) + b"\0" * 16]),              # GEN-01: length past the end
    ]
    return pk


def sctp_midstream_capture():
    """No handshake: NR-SACK and FSACK raise the note variants (NR-01, FS-06, NR-09); TSNs wrap."""
    first = 0xFFFFFFFC
    pk = [P.sctp_packet(i * 0.01, A, B, TAG_B, [P.data_chunk((first + i) & 0xFFFFFFFF, 500)]) for i in range(8)]
    pk += [
        P.sctp_packet(0.2, B, A, TAG_A, [P.nr_sack_chunk(first + 1, nr_gaps=[(2, 3)])], sport=5001, dport=5000),
        P.sctp_packet(0.21, B, A, TAG_A, [P.nr_sack_chunk(first + 5, nr_gaps=[(2, 2)])], sport=5001, dport=5000),
        P.sctp_packet(0.22, A, B, TAG_B, [P.fsack_chunk(0xA0, timestamp=5)]),
        P.sctp_packet(0.23, B, A, TAG_A, [P.nr_sack_chunk(first + 9, nr_gaps=[(3, 9)])], sport=5001, dport=5000),
    ]
    return pk


def sctp_udp_ipv6_capture():
    """SCTP over UDP 9899, and an IPv6 association whose FSACK-COMPLETE names an IPv6 address."""
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.layers.sctp import SCTP
    from scapy.packet import Raw

    pk = [
        P.sctp_packet(0.0, A, B, 0, [P.init_chunk(TAG_A, 1, ext=[0x10])], udp_port=9899),
        P.sctp_packet(0.1, B, A, TAG_A, [P.init_chunk(TAG_B, 1, ext=[0x10], ack=True)], sport=5001, dport=5000,
                      udp_port=9899),
        P.sctp_packet(0.2, A, B, TAG_B, [P.data_chunk(1, 100), P.data_chunk(2, 200)], udp_port=9899),
        P.sctp_packet(0.3, B, A, TAG_A, [P.nr_sack_chunk(0, nr_gaps=[(2, 2)])], sport=5001, dport=5000,
                      udp_port=9899),
    ]
    v6 = bytes.fromhex("20010db8000000000000000000000002")

    def six(t, src, dst, tag, chunks, sport=6000, dport=6001):
        p = Ether() / IPv6(src=src, dst=dst) / SCTP(sport=sport, dport=dport, tag=tag) / Raw(b"".join(chunks))
        p.time = t
        return p

    pk += [
        six(0.4, "2001:db8::1", "2001:db8::2", 0, [P.init_chunk(0x77, 10, ext=[0x10, 0xA0])]),
        six(0.5, "2001:db8::2", "2001:db8::1", 0x77, [P.init_chunk(0x88, 10, ext=[0x10, 0xA0], ack=True)], 6001, 6000),
        six(0.6, "2001:db8::1", "2001:db8::2", 0x88, [P.fsack_chunk(0xA0, timestamp=600)]),
        six(0.7, "2001:db8::2", "2001:db8::1", 0x77, [P.fsack_chunk(0xA1, timestamp=600)], 6001, 6000),
        six(0.8, "2001:db8::1", "2001:db8::2", 0x88, [P.chunk(0xA2, struct.pack("!HH16s", 6, 20, v6))]),
        six(0.9, "2001:db8::1", "2001:db8::2", 0x88, [P.chunk(0xA2, struct.pack("!HH", 7, 4))]),  # GEN-01
    ]
    return pk


def overrunning_nr_option(t, src, dst, sport, dport, seq, ack):
    """An ACK whose NR-SACK option (our ExID) claims 32 bytes where the header has 8 left."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    option = struct.pack("!BBH", 253, 32, P.TCP_EXID) + b"\0" * 4
    pkt = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF,
                                                flags="A", window=65535, dataofs=7) / Raw(option)
    pkt.time = t
    return pkt


def tcp_rules_capture():
    """A negotiated TCP NR-SACK connection near the sequence wrap that breaks TN-02..TN-05."""
    isn = 0xFFFFF000
    s = isn + 1
    opt = [(4, b""), P.nr_permitted_option()]
    pk = [
        P.tcp_packet(0.0, A, B, 40000, 80, isn, 0, "S", options=opt),
        P.tcp_packet(0.1, B, A, 80, 40000, 7000, isn + 1, "SA", options=opt),
        P.tcp_packet(0.2, A, B, 40000, 80, s, 7001, "A"),
    ]
    pk += [P.tcp_packet(0.3 + i * 0.001, A, B, 40000, 80, s + i * 1000, 7001, "PA", payload=1000) for i in range(8)]
    ack = lambda t, cum, sack=(), nr=(), kind=253: P.tcp_packet(
        t, B, A, 80, 40000, 7001, cum, "A",
        options=([(5, b"".join(struct.pack("!II", l & 0xFFFFFFFF, r & 0xFFFFFFFF) for l, r in sack))] if sack else [])
        + ([P.nr_blocks_option(nr, kind=kind)] if nr else []))
    pk += [
        ack(0.40, s, nr=[(s + 1000, s + 3000)]),
        ack(0.41, s, sack=[(s + 1000, s + 2000)], nr=[(s + 2000, s + 3000)]),  # TN-03: NR-acked, now renegable
        ack(0.415, s, sack=[(s + 3000, s + 4000)], nr=[(s + 2000, s + 3000), (s + 3500, s + 4500)]),  # TN-02
        P.tcp_packet(0.42, A, B, 40000, 80, s + 2000, 7001, "PA", payload=1000),                     # TN-04
        ack(0.43, s, nr=[(s + 3000, s + 2000)], kind=254),                                            # TN-05
        ack(0.44, s + 1000, nr=[(s + 500, s + 2000)]),                                               # TN-05
        P.tcp_packet(0.45, B, A, 80, 40000, 7001, s + 1000, "A",
                     options=[(253, struct.pack("!H", P.TCP_EXID) + b"\0" * 6)]),                    # TN-05 length
        overrunning_nr_option(0.455, B, A, 80, 40000, 7001, s + 1000),                              # TN-05 overrun
        ack(0.46, s + 8000),
        # another experiment on kind 253 stays the built-in dissector's
        P.tcp_packet(0.47, B, A, 80, 40000, 7001, s + 8000, "A", options=[(253, b"\xf9\x89\x01\x02")]),
    ]
    return pk


def tcp_never_renege_capture():
    """The receiver promises never to renege (flag 0x01): its SACK blocks count as NR-acked."""
    opt = lambda flags: [(4, b""), P.nr_permitted_option(flags)]
    pk = [
        P.tcp_packet(0.0, A, B, 40001, 80, 1000, 0, "S", options=opt(0)),
        P.tcp_packet(0.1, B, A, 80, 40001, 5000, 1001, "SA", options=opt(1)),
    ]
    pk += [P.tcp_packet(0.2 + i * 0.001, A, B, 40001, 80, 1001 + i * 500, 5001, "PA", payload=500) for i in range(6)]
    sack = lambda t, cum, blocks: P.tcp_packet(t, B, A, 80, 40001, 5001, cum, "A",
                                                options=[(5, b"".join(struct.pack("!II", l, r) for l, r in blocks))])
    pk += [sack(0.3, 1001, [(1501, 2501)]), sack(0.31, 1001, [(2001, 2501)]), sack(0.32, 4001, [])]
    # a handshake where only one side permits: NR blocks raise TN-01 (error); no handshake: the note
    pk += [
        P.tcp_packet(0.4, A, B, 40002, 80, 1, 0, "S", options=opt(0)),
        P.tcp_packet(0.41, B, A, 80, 40002, 1, 2, "SA", options=[(4, b"")]),
        P.tcp_packet(0.42, A, B, 40002, 80, 2, 2, "PA", payload=100),
        P.tcp_packet(0.43, B, A, 80, 40002, 2, 2, "A", options=[P.nr_blocks_option([(52, 102)])]),
        P.tcp_packet(0.5, B, A, 81, 40003, 9, 900, "A", options=[P.nr_blocks_option([(950, 999)])]),
    ]
    return pk


def mptcp_capture(version: int, wide: bool):
    """An MPTCP connection (RFC 8684 version 0 or 1) with NR-SACK capability, a joined subflow whose
    MP_JOIN token comes from the key, DSS NR blocks (8-octet offsets and DSNs when `wide`), and
    MN-02 / MN-03 / MN-04 / MN-05 findings; a second connection without the capability (MN-01)."""
    import hashlib

    key_a, key_b = 0x0123456789ABCDEF, 0x0FEDCBA987654321
    digest = hashlib.sha1 if version == 0 else hashlib.sha256
    token_b = int.from_bytes(digest(key_b.to_bytes(8, "big")).digest()[:4], "big")
    idsn = (0x7FFFFFFF_FFF00000 if wide else 0xFFFFF000) + 1  # Scapy packs 64-bit fields signed
    nrperm = L.tcp_option(L.TCPOptNRSackPermitted(flags=0x02))
    cap = lambda **kw: L.tcp_option(L.MPTCPCapable(version=version, flags=0x01, **kw))

    def dss(ack=None, dsn=None, ssn=0, length=0, blocks=(), N=None):
        fields = {}
        if ack is not None:
            fields.update(A=1, a=int(wide), **({"data_ack": ack} if wide else {"data_ack32": ack & 0xFFFFFFFF}))
        if dsn is not None:
            fields.update(M=1, m=int(wide), ssn=ssn, data_len=length,
                          **({"dsn": dsn} if wide else {"dsn32": dsn & 0xFFFFFFFF}))
        if blocks or N:
            block = L.MPTCPNRBlock64 if wide else L.MPTCPNRBlock
            # a TCP header holds 40 option bytes: one 16-octet block at most next to a wide DATA ACK
            fields.update(N=1, n=int(wide), nr_blocks=[block(start=s, end=e) for s, e in (blocks[:1] if wide else blocks)])
        return L.tcp_option(L.MPTCPDSS(**fields))

    t = iter(i * 0.001 for i in range(1000))
    tcp = lambda src, dst, sp, dp, seq, ack, flags, opts, payload=0: P.tcp_packet(
        next(t), src, dst, sp, dp, seq, ack, flags, options=opts, payload=payload)
    pk = [
        tcp(A, B, 50000, 80, 100, 0, "S", [cap(), nrperm]),
        tcp(B, A, 80, 50000, 900, 101, "SA", [cap(sender_key=key_b), nrperm]),
        tcp(A, B, 50000, 80, 101, 901, "A", [cap(sender_key=key_a, receiver_key=key_b)]),
        tcp(A2, B, 50001, 80, 300, 0, "S", [L.tcp_option(L.MPTCPJoinSyn(receiver_token=token_b, sender_nonce=7))]),
        tcp(B, A2, 80, 50001, 700, 301, "SA", [L.tcp_option(L.MPTCPJoinSynAck(sender_nonce=8))]),
        tcp(A2, B, 50001, 80, 301, 701, "A", [L.tcp_option(L.MPTCPJoinAck())]),
    ]
    # six 1000-byte data-level segments, alternating subflows
    for i in range(6):
        if i % 2 == 0:
            pk.append(tcp(A, B, 50000, 80, 101 + (i // 2) * 1000, 901, "PA",
                          [dss(ack=1, dsn=idsn + i * 1000, ssn=1 + (i // 2) * 1000, length=1000)], 1000))
        else:
            pk.append(tcp(A2, B, 50001, 80, 301 + (i // 2) * 1000, 701, "PA",
                          [dss(ack=1, dsn=idsn + i * 1000, ssn=1 + (i // 2) * 1000, length=1000)], 1000))
    pk += [
        tcp(B, A, 80, 50000, 901, 1101, "A", [dss(ack=idsn + 1000, blocks=[(1000, 3000)])]),
        # MN-03 (narrow): DSNs +3000..+3499 lie inside the span of the NR blocks but are left out; the
        # ack also NR-acks DSNs +5000.. first, so it was sent after the one above (decisions.md 46)
        tcp(B, A2, 80, 50001, 701, 1301, "A", [dss(ack=idsn + 1000, blocks=[(1500, 2000), (2500, 3000), (4000, 5000)])]),
        tcp(A2, B, 50001, 80, 1301, 701, "PA",
            [dss(ack=1, dsn=idsn + 3000, ssn=1001, length=1000)], 1000),                                      # MN-04
        tcp(B, A, 80, 50000, 901, 2101, "A", [dss(ack=idsn + 1000, blocks=[(3000, 2000), (1000, 1500)])]),   # MN-05
        tcp(B, A, 80, 50000, 901, 2101, "A", [dss(N=True)]),                                                  # MN-02
        tcp(B, A, 80, 50000, 901, 3101, "A", [dss(ack=idsn + 6000)]),
        # a second connection whose handshake lacks the capability flag: MN-01
        tcp(A, B, 50002, 80, 10, 0, "S", [cap(), L.tcp_option(L.TCPOptNRSackPermitted(flags=0x00))]),
        tcp(B, A, 80, 50002, 20, 11, "SA", [cap(sender_key=key_a), nrperm]),
        tcp(A, B, 50002, 80, 11, 21, "PA", [dss(ack=1, dsn=5, ssn=1, length=100)], 100),
        tcp(B, A, 80, 50002, 21, 111, "A", [dss(ack=5, blocks=[(50, 60)])]),
    ]
    return pk


VECTORS = {
    "sctp-rules": sctp_rules_capture,
    "sctp-midstream-wrap": sctp_midstream_capture,
    "sctp-udp-ipv6": sctp_udp_ipv6_capture,
    "tcp-rules-wrap": tcp_rules_capture,
    "tcp-never-renege": tcp_never_renege_capture,
    "mptcp-v0-narrow": lambda: mptcp_capture(0, False),
    "mptcp-v1-wide": lambda: mptcp_capture(1, True),
}
