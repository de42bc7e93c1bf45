"""TCP and MPTCP labels in the papers' notation -> Scapy TCP layers with options.

TCP (the TCP paper counts TCP-PDUs of `payload` bytes, numbered from 1):
  SYN [nrsack=<flags>]            SYN-ACK [nrsack=<flags>]          ACK
      MSS and SACK-Permitted always; nrsack= adds NR-SACK-Permitted with those flags (0x01 never
      renege). Labels of a handshake segment are read from the side that sends it.
  DATA <k> [rtx]                  TCP-PDU k: sequence number ISN + 1 + (k-1) * payload
  ACK <k> [SACK <a>-<b>,...] [NR <a>-<b>,...]
      cum ack of PDU k (ack number = end of PDU k); SACK blocks in the SACK option (kind 5), NR
      blocks in the NR-SACK option (kind 253, ExID 0x4E52); a-b covers PDUs a..b (wire edges: start
      of a, end of b: left inclusive, right exclusive).

MPTCP (the MPTCP paper counts bytes, relative to the subflow's ISN and to the IDSN):
  SYN MPC [nrsack=0x02]  SYN-ACK MPC [nrsack=0x02]  ACK MPC      MP_CAPABLE v1 (no key / the
      sender's key / both keys); nrsack= adds NR-SACK-Permitted (flag 0x02 = MPTCP data level)
  SYN JOIN   SYN-ACK JOIN   ACK JOIN                            MP_JOIN with real tokens and HMACs
  S:<seq> DSN:<dsn> [rtx]         a data segment: DSS with the mapping (8-octet DSN, subflow-relative
                                  SSN, length `payload`) and a DATA ACK for the reverse direction
  A:<ack> DA:<data ack> [SACK:<l>-<r>,...] [NR:<start>-<end>,...]
      subflow ack with a DSS DATA ACK (8 octets); SACK edges are relative subflow sequence numbers
      (right exclusive); NR blocks are the wire's offsets from the DATA ACK (flag N)
Wire numbers: sequence = ISN + relative, DSN = IDSN + relative (IDSN and token from SHA-256 of the
key, RFC 8684 section 3.1), so a dissector's relative numbers are the figure's.

Overrides for deliberately broken vectors: `nrlen=<bytes>` sets the NR-SACK option's length byte;
`noack` on an MPTCP ack drops the DATA ACK (flag A) but keeps the NR blocks (flag N);
`nrcount=<k>` sets the DSS NR block count.

Timeline options: `isn` {(src, dst): ISN of src on that connection}, `payload` (bytes per
segment), `mss`, `window` {src: bytes}, `keys` {endpoint: MPTCP key of that host},
`nonces` {endpoint: MP_JOIN nonce}, `address_ids` {endpoint: MP_JOIN address id}.
"""

import hashlib
import hmac
import struct

from scapy.layers.inet import TCP
from scapy.packet import Raw

from nrsack import constants as C
from nrsack.generator.layers import (
    MPTCPCapable,
    MPTCPDSS,
    MPTCPJoinAck,
    MPTCPJoinSyn,
    MPTCPJoinSynAck,
    MPTCPNRBlock,
    NRSackBlock,
    TCPOptNRSack,
    TCPOptNRSackPermitted,
    tcp_option,
)
from .timeline import split_endpoint

NOP = ("NOP", None)


# ---------------------------------------------------------------------------------------------
# MPTCP keys (RFC 8684 3.1: token = most significant 32 bits, IDSN = least significant 64 bits of
# SHA-256 over the 64-bit key; HMAC-SHA256 over the concatenated keys for MP_JOIN, section 3.2)
# ---------------------------------------------------------------------------------------------

def _key_bytes(key):
    return struct.pack(">Q", key)


def mptcp_token(key):
    return int.from_bytes(hashlib.sha256(_key_bytes(key)).digest()[:4], "big")


def mptcp_idsn(key):
    return int.from_bytes(hashlib.sha256(_key_bytes(key)).digest()[-8:], "big")


def _join_hmac(own_key, peer_key, own_nonce, peer_nonce):
    return hmac.new(_key_bytes(own_key) + _key_bytes(peer_key),
                    struct.pack(">II", own_nonce, peer_nonce), hashlib.sha256).digest()


