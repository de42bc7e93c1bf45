"""The plugin tests' small TCP and MPTCP scenario, worked out by hand: 1000-byte segments from A (ISN
1000, first byte 1001) to B, with builders for handshakes, segments and acks; MPTCP with 8-octet DSNs
above 2^32."""

import hashlib
import struct

from scapy.layers.l2 import Ether

from support import pcaps

A, B, A2 = "10.0.0.1", "10.0.0.2", "10.0.1.1"
PA, PB = 40000, 5001


def opts_syn(nr_flags=0, permitted=True, mptcp=None):
    opts = [("MSS", 1460), ("SAckOK", b"")]
    if permitted:
        opts.append(pcaps.nr_permitted_option(nr_flags))
    if mptcp:
        opts.append(mptcp)
    return opts


def handshake(nr_flags=(0, 0), permitted=True, isn=(1000, 5000), mptcp=((), (), ())):
    a_isn, b_isn = isn
    return [
        pcaps.tcp_packet(0.0, A, B, PA, PB, a_isn, 0, "S", opts_syn(nr_flags[0], permitted, *mptcp[0][:1])),
        pcaps.tcp_packet(0.1, B, A, PB, PA, b_isn, a_isn + 1, "SA", opts_syn(nr_flags[1], permitted, *mptcp[1][:1])),
        pcaps.tcp_packet(0.1001, A, B, PA, PB, a_isn + 1, b_isn + 1, "A", list(mptcp[2])),
    ]


def seg(t, n, isn=1000, options=(), src=A, sport=PA):
    """The n-th 1000-byte segment (n = 0 starts at isn + 1)."""
    return pcaps.tcp_packet(t, src, B, sport, PB, isn + 1 + 1000 * n, 5001, "A", list(options), payload=1000)


def ack(t, acked, sack=(), nr=(), isn=1000, kind=253, extra=()):
    opts = []
    if sack:
        opts.append(("SAck", tuple(isn + 1 + x for b in sack for x in b)))
    if nr:
        opts.append(pcaps.nr_blocks_option([(isn + 1 + l, isn + 1 + r) for l, r in nr], kind=kind))
    return pcaps.tcp_packet(t, B, A, PB, PA, 5001, isn + 1 + acked, "A", opts + list(extra))


def four_segments(isn=1000):
    return [seg(0.2 + i / 1000, i, isn) for i in range(4)]


# ---- MPTCP ----

KEY_A, KEY_B = 0x0102030405060708, 0x1112131415161718
DSN0 = 0x100000000  # 8-octet DSNs above 2^32


def token(key):
    return struct.unpack("!I", hashlib.sha256(struct.pack("!Q", key)).digest()[:4])[0]


def mptcp_handshake(nr_flags=(0x02, 0x02), csum=False):
    flags = 0x81 if csum else 0x01
    return handshake(nr_flags=nr_flags, mptcp=(
        (pcaps.mptcp_capable_option(flags=flags),),
        (pcaps.mptcp_capable_option(flags=flags, keys=(KEY_B,)),),
        (pcaps.mptcp_capable_option(flags=flags, keys=(KEY_A, KEY_B)),),
    ))


def mseg(t, n, k=None, csum=None, src=A, sport=PA, isn=1000):
    """Data-level segment n (DSN0 + 1000 n) as the k-th segment of its subflow (k = n by default)."""
    k = n if k is None else k
    dss = pcaps.dss_option(data_ack=1, dsn=DSN0 + 1000 * n, ssn=1 + 1000 * k, dll=1000, checksum=csum)
    return seg(t, k, isn=isn, options=[dss], src=src, sport=sport)


def mack(t, acked, nr=None, wide=False, count=None, with_ack=True, dport=PA, dst=A):
    dss = pcaps.dss_option(data_ack=DSN0 + acked if with_ack else None, nr_blocks=nr, wide=wide, count=count)
    return pcaps.tcp_packet(t, B, dst, PB, dport, 5001, 1001, "A", [dss])


def timed_sender(ends, t0):
    """-> (send, frames): send(side, seq, ack, flags, options=(), payload=0, dt=0.001) appends to frames a
    TCP frame from ends[side] to the other end, dt seconds after the one before (the first: after t0)."""
    frames, clock = [], [t0]

    def send(side, seq, ack, flags, options=(), payload=0, dt=0.001):
        clock[0] += dt
        (src, sport), (dst, dport) = ends[side], ends[1 - side]
        frame = pcaps.tcp_packet(clock[0], src, dst, sport, dport, seq, ack, flags, list(options), payload=payload)
        frame[Ether].src, frame[Ether].dst = "02:00:00:00:00:01", "02:00:00:00:00:02"  # nothing to resolve
        frames.append(frame)

    return send, frames


