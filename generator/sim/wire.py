"""Frames of a simulation trace -> packets -> pcap, fast.

Packets follow docs/wire-formats.md. Each kind of packet is built once with Scapy (the
lead's layers in generator/layers.py for NR-SACK, TCP NR-SACK and MPTCP options) as a template;
per frame only the fields that change are patched in the bytes with struct, and the checksum is
redone: SCTP's CRC32c with the `crc32c` package (SSE4.2), TCP's ones-complement sum from Python
integers (a byte string read as one big integer is congruent, mod 65535, to the sum of its 16-bit
words).
"""

import hashlib
import hmac
import socket
import struct

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.layers.sctp import (
    SCTP,
    SCTPChunkCookieAck,
    SCTPChunkCookieEcho,
    SCTPChunkData,
    SCTPChunkInit,
    SCTPChunkInitAck,
    SCTPChunkParamStateCookie,
)

from nrsack import constants as C
from nrsack.generator import layers as L
from nrsack.generator.pcapfile import PcapWriter

from .model import ACK, RTX

try:
    from crc32c import crc32c as _crc32c
except ImportError:  # pure Python fallback: correct, about 1000 times slower
    from scapy.layers.sctp import crc32c as _crc32c

EPOCH_S = 1_700_000_000  # capture time of simulation time 0 (fixed: same seed, same bytes)
SENDER_MAC, RECEIVER_MAC = "02:00:00:00:00:01", "02:00:00:00:00:02"
ETH_IP = 14 + 20
PAYLOAD_PATTERN = b"nrsack simulated payload. "
WSCALE = 7
SCTP_PORTS = (5001, 5002)
TCP_PORTS = (40000, 5201)


def addresses(path):
    """(sender address, receiver address) of path `path`."""
    return f"10.0.{path}.1", f"10.0.{path}.2"


def payload_bytes(size):
    reps = size // len(PAYLOAD_PATTERN) + 1
    return (PAYLOAD_PATTERN * reps)[:size]


def _ones_sum(data):
    if len(data) & 1:
        data += b"\0"
    return int.from_bytes(data, "big") % 0xFFFF


class _Wire:
    """Shared by the protocols: addresses, Ethernet + IPv4 headers, pcap record building."""

    ip_proto = 0

    def __init__(self, trace):
        self.trace = trace
        cfg = trace.config
        self.cfg = cfg
        self.S = cfg.payload
        self.n = trace.n_units
        self.last_size = cfg.total_bytes - (self.n - 1) * cfg.payload
        self.isn = trace.isn
        # the receiver's numbers are derived from the sender's, so one seed fixes everything
        self.peer_isn = (trace.isn * 2654435761 + 12345) & 0xFFFFFFFF
        self._ip_cache = {}

    def unit_bytes(self, u):
        """Payload bytes before unit u."""
        if u >= self.n:
            return self.cfg.total_bytes
        return u * self.S

    def eth_ip(self, path, from_sender, ip_len):
        """Ethernet + IPv4 header bytes (IP id 0 with DF, so the header checksum only depends on
        the length and the addresses)."""
        key = (path, from_sender, ip_len)
        hdr = self._ip_cache.get(key)
        if hdr is None:
            src, dst = addresses(path)
            smac, dmac = SENDER_MAC, RECEIVER_MAC
            if not from_sender:
                src, dst, smac, dmac = dst, src, dmac, smac
            ip = bytearray(bytes(IP(src=src, dst=dst, proto=self.ip_proto, id=0, flags="DF",
                                    ttl=64, len=ip_len))[:20])
            eth = bytes(Ether(src=smac, dst=dmac, type=0x0800))
            hdr = self._ip_cache[key] = eth + bytes(ip)
        return hdr