# ---------------------------------------------------------------------------------------------
# Label parsing
# ---------------------------------------------------------------------------------------------

def _settings(words):
    return dict(w.split("=", 1) for w in words if "=" in w)


def _ranges(text):
    """'3-4,6-6' -> [(3, 4), (6, 6)]"""
    return [tuple(int(x) for x in part.split("-")) for part in text.split(",") if part]


def _tagged(words, tag):
    """The value after a tag word: ['ACK', '1', 'SACK', '3-4'] with 'SACK' -> '3-4'."""
    return words[words.index(tag) + 1] if tag in words else ""


def _prefixed(words, prefix):
    """The value of a 'PREFIX:value' word: ['A:7001', 'SACK:8401-9801'] with 'SACK' -> '8401-9801'."""
    for word in words:
        if word.startswith(prefix + ":"):
            return word[len(prefix) + 1:]
    return None


class _Connection:
    """Numbers of one step's connection: ISNs, payload size, MPTCP keys of both sides."""

    def __init__(self, timeline, step):
        self.opts = timeline.options
        self.src, self.dst = step.src, step.dst
        self.isn = self.opts["isn"][(step.src, step.dst)]
        self.peer_isn = self.opts["isn"].get((step.dst, step.src), 0)
        self.payload = self.opts.get("payload", 1000)
        keys = self.opts.get("keys", {})
        self.key, self.peer_key = keys.get(step.src), keys.get(step.dst)

    def pdu_start(self, isn, k):
        return (isn + 1 + (k - 1) * self.payload) % 2**32


# ---------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------

def _handshake_options(conn, words):
    options = [("MSS", conn.opts.get("mss", conn.payload)), NOP, NOP, ("SAckOK", b"")]
    settings = _settings(words)
    if "nrsack" in settings:
        options.append(tcp_option(TCPOptNRSackPermitted(flags=int(settings["nrsack"], 16))))
    return options


def _mp_capable(conn, kind):
    if kind == "SYN":
        return MPTCPCapable()
    if kind == "SYN-ACK":
        return MPTCPCapable(sender_key=conn.key)
    return MPTCPCapable(sender_key=conn.key, receiver_key=conn.peer_key)


def _mp_join(conn, kind):
    nonces, ids = conn.opts["nonces"], conn.opts.get("address_ids", {})
    own_nonce, peer_nonce = nonces[conn.src], nonces.get(conn.dst, 0)
    if kind == "SYN":
        return MPTCPJoinSyn(address_id=ids.get(conn.src, 0), receiver_token=mptcp_token(conn.peer_key),
                            sender_nonce=own_nonce)
    digest = _join_hmac(conn.key, conn.peer_key, own_nonce, peer_nonce)
    if kind == "SYN-ACK":
        return MPTCPJoinSynAck(address_id=ids.get(conn.src, 0),
                               sender_hmac=int.from_bytes(digest[:8], "big"), sender_nonce=own_nonce)
    return MPTCPJoinAck(sender_hmac=list(struct.unpack(">5I", digest[:20])))


def _sack_option(edges):
    return [NOP, NOP, ("SAck", tuple(edge % 2**32 for block in edges for edge in block))]


# ---------------------------------------------------------------------------------------------
# Segments
# ---------------------------------------------------------------------------------------------