def window_transfer(k, t0, window=8, rounds=40, lost_round=20, size=1000, grow=False, ramp=0, slow_every=0,
                    steady=0, paced_start=False, answer=0.0001):
    """One connection's frames as a sender-side capture sees them: `window` segments in flight, each ack of
    two answered at once by two new segments: the RtxQ back at the same level every wait, as a sender held
    back by its buffer keeps it (grow: by three, a window that grows a segment a round). ramp: first that
    many rounds answered by three (a transient above the buffer, as Linux's GSO skbs make it), then ramp / 2
    acks answered by nothing, back to `window` in flight, before the rounds. slow_every: every that many
    rounds, three acks of a segment each before the new data (a sender that waited for more than room, as
    TSO deferral or pacing do); steady: with grow, the first that many rounds do not grow; paced_start: the
    first window acked whole before new data refills it (BBR pacing its first round trip); answer: seconds from
    each round's last ack to its first new segment (a paced sender's: its pacing timer's). In round
    `lost_round` the segment at the cum ack is lost and SACKed around, no new data leaving, until its
    retransmission is acked; then FINs both ways acked. Connection k: 10.2.k.1:2000+k -> 10.255.0.2:80."""
    send, frames = timed_sender([(f"10.2.{k}.1", 2000 + k), ("10.255.0.2", 80)], t0)
    sack = [("MSS", 1460), ("SAckOK", b"")]
    send(0, 1000, 0, "S", sack)
    send(1, 5000, 1001, "SA", sack, dt=0.01)  # the reply a round trip later: a capture by the sender
    send(0, 1001, 5001, "A", dt=0.0001)
    cum = nxt = 1001
    for _ in range(window):
        send(0, nxt, 5001, "PA", payload=size, dt=0.0001)
        nxt += size
    if paced_start:
        for _ in range(window // 2):
            cum += 2 * size
            send(1, 5001, cum, "A", dt=0.001)
        for _ in range(window):
            send(0, nxt, 5001, "PA", payload=size, dt=0.0001)
            nxt += size
    for r in range(ramp + ramp // 2):
        cum += 2 * size
        send(1, 5001, cum, "A", dt=0.01)
        for _ in range(3 if r < ramp else 0):
            send(0, nxt, 5001, "PA", payload=size, dt=0.0001)
            nxt += size
    for r in range(rounds):
        if r == lost_round:
            for j in range(2, window, 2):
                send(1, 5001, cum, "A", [("SAck", (cum + size, cum + j * size))], dt=0.002)
            send(0, cum, 5001, "PA", payload=size, dt=0.002)
        slow = slow_every and r % slow_every == slow_every - 1
        for _ in range(3 if slow else 1):
            cum += size if slow else 2 * size
            send(1, 5001, cum, "A", dt=0.01 if r != lost_round else 0.005)
        for j in range((3 if grow and r >= steady else 2) + bool(slow)):
            send(0, nxt, 5001, "PA", payload=size, dt=answer if j == 0 else 0.0001)
            nxt += size
    send(1, 5001, nxt, "A", dt=0.01)
    send(0, nxt, 5001, "FA")
    send(1, 5001, nxt + 1, "A")
    send(1, 5001, nxt + 1, "FA")
    send(0, nxt + 1, 5002, "A")
    return frames


def rows_transfer(rows, t0=1.0, size=1000):
    """One connection's frames as a sender-side capture sees them, from rows: ("data", bytes) sends new data in
    segments of `size`, ("ack", bytes) cum-acks that many more, a millisecond apart; then FINs both ways acked.
    10.3.0.1:3000 -> 10.255.0.3:80."""
    send, frames = timed_sender([("10.3.0.1", 3000), ("10.255.0.3", 80)], t0)
    sack = [("MSS", 1460), ("SAckOK", b"")]
    send(0, 1000, 0, "S", sack)
    send(1, 5000, 1001, "SA", sack, dt=0.01)
    send(0, 1001, 5001, "A", dt=0.0001)
    cum = nxt = 1001
    for kind, n in rows:
        if kind == "data":
            for _ in range(n // size):
                send(0, nxt, 5001, "PA", payload=size)
                nxt += size
        else:
            cum += n
            send(1, 5001, cum, "A")
    send(1, 5001, nxt, "A")
    send(0, nxt, 5001, "FA")
    send(1, 5001, nxt + 1, "FA")
    send(0, nxt + 1, 5002, "A")
    return frames