class SctpWire(_Wire):
    ip_proto = 132

    def __init__(self, trace):
        super().__init__(trace)
        self.tag_to_receiver = (self.peer_isn ^ 0x5A5A5A5A) | 1
        self.tag_to_sender = (self.isn ^ 0xA5A5A5A5) | 1
        self._data_tpl = {}
        self.nr = self.cfg.ack == "nrsack"

    def data(self, path, u, sidx):
        last = u == self.n - 1
        size = self.last_size if last else self.S
        key = (path, size, last)
        tpl = self._data_tpl.get(key)
        if tpl is None:
            src, dst = addresses(path)
            # the last chunk carries SACK-IMMEDIATELY (RFC 7053), as the model's receiver assumes
            pkt = (Ether(src=SENDER_MAC, dst=RECEIVER_MAC) / IP(src=src, dst=dst, id=0, flags="DF")
                   / SCTP(sport=SCTP_PORTS[0], dport=SCTP_PORTS[1], tag=self.tag_to_receiver)
                   / SCTPChunkData(delay_sack=int(last), unordered=1, beginning=1, ending=1,
                                   tsn=0, stream_id=0, stream_seq=0, proto_id=0,
                                   data=payload_bytes(size)))
            tpl = self._data_tpl[key] = bytearray(bytes(pkt))
        struct.pack_into(">I", tpl, ETH_IP + 16, (self.isn + u) & 0xFFFFFFFF)
        struct.pack_into("<I", tpl, ETH_IP + 8, 0)
        struct.pack_into("<I", tpl, ETH_IP + 8, _crc32c(memoryview(tpl)[ETH_IP:]))
        return tpl

    def ack_chunk(self, ack):
        cum, blocks, rwnd, _, _ = ack
        base = cum - 1  # cum TSN = TSN of unit cum-1
        offsets = []
        for s, e in blocks:
            offsets += (s - base, e - 1 - base)
        n = len(blocks)
        cum_tsn = (self.isn + base) & 0xFFFFFFFF
        if self.nr:
            head = struct.pack(">BBHIIHHHH", C.SCTP_NR_SACK, 0, 20 + 4 * n, cum_tsn, rwnd, 0, n, 0, 0)
        else:
            head = struct.pack(">BBHIIHH", C.SCTP_SACK, 0, 16 + 4 * n, cum_tsn, rwnd, n, 0)
        return head + struct.pack(f">{2 * n}H", *offsets)

    def ack(self, path, ack):
        return self._sctp_packet(path, False, self.ack_chunk(ack))

    def _sctp_packet(self, path, from_sender, chunks, tag=None):
        if tag is None:
            tag = self.tag_to_receiver if from_sender else self.tag_to_sender
        ports = SCTP_PORTS if from_sender else SCTP_PORTS[::-1]
        sctp = bytearray(struct.pack(">HHII", ports[0], ports[1], tag, 0) + chunks)
        struct.pack_into("<I", sctp, 8, _crc32c(sctp))
        return self.eth_ip(path, from_sender, 20 + len(sctp)) + sctp

    def ctrl(self, path, name):
        cfg = self.cfg
        ext = [L.supported_extensions(C.SCTP_NR_SACK)] if self.nr else []
        sender_addrs = [L.address_parameter(addresses(p)[0]) for p in range(len(cfg.paths))]
        receiver_addrs = [L.address_parameter(addresses(p)[1]) for p in range(len(cfg.paths))]
        cookie = SCTPChunkParamStateCookie(cookie=struct.pack(">QQ", self.isn, self.peer_isn))
        if name == "INIT":
            chunk = SCTPChunkInit(init_tag=self.tag_to_sender, a_rwnd=cfg.rcvbuf, n_out_streams=1,
                                  n_in_streams=1, init_tsn=self.isn,
                                  params=(sender_addrs if len(cfg.paths) > 1 else []) + ext)
            return self._sctp_packet(path, True, _unpadded_length(bytes(chunk)), tag=0)  # RFC 9260 8.5.1
        if name == "INIT-ACK":
            chunk = SCTPChunkInitAck(init_tag=self.tag_to_receiver, a_rwnd=cfg.rcvbuf,
                                     n_out_streams=1, n_in_streams=1, init_tsn=self.peer_isn,
                                     params=[cookie] + (receiver_addrs if len(cfg.paths) > 1 else [])
                                     + ext)
            return self._sctp_packet(path, False, _unpadded_length(bytes(chunk)))
        if name == "COOKIE-ECHO":
            return self._sctp_packet(path, True, bytes(SCTPChunkCookieEcho(cookie=bytes(cookie)[4:])))
        if name == "COOKIE-ACK":
            return self._sctp_packet(path, False, bytes(SCTPChunkCookieAck()))
        raise ValueError(f"no SCTP control frame {name!r}")


