"""Scapy layers for what Scapy 2.8 lacks: NR-SACK, FSACK, TCP NR-SACK options, MPTCP with NR blocks.

Everything follows docs/wire-formats.md. The SCTP chunks plug into Scapy's own SCTP
layer (its chunk dispatch looks classes up by name in scapy.layers.sctp, so they are registered
there); TCP options are standalone option layers (kind, length, body) that `tcp_option()` turns
into the (kind, value) tuples Scapy's TCP layer takes and `tcp_option_layers()` turns back.
Lengths and counts are computed when left as None.
"""

import struct

import scapy.layers.sctp as scapy_sctp
from scapy.fields import (
    BitField,
    ByteField,
    ConditionalField,
    FieldLenField,
    FieldListField,
    IntField,
    LongField,
    PacketListField,
    ShortField,
    XByteField,
    XIntField,
    XShortField,
)
from scapy.layers.inet import TCP, UDP
from scapy.layers.sctp import SCTP, GapAckField
from scapy.packet import Packet, bind_layers

from nrsack import constants as C


def _fill_length(p, offset, size, fmt):
    """post_build helper: write len(p) at p[offset:offset+size] when the field was left None."""
    return p[:offset] + struct.pack(fmt, len(p)) + p[offset + size:]


# ---------------------------------------------------------------------------------------------
# SCTP chunks
# ---------------------------------------------------------------------------------------------

class SCTPChunkNRSACK(scapy_sctp._SCTPChunkGuessPayload, Packet):
    """NR-SACK chunk (type 16): R and NR gap ack blocks as "start:end" offsets, duplicate TSNs."""

    name = "SCTP NR-SACK chunk"
    fields_desc = [
        XByteField("type", C.SCTP_NR_SACK),
        XByteField("flags", 0),
        ShortField("len", None),
        XIntField("cumul_tsn_ack", 0),
        IntField("a_rwnd", 65536),
        FieldLenField("n_r_gap", None, count_of="r_gap_ack_list"),
        FieldLenField("n_nr_gap", None, count_of="nr_gap_ack_list"),
        FieldLenField("n_dup_tsn", None, count_of="dup_tsn_list"),
        XShortField("reserved", 0),
        FieldListField("r_gap_ack_list", [], GapAckField("r_gap_ack", None),
                       count_from=lambda pkt: pkt.n_r_gap),
        FieldListField("nr_gap_ack_list", [], GapAckField("nr_gap_ack", None),
                       count_from=lambda pkt: pkt.n_nr_gap),
        FieldListField("dup_tsn_list", [], XIntField("dup_tsn", None),
                       count_from=lambda pkt: pkt.n_dup_tsn),
    ]

    def post_build(self, p, pay):
        if self.len is None:
            p = _fill_length(p, 2, 2, ">H")
        return p + pay


class _SCTPChunkFsackTimestamp(scapy_sctp._SCTPChunkGuessPayload, Packet):
    fields_desc = [
        XByteField("type", None),
        XByteField("flags", 0),
        ShortField("len", 8),
        IntField("timestamp", 0),
    ]


class SCTPChunkFsackInit(_SCTPChunkFsackTimestamp):
    """FSACK-INIT (0xA0): the sender's clock in ms, sent on the primary path."""

    name = "SCTP FSACK-INIT chunk"
    type = C.FSACK_INIT


class SCTPChunkFsackAck(_SCTPChunkFsackTimestamp):
    """FSACK-ACK (0xA1): the FSACK-INIT timestamp echoed on one return path."""

    name = "SCTP FSACK-ACK chunk"
    type = C.FSACK_ACK


class SCTPChunkFsackComplete(scapy_sctp._SCTPChunkGuessPayload, Packet):
    """FSACK-COMPLETE (0xA2): one IPv4/IPv6 address parameter naming the new FSACK path."""

    name = "SCTP FSACK-COMPLETE chunk"
    fields_desc = [
        XByteField("type", C.FSACK_COMPLETE),
        XByteField("flags", 0),
        ShortField("len", None),
        scapy_sctp.ChunkParamField("params", None, length_from=lambda pkt: pkt.len - 4),
    ]

    def post_build(self, p, pay):
        if self.len is None:
            p = _fill_length(p, 2, 2, ">H")
        return p + pay


