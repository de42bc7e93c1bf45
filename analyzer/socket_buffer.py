"""B, the payload a full send buffer holds, from the socket's SO_SNDBUF by a stack's accounting
(`nrsack analyze --sndbuf-socket BYTES --stack linux`; docs/metrics.md, "B from the socket's SO_SNDBUF")."""

import math

STACKS = ("linux",)
# The truesize a Linux TCP skb costs beyond its payload (sk_buff, skb_shared_info and the header room of
# tcp_stream_alloc_skb; SKB_TRUESIZE, include/linux/skbuff.h). Measured, not derived: the lab's runs with
# GSO off on kernel 6.18 hold 15, 29, 58, 115 and 230 segments of 1448 bytes at SO_SNDBUF 16, 32, 64, 128
# and 256 KiB, which brackets it to 832-841 bytes; other kernels and architectures may differ by a few
# dozen bytes (a segment at most in B).
LINUX_SKB_OVERHEAD = 832
DEFAULT_MSS = 1448  # Ethernet's 1500-byte MTU less IPv4, TCP and the timestamp option


def payload_bytes(so_sndbuf: int, stack: str, mss: int = DEFAULT_MSS) -> int:
    """B in payload bytes for a socket whose SO_SNDBUF was set to `so_sndbuf` (what setsockopt was given).

    linux: the kernel doubles the value (sk_setsockopt, net/core/sock.c) into sk_sndbuf and counts each
    skb's truesize in sk_wmem_queued; tcp_sendmsg_locked (net/ipv4/tcp.c) starts a new skb only while
    sk_stream_memory_free (include/net/sock.h: sk_wmem_queued below sk_sndbuf), so with one segment per
    skb (GSO off, writes of a segment or more) a full buffer holds ceil(sk_sndbuf / (mss + overhead))
    segments."""
    if stack not in STACKS:
        raise ValueError(f"unknown stack {stack!r}: one of {', '.join(STACKS)}")
    if so_sndbuf < 1 or mss < 1:
        raise ValueError("SO_SNDBUF and the MSS must be positive")
    return math.ceil(2 * so_sndbuf / (mss + LINUX_SKB_OVERHEAD)) * mss