def _unpadded_length(chunk):
    """INIT / INIT-ACK bytes whose chunk length excludes the last parameter's padding (RFC 9260
    3.2: the chunk length does not count the final padding; Scapy counts it)."""
    pos = end = 20
    while pos + 4 <= len(chunk):
        plen = struct.unpack_from(">H", chunk, pos + 2)[0]
        end = pos + plen
        pos += plen + (-plen % 4)
    return chunk[:2] + struct.pack(">H", end) + chunk[4:]


class TcpWire(_Wire):
    """Plain TCP; MptcpWire adds the MPTCP options."""

    ip_proto = 6

    def __init__(self, trace):
        super().__init__(trace)
        self.nr = self.cfg.ack == "nrsack"
        self._data_tpl = {}
        self._pseudo = {}

    def seq_of(self, path, index_bytes):
        return (self.isn + 1 + index_bytes) & 0xFFFFFFFF

    def peer_seq(self, path):
        return (self.peer_isn + 1) & 0xFFFFFFFF

    def _pseudo_sum(self, path, from_sender, tcp_len):
        key = (path, from_sender, tcp_len)
        s = self._pseudo.get(key)
        if s is None:
            src, dst = addresses(path)
            if not from_sender:
                src, dst = dst, src
            s = self._pseudo[key] = _ones_sum(socket.inet_aton(src) + socket.inet_aton(dst)
                                              + struct.pack(">HH", 6, tcp_len))
        return s

    def data_options(self, path, u, sidx):
        return b""

    def data(self, path, u, sidx):
        size = self.S if u != self.n - 1 else self.last_size
        opts = self.data_options(path, u, sidx)
        key = (path, size, len(opts))
        tpl = self._data_tpl.get(key)
        if tpl is None:
            pl = payload_bytes(size)
            hdr_len = 20 + len(opts)
            tcp = bytearray(struct.pack(">HHIIBBHHH", TCP_PORTS[0], TCP_PORTS[1], 0,
                                        self.peer_seq(path), (hdr_len // 4) << 4, 0x18,
                                        0xFFFF, 0, 0)) + opts + pl
            tpl = self._data_tpl[key] = (tcp, _ones_sum(pl), hdr_len)
        tcp, pl_sum, hdr_len = tpl
        struct.pack_into(">I", tcp, 4, self.seq_of(path, self.data_offset(path, u, sidx)))
        tcp[20:hdr_len] = opts
        tcp[16:18] = b"\0\0"
        total = (self._pseudo_sum(path, True, len(tcp)) + _ones_sum(bytes(tcp[:hdr_len])) + pl_sum)
        struct.pack_into(">H", tcp, 16, 0xFFFF - total % 0xFFFF)
        return self.eth_ip(path, True, 20 + len(tcp)) + tcp

    def data_offset(self, path, u, sidx):
        return u * self.S

    def ack_options(self, path, ack):
        cum, blocks, rwnd, _, _ = ack
        return self.block_option([(self.seq_of(path, self.unit_bytes(s)),
                                   self.seq_of(path, self.unit_bytes(e))) for s, e in blocks])

    def block_option(self, edges):
        if not edges:
            return b""
        flat = [x for edge in edges for x in edge]
        if self.nr:
            return bytes(L.TCPOptNRSack(blocks=[L.NRSackBlock(left=a, right=b) for a, b in edges]))
        return struct.pack(f">BB{len(flat)}I", C.TCP_OPT_SACK, 2 + 8 * len(edges), *flat)

    def ack_number(self, path, ack):
        return self.seq_of(path, self.unit_bytes(ack[0]))

    def ack(self, path, ack):
        opts = self.ack_options(path, ack)
        opts += b"\x01" * (-len(opts) % 4)
        hdr_len = 20 + len(opts)
        window = min(max(ack[2], 0) >> WSCALE, 0xFFFF)
        tcp = bytearray(struct.pack(">HHIIBBHHH", TCP_PORTS[1], TCP_PORTS[0], self.peer_seq(path),
                                    self.ack_number(path, ack), (hdr_len // 4) << 4, 0x10,
                                    window, 0, 0)) + opts
        total = self._pseudo_sum(path, False, len(tcp)) + _ones_sum(bytes(tcp))
        struct.pack_into(">H", tcp, 16, 0xFFFF - total % 0xFFFF)
        return self.eth_ip(path, False, 20 + len(tcp)) + tcp

    def syn_options(self, path, from_sender, name):
        if name == "ACK":
            return []  # MSS, SACK-Permitted, window scale and NR-SACK-Permitted are SYN options
        opts = [("MSS", self.S), ("SAckOK", b""), ("WScale", WSCALE)]
        if self.nr:
            opts.append(L.tcp_option(L.TCPOptNRSackPermitted(flags=0)))
        return opts

    def ctrl(self, path, name):
        from_sender = name in ("SYN", "ACK", "JOIN-SYN", "JOIN-ACK")
        src, dst = addresses(path)
        sport, dport = TCP_PORTS
        smac, dmac = SENDER_MAC, RECEIVER_MAC
        if not from_sender:
            src, dst, sport, dport, smac, dmac = dst, src, dport, sport, dmac, smac
        isn = self.sub_isn(path) if from_sender else self.sub_peer_isn(path)
        peer = self.sub_peer_isn(path) if from_sender else self.sub_isn(path)
        if name.endswith("SYN"):
            seg = TCP(sport=sport, dport=dport, flags="S", seq=isn, window=0xFFFF,
                      options=self.syn_options(path, from_sender, name))
        elif name.endswith("SYN-ACK"):
            seg = TCP(sport=sport, dport=dport, flags="SA", seq=isn, ack=(peer + 1) & 0xFFFFFFFF,
                      window=0xFFFF, options=self.syn_options(path, from_sender, name))
        else:
            seg = TCP(sport=sport, dport=dport, flags="A", seq=(isn + 1) & 0xFFFFFFFF,
                      ack=(peer + 1) & 0xFFFFFFFF, window=0xFFFF,
                      options=self.syn_options(path, from_sender, name))
        pkt = Ether(src=smac, dst=dmac) / IP(src=src, dst=dst, id=0, flags="DF") / seg
        return bytes(pkt)

    def sub_isn(self, path):
        return self.isn

    def sub_peer_isn(self, path):
        return self.peer_isn


class MptcpWire(TcpWire):
    """Subflow p: its own ISNs; data carries a DSS mapping (8-octet DSN, relative subflow
    sequence number, no checksum); acks carry the subflow's SACK blocks and a DSS DATA ACK with
    the data-level NR blocks (flag N) when NR-SACK was negotiated."""

    def __init__(self, trace):
        super().__init__(trace)
        self.key_a = int.from_bytes(hashlib.sha256(b"a%d" % self.isn).digest()[:8], "big")
        self.key_b = int.from_bytes(hashlib.sha256(b"b%d" % self.isn).digest()[:8], "big")
        self.idsn_a = _idsn(self.key_a)
        self.idsn_b = _idsn(self.key_b)
        self.token_b = int.from_bytes(hashlib.sha256(self.key_b.to_bytes(8, "big")).digest()[:4], "big")
        self.last_unit_at = None  # (path, subflow index) of the last data unit, once sent

    def sub_isn(self, path):
        return (self.isn + path * 0x10000001) & 0xFFFFFFFF

    def sub_peer_isn(self, path):
        return (self.peer_isn + path * 0x10000001) & 0xFFFFFFFF

    def seq_of(self, path, index_bytes):
        return (self.sub_isn(path) + 1 + index_bytes) & 0xFFFFFFFF

    def peer_seq(self, path):
        return (self.sub_peer_isn(path) + 1) & 0xFFFFFFFF

    def sub_bytes(self, path, i):
        """Subflow payload bytes before subflow index i (only the very last unit is short)."""
        if self.last_unit_at is not None and self.last_unit_at[0] == path and i > self.last_unit_at[1]:
            return (i - 1) * self.S + self.last_size
        return i * self.S

    def data_offset(self, path, u, sidx):
        if u == self.n - 1:
            self.last_unit_at = (path, sidx)
        return sidx * self.S

    def data_options(self, path, u, sidx):
        size = self.S if u != self.n - 1 else self.last_size
        dss = struct.pack(">BBBBQQIH", C.TCP_OPT_MPTCP, 26, C.MPTCP_DSS << 4, 0x0F,
                          (self.idsn_b + 1) & 0xFFFFFFFFFFFFFFFF,
                          (self.idsn_a + 1 + u * self.S) & 0xFFFFFFFFFFFFFFFF,
                          sidx * self.S + 1, size)
        return dss + b"\x01\x01"

    def ack_number(self, path, ack):
        return self.seq_of(path, self.sub_bytes(path, ack[3]))

    def ack_options(self, path, ack):
        cum, blocks, rwnd, scum, sblocks = ack
        sack = b""
        if sblocks:
            flat = [self.seq_of(path, self.sub_bytes(path, x)) for blk in sblocks for x in blk]
            sack = struct.pack(f">BB{len(flat)}I", C.TCP_OPT_SACK, 2 + 4 * len(flat), *flat)
        cum_bytes = self.unit_bytes(cum)
        data_ack = (self.idsn_a + 1 + cum_bytes) & 0xFFFFFFFFFFFFFFFF
        if blocks:
            nr = b"".join(struct.pack(">II", self.unit_bytes(s) - cum_bytes,
                                      self.unit_bytes(e) - cum_bytes) for s, e in blocks)
            dss = struct.pack(">BBBBQBB", C.TCP_OPT_MPTCP, 14 + len(nr), C.MPTCP_DSS << 4,
                              C.DSS_FLAG_A | C.DSS_FLAG_a | C.DSS_FLAG_N, data_ack,
                              len(blocks), 0) + nr
        else:
            dss = struct.pack(">BBBBQ", C.TCP_OPT_MPTCP, 12, C.MPTCP_DSS << 4,
                              C.DSS_FLAG_A | C.DSS_FLAG_a, data_ack)
        return sack + dss

    def syn_options(self, path, from_sender, name):
        opts = [("MSS", self.S), ("SAckOK", b""), ("WScale", WSCALE)]
        flags = C.NRSACK_FLAG_MPTCP if self.nr else 0
        nr_perm = [L.tcp_option(L.TCPOptNRSackPermitted(flags=flags))] if self.nr else []
        r_a = 0x11111111 + path
        r_b = 0x22222222 + path
        if name == "SYN":
            return opts + [L.tcp_option(L.MPTCPCapable())] + nr_perm
        if name == "SYN-ACK":
            return opts + [L.tcp_option(L.MPTCPCapable(sender_key=self.key_b))] + nr_perm
        if name == "ACK":
            return [L.tcp_option(L.MPTCPCapable(sender_key=self.key_a, receiver_key=self.key_b))]
        if name == "JOIN-SYN":
            return opts + [L.tcp_option(L.MPTCPJoinSyn(address_id=path, receiver_token=self.token_b,
                                                       sender_nonce=r_a))]
        if name == "JOIN-SYN-ACK":
            mac = _hmac(self.key_b, self.key_a, r_b, r_a)
            return opts + [L.tcp_option(L.MPTCPJoinSynAck(address_id=path,
                                                          sender_hmac=int.from_bytes(mac[:8], "big"),
                                                          sender_nonce=r_b))]
        if name == "JOIN-ACK":
            mac = _hmac(self.key_a, self.key_b, r_a, r_b)
            words = list(struct.unpack(">5I", mac[:20]))
            return [L.tcp_option(L.MPTCPJoinAck(sender_hmac=words))]
        raise ValueError(f"no MPTCP control frame {name!r}")


def _idsn(key):
    return int.from_bytes(hashlib.sha256(key.to_bytes(8, "big")).digest()[-8:], "big")


def _hmac(key_1, key_2, nonce_1, nonce_2):
    """RFC 8684 3.2: HMAC-SHA256 keyed with Key-1 || Key-2 over R-1 || R-2."""
    return hmac.new(key_1.to_bytes(8, "big") + key_2.to_bytes(8, "big"),
                    struct.pack(">II", nonce_1, nonce_2), hashlib.sha256).digest()


WIRES = {"sctp": SctpWire, "cmt": SctpWire, "tcp": TcpWire, "mptcp": MptcpWire}


def write_frames(wire, frames, path):
    """Write `frames` (a trace's sender or receiver frames) with the Python pcap writer, each frame
    built by `wire` (one of WIRES, made for the frames' trace); return the number written. Callers
    go through engine.write_pcap, which takes the compiled writer when the run was compiled."""
    data, ack, ctrl = wire.data, wire.ack, wire.ctrl
    with PcapWriter(path) as out:
        write = out.write
        for t, kind, p, a, b in frames:
            if kind <= RTX:
                pkt = data(p, a, b)
            elif kind == ACK:
                pkt = ack(p, a)
            else:
                pkt = ctrl(p, a)
            us = t // 1000
            write(EPOCH_S + us // 1_000_000, us % 1_000_000, pkt)
    return out.count