def _segment(conn, flags, seq, ack, options, payload=b"", raw_option=b""):
    _, sport = split_endpoint(conn.src)
    _, dport = split_endpoint(conn.dst)
    header = dict(sport=sport, dport=dport, seq=seq % 2**32, ack=ack % 2**32, flags=flags,
                  window=conn.opts.get("window", {}).get(conn.src, 65535))
    if raw_option:
        # Scapy rewrites option length bytes; a deliberately wrong one rides as raw header bytes.
        encoded = bytes(TCP(options=options))[20:] + raw_option
        encoded += b"\x00" * (-len(encoded) % 4)
        return TCP(dataofs=5 + len(encoded) // 4, **header) / Raw(encoded + payload)
    segment = TCP(options=options, **header)
    return segment / payload if payload else segment


def _handshake(conn, words):
    kind = words[0]
    options = _handshake_options(conn, words) if kind != "ACK" else []
    if "MPC" in words:
        options.append(tcp_option(_mp_capable(conn, kind)))
    if "JOIN" in words:
        options.append(tcp_option(_mp_join(conn, kind)))
    if kind == "SYN":
        return _segment(conn, "S", conn.isn, 0, options)
    if kind == "SYN-ACK":
        return _segment(conn, "SA", conn.isn, conn.peer_isn + 1, options)
    return _segment(conn, "A", conn.isn + 1, conn.peer_isn + 1, options)


def _pdu_data(conn, words):
    k = int(words[1])
    payload = (b"PDU %d " % k).ljust(conn.payload, b".")[:conn.payload]
    return _segment(conn, "A", conn.pdu_start(conn.isn, k), conn.peer_isn + 1, [], payload)


def _pdu_ack(conn, words):
    settings = _settings(words)
    ack = conn.pdu_start(conn.peer_isn, int(words[1]) + 1)

    def edges(text):
        return [(conn.pdu_start(conn.peer_isn, a), conn.pdu_start(conn.peer_isn, b + 1)) for a, b in _ranges(text)]

    options, raw_option = [], b""
    if "SACK" in words:
        options += _sack_option(edges(_tagged(words, "SACK")))
    if "NR" in words:
        nr = TCPOptNRSack(blocks=[NRSackBlock(left=l, right=r) for l, r in edges(_tagged(words, "NR"))])
        if "nrlen" in settings:
            nr.length = int(settings["nrlen"])
            raw_option = bytes(nr)
        else:
            options.append(tcp_option(nr))
    return _segment(conn, "A", conn.isn + 1, ack, options, raw_option=raw_option)


def _mptcp_data(conn, words):
    seq, dsn = int(_prefixed(words, "S")), int(_prefixed(words, "DSN"))
    dss = MPTCPDSS(A=1, a=1, M=1, m=1, data_ack=(mptcp_idsn(conn.peer_key) + 1) % 2**64,
                   dsn=(mptcp_idsn(conn.key) + dsn) % 2**64, ssn=seq, data_len=conn.payload)
    payload = (b"DSN %d " % dsn).ljust(conn.payload, b".")[:conn.payload]
    return _segment(conn, "A", conn.isn + seq, conn.peer_isn + 1, [tcp_option(dss)], payload)


def _mptcp_ack(conn, words):
    settings = _settings(words)
    ack, data_ack = int(_prefixed(words, "A")), int(_prefixed(words, "DA"))
    options = []
    sack = _prefixed(words, "SACK")
    if sack:
        options += _sack_option([(conn.peer_isn + l, conn.peer_isn + r) for l, r in _ranges(sack)])
    dss = MPTCPDSS(A=1, a=1, data_ack=(mptcp_idsn(conn.peer_key) + data_ack) % 2**64)
    nr = _prefixed(words, "NR")
    if nr is not None:
        dss.N = 1
        dss.nr_blocks = [MPTCPNRBlock(start=s, end=e) for s, e in _ranges(nr)]
        if "nrcount" in settings:
            dss.nr_count = int(settings["nrcount"])
    if "noack" in words:
        raw = bytearray(bytes(dss))
        raw[3] &= ~(C.DSS_FLAG_A | C.DSS_FLAG_a) & 0xFF
        del raw[4:12]  # the 8-octet DATA ACK
        raw[1] = len(raw)
        options.append((raw[0], bytes(raw[2:])))
    else:
        options.append(tcp_option(dss))
    return _segment(conn, "A", conn.isn + 1, conn.peer_isn + ack, options)


def build(timeline, step):
    """The TCP header, options and payload of one step."""
    conn = _Connection(timeline, step)
    words = step.label.split()
    head = words[0]
    if head in ("SYN", "SYN-ACK") or (head == "ACK" and (len(words) == 1 or words[1] in ("MPC", "JOIN"))):
        return _handshake(conn, words)
    if head == "DATA":
        return _pdu_data(conn, words)
    if head == "ACK":
        return _pdu_ack(conn, words)
    if head.startswith("S:"):
        return _mptcp_data(conn, words)
    if head.startswith("A:"):
        return _mptcp_ack(conn, words)
    raise ValueError("unknown TCP label %r" % step.label)
