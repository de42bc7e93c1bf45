"""Simulator profiles: the switches that tell one SCTP implementation's rules from another's.

A profile is data, read by both engines (model.py and _fastsim.c through fast.py); it is never a
fork of the model. `rfc` is the model as it was (RFC 9260's text), `ns2` the rules of ns-2.35's
SCTP module 3.8 that the SCTP paper's figures ran on (docs/ns2-sctp-model.md gives the file and
line of every rule), `freebsd` the rules of FreeBSD's stack as usrsctp 0.9.5 ships it that the
switches can say (docs/simulator.md cites usrsctp's file and line for each, and names the ones
they cannot say yet). The rules a profile switches are listed in docs/simulator.md.
"""

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Profile:
    name: str
    # receiver: the packet that fills the last gap is acked by the delayed-ack rule (ns-2) rather
    # than at once (RFC 9260 6.7 allows both; FreeBSD and TCP ack it at once)
    gap_filler_delayed: bool = False
    # packets sent at once after an ack that cum-acks a fast-retransmitted unit (0: no limit)
    max_burst: int = 0
    # send window counted in DATA-chunk bytes: payload + this header, padded to 4 (0: payload only)
    chunk_header_bytes: int = 0
    # send while flight < cwnd (cwnd overshot by up to one packet) instead of flight + size <= cwnd
    send_while_below_cwnd: bool = False
    # grow cwnd when flight before the ack was >= cwnd, instead of flight + S > cwnd
    grow_when_flight_reached_cwnd: bool = False
    # the highest-newly-acked marker of the miss indications is kept from one ack to the next
    persistent_htna: bool = False
    # CMT only (Python engine): the receiver delays SACKs even while gaps remain and reports how
    # many packets each acks; the sender counts misses by that number (CMT's DAC algorithm)
    cmt_delayed_ack: bool = False
    # the path's retransmission timer also restarts when the cum ack passes data sent on it, not
    # only when its earliest outstanding unit is acked (ns-2: sctp.cc ~2417 stops it for every
    # cum-acked chunk's path, ~4865 restarts it; gap acks stop it only for the first outstanding,
    # ~4226-4235, as R3)
    restart_timer_on_cum_ack: bool = False
    # after this many consecutive timeouts the path is inactive and every further timeout sends a
    # HEARTBEAT, whose ack clears the count and gives a fresh RTT sample, undoing the RTO backoff
    # (ns-2 pathMaxRetrans_ 5: sctp.cc ~6402-6449, ~5127-5146); 0: no HEARTBEATs
    path_max_retrans: int = 0
    # one RTO without sending halves cwnd (not below 4 packets, only above the initial cwnd), and
    # again every RTO (ns-2's cwnd degrade timer: sctp.cc ~6475-6489, rescheduled per send ~6031)
    cwnd_degrade: bool = False
    # Max.Burst as usrsctp applies it (sctp_use_cwnd_based_maxburst, on by default): before each
    # output, a cwnd above flight + this many packets is cut to it, ssthresh first raised to the old
    # cwnd (netinet/sctp_output.c:10676-10680, sctp_cc_functions.c:1354-1362); 0: no such cut
    max_burst_cwnd: int = 0
    # slow start grows cwnd by the bytes newly acked, at most this many packets per ack (RFC 3465's
    # L; usrsctp's sctp_L2_abc_variable 2: sctp_sysctl.h:422, sctp_cc_functions.c:975-978)
    slow_start_limit_packets: int = 1
    # a fast-retransmitted unit whose retransmission is lost is fast-retransmitted again after three
    # more miss indications from acks that newly ack data at or beyond the unit that was next to
    # send when it went out (usrsctp: netinet/sctp_indata.c:3480-3507, the mark at 3707-3722); off:
    # a lost retransmission waits for the T3 timer (RFC 9260 7.2.4). One path only
    refast_retransmit: bool = False
    # SCTP's fast retransmit sets ssthresh to max(cwnd / 2, this many packets): 4 in RFC 9260 7.2.3,
    # 2 in usrsctp (netinet/sctp_cc_functions.c:191-194; its timeout keeps 4, 1160)
    fast_recovery_ssthresh_floor_packets: int = 4
    # cwnd's "packet" (its MTU: initial cwnd, growth, floors, the burst cut) is a DATA chunk plus this
    # many bytes, while flight counts DATA chunks: usrsctp counts flight in chunks (book_size, payload
    # + 16: sctp_output.c:8041) and cwnd in net->mtu, the SCTP packet (the lab's AF_CONN path: the
    # chunk + the 12-byte common header, sctp_usrreq.c:6159, 6172-6174), so with flight < cwnd one
    # chunk more goes out at every whole number of MTUs; only the initial cwnd is whole chunks
    # ((mtu - 12) * 3, sctp_cc_functions.c:92). 0: cwnd counts payloads, as flight does
    cwnd_mtu_over_chunk_bytes: int = 0
    # an ack that newly acks data undoes the RTO's backoff (RTO from SRTT and RTTVAR again: usrsctp's
    # "restore any doubled timers", netinet/sctp_indata.c:4230-4237, 5012-5019); off: the backoff
    # stays until the next RTT sample, which Karn's rule denies a retransmitted unit (RFC 9260 6.3.3)
    rto_restored_on_ack: bool = False
    # -- Linux 6.x TCP (profile linux; docs/simulator.md cites the kernel function of each rule) --
    # RTO = SRTT + max(4 RTTVAR, rto_min) (tcp_set_rto), rather than max(SRTT + 4 RTTVAR, rto_min)
    rto_min_on_variance: bool = False
    # the SYN / SYN-ACK exchange gives the first RTT sample (the SYN sits in the retransmit queue)
    handshake_rtt_sample: bool = False
    # the send buffer as Linux counts it: --sndbuf is SO_SNDBUF, doubled; every segment costs its
    # payload plus skb_overhead_bytes of truesize; a write goes in while the queue is below the buffer
    # (it may overshoot); how a refused writer comes back is SimConfig.writer's (WRITERS below)
    linux_sndbuf: bool = False
    skb_overhead_bytes: int = 0
    # RACK-TLP's loss marking without reordering seen: a hole sent before a newly SACKed segment is
    # lost once three segments are SACKed or recovery has begun (so every such hole at once)
    rack_loss: bool = False
    # RACK's reorder timer (tcp_rack_reo_wnd, tcp_rack_detect_loss, tcp_rack_reo_timeout; net/ipv4/
    # tcp_recovery.c): with fewer than three segments SACKed and no recovery, a hole sent before a
    # SACKed one is lost once it has been out that segment's RTT plus min_rtt / 4 (at most SRTT)
    rack_reorder_timer: bool = False
    # congestion avoidance: "reno" (RFC 5681) or "cubic" (RFC 9438, the kernel's tcp_cubic.c)
    cc: str = "reno"
    # cubic's HyStart (tcp_cubic.c hystart_update): slow start ends when one round's acks come in a
    # train longer than half the minimum RTT, or its first 8 RTT samples exceed the minimum by 1/8
    hystart: bool = False
    # -- Linux MPTCP (net/mptcp/protocol.c; docs/simulator.md) --
    # how new data is spread over the subflows: "round_robin" (the next subflow with room in its
    # cwnd), or "linger" (the kernel's default scheduler, mptcp_subflow_get_send): each write is
    # handed at once to the subflow whose queue (its skbs' truesize, sent or not) drains soonest at
    # its pacing rate, where it waits for that subflow's cwnd; none while that subflow's queue fills
    # its buffer (sk_stream_memory_free), and the data then waits at the connection level
    mptcp_scheduler: str = "round_robin"
    # linux_sndbuf under MPTCP: the buffer the writer waits on is the connection's, which holds each
    # write's payload plus this many bytes of frag header (mptcp_sendmsg, mptcp_carve_data_frag), not
    # an skb per segment (the subflows charge their skbs to their own buffers)
    mptcp_dfrag_overhead_bytes: int = 0
    # a joining subflow starts when the receiver's ADD_ADDR, sent once the connection is up at its
    # end, reaches the sender, and sends only once fully established, when the receiver's ack of its
    # third ACK is back (__mptcp_subflow_active): two RTTs later than the join right after the first
    # handshake that the flag off gives
    mptcp_join_after_add_addr: bool = False
    delack_s: float = 0.2
    initial_cwnd_packets: int = 4
    rto_initial_s: float = 1.0
    rto_min_s: float = 1.0
    rto_max_s: float = 60.0