_SCTP_CHUNKS = {
    C.SCTP_NR_SACK: (SCTPChunkNRSACK, "nr-sack"),
    C.FSACK_INIT: (SCTPChunkFsackInit, "fsack-init"),
    C.FSACK_ACK: (SCTPChunkFsackAck, "fsack-ack"),
    C.FSACK_COMPLETE: (SCTPChunkFsackComplete, "fsack-complete"),
}
for _type, (_cls, _label) in _SCTP_CHUNKS.items():
    setattr(scapy_sctp, _cls.__name__, _cls)
    scapy_sctp.sctpchunktypescls[_type] = _cls.__name__
    scapy_sctp.sctpchunktypes[_type] = _label

# SCTP over UDP (RFC 6951)
bind_layers(UDP, SCTP, dport=C.SCTP_OVER_UDP_PORT)
bind_layers(UDP, SCTP, sport=C.SCTP_OVER_UDP_PORT)


def supported_extensions(*chunk_types):
    """The Supported Extensions parameter (0x8008) listing the given chunk types."""
    return scapy_sctp.SCTPChunkParamSupportedExtensions(supported_extensions=list(chunk_types))


def address_parameter(address):
    """IPv4 (type 5) or IPv6 (type 6) address parameter."""
    if ":" in address:
        return scapy_sctp.SCTPChunkParamIPv6Addr(addr=address)
    return scapy_sctp.SCTPChunkParamIPv4Addr(addr=address)


# ---------------------------------------------------------------------------------------------
# TCP options (RFC 6994 shared experimental option, kind 253 by default)
# ---------------------------------------------------------------------------------------------

class _TCPOption(Packet):
    """A whole TCP option: kind, length (computed), body."""

    def post_build(self, p, pay):
        if self.length is None:
            p = p[:1] + struct.pack("B", len(p)) + p[2:]
        return p + pay

    def extract_padding(self, s):
        return b"", s


def _experimental_head():
    """Kind, length and ExID: the head of both NR-SACK options (RFC 6994)."""
    return [ByteField("kind", C.TCP_OPT_EXP_DEFAULT), ByteField("length", None),
            XShortField("exid", C.TCP_NRSACK_EXID)]


class TCPOptNRSackPermitted(_TCPOption):
    """NR-SACK-Permitted: flags 0x01 never renege, 0x02 MPTCP data-level NR-SACK."""

    name = "TCP NR-SACK-Permitted option"
    fields_desc = _experimental_head() + [XByteField("flags", 0)]


class NRSackBlock(Packet):
    """One TCP NR-SACK block: absolute sequence numbers, left inclusive, right exclusive."""

    name = "NR-SACK block"
    fields_desc = [IntField("left", 0), IntField("right", 0)]

    def extract_padding(self, s):
        return b"", s


class TCPOptNRSack(_TCPOption):
    """NR-SACK block option: 1..4 blocks of absolute edges."""

    name = "TCP NR-SACK option"
    fields_desc = _experimental_head() + [
        PacketListField("blocks", [], NRSackBlock, length_from=lambda pkt: pkt.length - 4),
    ]


# ---------------------------------------------------------------------------------------------
# MPTCP (RFC 8684) options, with the NR blocks of the DSS option
# ---------------------------------------------------------------------------------------------

def _has_key(pkt, key, min_length):
    """On the wire the length says which keys are there; when building, the keys that were set."""
    if pkt.length is None:
        return pkt.fields.get(key) is not None
    return pkt.length >= min_length


