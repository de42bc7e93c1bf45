"""The plugin tests' small SCTP scenario, worked out by hand: an NR-SACK association from A (TSN 11
first, 1000-byte DATA chunks) to B, with builders for its handshake, data and acks."""

from support import pcaps
from support.pcaps import NR_SACK

A, A2, B, B2 = "10.0.0.1", "10.0.1.1", "10.0.0.2", "10.0.1.2"
TAG_A, TAG_B = 0x1111, 0x2222


def handshake(ext=(NR_SACK,), addrs_b=()):
    ext = list(ext) if ext is not None else None
    return [pcaps.sctp_packet(0.0, A, B, 0, [pcaps.init_chunk(TAG_A, 11, ext=ext)]),
            pcaps.sctp_packet(0.1, B, A, TAG_A, [pcaps.init_chunk(TAG_B, 1, ext=ext, addrs=addrs_b, ack=True)],
                              sport=5001, dport=5000)]


def data(t, *tsns, src=A):
    return pcaps.sctp_packet(t, src, B, TAG_B, [pcaps.data_chunk(tsn) for tsn in tsns])


def ack(t, *chunks, src=B):
    return pcaps.sctp_packet(t, src, A, TAG_A, list(chunks), sport=5001, dport=5000)


def nr(cum, *blocks, **kw):
    return pcaps.nr_sack_chunk(cum, nr_gaps=blocks, **kw)


def sent(first=11, last=14, t=0.2):
    return [data(t + i * 0.001, tsn) for i, tsn in enumerate(range(first, last + 1))]