# Linux 6.x TCP, cubic (the kernel's default); skb_overhead_bytes measured on the lab's kernel
# (SO_MEMINFO's wmem_queued against SIOCOUTQ, docs/simulator.md); mptcp_dfrag_overhead_bytes is
# sizeof(struct mptcp_data_frag) on 64 bits (the lab's MPTCP socket: 40-44 bytes per write)
LINUX = Profile(name="linux", rto_min_on_variance=True, handshake_rtt_sample=True, linux_sndbuf=True,
                skb_overhead_bytes=832, rack_loss=True, rack_reorder_timer=True, cc="cubic", hystart=True, delack_s=0.04,
                initial_cwnd_packets=10, rto_initial_s=1.0, rto_min_s=0.2, rto_max_s=120.0,
                mptcp_scheduler="linger", mptcp_dfrag_overhead_bytes=40, mptcp_join_after_add_addr=True)

PROFILES = {
    "rfc": Profile(name="rfc"),
    "ns2": Profile(name="ns2", gap_filler_delayed=True, max_burst=4, chunk_header_bytes=16,
                   send_while_below_cwnd=True, grow_when_flight_reached_cwnd=True,
                   persistent_htna=True, cmt_delayed_ack=True, initial_cwnd_packets=2,
                   rto_initial_s=3.0, restart_timer_on_cum_ack=True, path_max_retrans=5,
                   cwnd_degrade=True),
    # usrsctp 0.9.5 (sctplab/usrsctp at tag 0.9.5.0, netinet/): it sends while flight < cwnd
    # (sctp_output.c:9090); slow start grows cwnd when flight + newly acked >= cwnd
    # (sctp_cc_functions.c:912); initial cwnd 3 MTUs (sctp_sysctl.h:534, sctp_cc_functions.c:92);
    # initial RTO 3 s (sctp_constants.h:613); the send buffer counts payload bytes, as rfc
    # (sctp_output.c:13804-13810); docs/simulator.md has the rest
    "freebsd": Profile(name="freebsd", send_while_below_cwnd=True, grow_when_flight_reached_cwnd=True,
                       initial_cwnd_packets=3, rto_initial_s=3.0, max_burst_cwnd=4,
                       slow_start_limit_packets=2, refast_retransmit=True,
                       fast_recovery_ssthresh_floor_packets=2, cwnd_mtu_over_chunk_bytes=12,
                       rto_restored_on_ack=True),
    "linux": LINUX,
    "linux-reno": replace(LINUX, name="linux-reno", cc="reno", hystart=False),
}
# how a writer blocked on a full buffer comes back (profiles with linux_sndbuf): woken when a third
# of the buffer is free (a blocking or poll()-driven application), or retrying send() (the lab's)
WRITERS = ("poll", "spin")
# the profiles whose rules only the Python engine (model.py) knows: any switch _fastsim.c lacks, set away
# from its default (a profile that set one and ran compiled would be silently wrong)
_DEFAULT = Profile(name="default")
_PYTHON_ONLY_SWITCHES = ("linux_sndbuf", "skb_overhead_bytes", "rto_min_on_variance", "handshake_rtt_sample", "rack_loss",
                         "rack_reorder_timer", "cc", "hystart", "mptcp_scheduler", "mptcp_dfrag_overhead_bytes", "mptcp_join_after_add_addr")