class MPTCPCapable(_TCPOption):
    """MP_CAPABLE, version 1: no key on SYN, sender's key on SYN-ACK, both keys on the third ACK."""

    name = "MPTCP MP_CAPABLE option"
    fields_desc = [
        ByteField("kind", C.TCP_OPT_MPTCP),
        ByteField("length", None),
        BitField("subtype", C.MPTCP_MP_CAPABLE, 4),
        BitField("version", 1, 4),
        XByteField("flags", 0x01),  # H: HMAC-SHA256; no checksum (A clear), as Linux does
        ConditionalField(LongField("sender_key", None), lambda pkt: _has_key(pkt, "sender_key", 12)),
        ConditionalField(LongField("receiver_key", None), lambda pkt: _has_key(pkt, "receiver_key", 20)),
    ]


def _mp_join_head(with_address_id):
    """Kind, length and subtype of MP_JOIN; SYN and SYN-ACK add the backup flag and address ID."""
    head = [ByteField("kind", C.TCP_OPT_MPTCP), ByteField("length", None),
            BitField("subtype", C.MPTCP_MP_JOIN, 4)]
    if not with_address_id:
        return head + [BitField("reserved", 0, 12)]
    return head + [BitField("reserved", 0, 3), BitField("backup", 0, 1), ByteField("address_id", 0)]


class MPTCPJoinSyn(_TCPOption):
    """MP_JOIN on the SYN of an extra subflow."""

    name = "MPTCP MP_JOIN (SYN) option"
    fields_desc = _mp_join_head(with_address_id=True) + [
        XIntField("receiver_token", 0),
        XIntField("sender_nonce", 0),
    ]


class MPTCPJoinSynAck(_TCPOption):
    """MP_JOIN on the SYN-ACK of an extra subflow (truncated HMAC)."""

    name = "MPTCP MP_JOIN (SYN-ACK) option"
    fields_desc = _mp_join_head(with_address_id=True) + [
        LongField("sender_hmac", 0),
        XIntField("sender_nonce", 0),
    ]


class MPTCPJoinAck(_TCPOption):
    """MP_JOIN on the third ACK of an extra subflow (160-bit HMAC)."""

    name = "MPTCP MP_JOIN (ACK) option"
    fields_desc = _mp_join_head(with_address_id=False) + [
        FieldListField("sender_hmac", [0] * 5, XIntField("word", 0), count_from=lambda pkt: 5),
    ]


class MPTCPNRBlock(Packet):
    """One data-level NR block: DATA_ACK+start .. DATA_ACK+end-1 are non-renegable."""

    name = "MPTCP NR block"
    fields_desc = [IntField("start", 0), IntField("end", 0)]

    def extract_padding(self, s):
        return b"", s


class MPTCPNRBlock64(MPTCPNRBlock):
    """The same with 8-octet offsets (DSS flag n)."""

    fields_desc = [LongField("start", 0), LongField("end", 0)]


def _dss_fixed_length(pkt):
    """Bytes of a DSS option up to, not including, the checksum and the NR blocks."""
    length = 4
    if pkt.A:
        length += 8 if pkt.a else 4
    if pkt.M:
        length += (8 if pkt.m else 4) + 4 + 2
    return length


def _dss_has_checksum(pkt):
    # NR blocks are 2 + 8K or 2 + 16K octets, so what follows the fixed fields is 2 mod 8 without a
    # checksum and 4 mod 8 with one; without NR blocks the checksum is simply the 2 octets left.
    if not pkt.M:
        return False
    if pkt.length is None:
        return pkt.fields.get("checksum") is not None  # raw value: the attribute would recurse
    rest = pkt.length - _dss_fixed_length(pkt)
    if pkt.N:
        return rest % 8 == 4
    return rest == 2


class MPTCPDSS(_TCPOption):
    """DSS option with the NR-SACK extension: flag N (0x20) adds a count, a reserved byte and NR
    blocks after all other fields; flag n (0x40) makes the block offsets 8 octets."""

    name = "MPTCP DSS option"
    fields_desc = [
        ByteField("kind", C.TCP_OPT_MPTCP),
        ByteField("length", None),
        BitField("subtype", C.MPTCP_DSS, 4),
        BitField("reserved", 0, 5),
        BitField("n", 0, 1),
        BitField("N", 0, 1),
        BitField("F", 0, 1),
        BitField("m", 0, 1),
        BitField("M", 0, 1),
        BitField("a", 0, 1),
        BitField("A", 0, 1),
        ConditionalField(LongField("data_ack", 0), lambda pkt: pkt.A and pkt.a),
        ConditionalField(IntField("data_ack32", 0), lambda pkt: pkt.A and not pkt.a),
        ConditionalField(LongField("dsn", 0), lambda pkt: pkt.M and pkt.m),
        ConditionalField(IntField("dsn32", 0), lambda pkt: pkt.M and not pkt.m),
        ConditionalField(IntField("ssn", 0), lambda pkt: pkt.M),
        ConditionalField(ShortField("data_len", 0), lambda pkt: pkt.M),
        ConditionalField(XShortField("checksum", None), _dss_has_checksum),
        ConditionalField(FieldLenField("nr_count", None, fmt="B", count_of="nr_blocks"),
                         lambda pkt: pkt.N),
        ConditionalField(ByteField("nr_reserved", 0), lambda pkt: pkt.N),
        ConditionalField(PacketListField("nr_blocks", [], MPTCPNRBlock,
                                         count_from=lambda pkt: pkt.nr_count,
                                         next_cls_cb=lambda pkt, lst, cur, remain:
                                         MPTCPNRBlock64 if pkt.n else MPTCPNRBlock),
                         lambda pkt: pkt.N),
    ]

    def nr_dsn_ranges(self):
        """The NR blocks as absolute [start, end) data sequence numbers (mod 2^64)."""
        if not self.A:
            # The offsets count from the DATA ACK; without one they name no data (rule MN-02).
            raise ValueError("DSS flag N without a DATA ACK (flag A): the NR blocks have no base")
        ack = self.data_ack if self.a else self.data_ack32
        return [((ack + b.start) % 2**64, (ack + b.end) % 2**64) for b in self.nr_blocks]


# ---------------------------------------------------------------------------------------------
# TCP option glue
# ---------------------------------------------------------------------------------------------

def tcp_option(layer):
    """A (kind, value) tuple for Scapy's TCP(options=[...]) from one of the option layers above."""
    raw = bytes(layer)
    return (raw[0], raw[2:])


def _option_class(kind, value):
    if kind in C.TCP_OPT_EXPERIMENTAL and value[:2] == struct.pack(">H", C.TCP_NRSACK_EXID):
        return TCPOptNRSackPermitted if len(value) == 3 else TCPOptNRSack
    if kind == C.TCP_OPT_MPTCP and value:
        subtype = value[0] >> 4
        if subtype == C.MPTCP_MP_CAPABLE:
            return MPTCPCapable
        if subtype == C.MPTCP_DSS:
            return MPTCPDSS
        if subtype == C.MPTCP_MP_JOIN:
            return {10: MPTCPJoinSyn, 14: MPTCPJoinSynAck, 22: MPTCPJoinAck}.get(len(value))
    return None


def tcp_option_layers(tcp):
    """The NR-SACK and MPTCP options of a parsed Scapy TCP layer, as layers (others are skipped)."""
    layers = []
    for kind, value in tcp.options:
        if not isinstance(kind, int) or not isinstance(value, bytes):
            continue
        cls = _option_class(kind, value)
        if cls is not None:
            layers.append(cls(bytes([kind, len(value) + 2]) + value))
    return layers


__all__ = [
    "SCTPChunkNRSACK", "SCTPChunkFsackInit", "SCTPChunkFsackAck", "SCTPChunkFsackComplete",
    "supported_extensions", "address_parameter",
    "TCPOptNRSackPermitted", "TCPOptNRSack", "NRSackBlock",
    "MPTCPCapable", "MPTCPJoinSyn", "MPTCPJoinSynAck", "MPTCPJoinAck", "MPTCPDSS",
    "MPTCPNRBlock", "MPTCPNRBlock64", "tcp_option", "tcp_option_layers", "TCP",
]