PYTHON_ONLY = frozenset(name for name, p in PROFILES.items()
                        if any(getattr(p, s) != getattr(_DEFAULT, s) for s in _PYTHON_ONLY_SWITCHES))
# the protocols a profile means something for (others: every protocol)
PROTOCOLS_OF = {"linux": ("tcp", "mptcp"), "linux-reno": ("tcp", "mptcp")}


def profile(name):
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"profile must be one of {tuple(PROFILES)}, not {name!r}") from None


def chunk_bytes(size, header):
    """Bytes a unit of `size` payload bytes takes in the send window (SCTP pads chunks to 4)."""
    return size if header == 0 else -(-(size + header) // 4) * 4


DATA_CHUNK_HEADER = 16


def cwnd_unit(payload, prof):
    """cwnd's packet in flight's units (payload bytes): the payload itself, or under
    cwnd_mtu_over_chunk_bytes the MTU as usrsctp counts it against flight's DATA chunks, scaled to
    payloads (1452-byte payloads: 1452 * 1480 / 1468, rounded, 1464)."""
    if not prof.cwnd_mtu_over_chunk_bytes:
        return payload
    chunk = payload + DATA_CHUNK_HEADER
    return round(payload * (chunk + prof.cwnd_mtu_over_chunk_bytes) / chunk)
