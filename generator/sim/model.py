"""Discrete-event model of one bulk transfer: SCTP, CMT-SCTP, TCP or MPTCP, with SACK or NR-SACK.

The model produces a `Trace`: the frames a capture at the sender (and at the receiver) would see,
as plain tuples, and the truth about the sender after every frame that changes its scoreboard.
It knows nothing about bytes on the wire; generator/sim/wire.py turns frames into packets.

Units: time in integer nanoseconds; data in "units" (one DATA chunk / segment of `payload` bytes,
the last one shorter) indexed 0..n-1. The simplifications are listed in docs/simulator.md.
"""

import heapq
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from .intervals import IntervalSet
from .profiles import PROTOCOLS_OF, WRITERS, chunk_bytes, cwnd_unit, profile

PROTOCOLS = ("sctp", "cmt", "tcp", "mptcp")
ACKS = ("sack", "nrsack")

# frame kinds (first element after the time in a frame tuple)
DATA, RTX, ACK, CTRL = 0, 1, 2, 3
# unit flags (FRTX: fast-retransmitted, for the profiles' Max.Burst)
INFL, SACKED, LOST, RTXD, ACKED, FRTX = 1, 2, 4, 8, 16, 32
# event kinds
EV_DATA_ARRIVAL, EV_ACK_ARRIVAL, EV_DELACK, EV_RTO, EV_READY, EV_CTRL, EV_HB_ACK, EV_DEGRADE, EV_RACK = range(9)

NS = 1_000_000_000
# cubic's constants (RFC 9438 4.1-4.3: C 0.4, beta 0.7) in tcp_cubic.c's integers: cube_rtt_scale =
# bic_scale 41 * 10, cube_factor = 2^40 / cube_rtt_scale (K in 1/1024 s), beta_scale =
# 8 (1024 + 717) / 3 / (1024 - 717) (the Reno-friendly estimate's step)
CUBIC_RTT_SCALE = 41 * 10
CUBIC_FACTOR = (1 << 40) / CUBIC_RTT_SCALE
CUBIC_BETA_SCALE = 8 * (1024 + 717) // 3 // (1024 - 717)
SCTP_MAX_BLOCKS = (1500 - 20 - 12 - 20) // 4  # an NR-SACK chunk must fit one 1500-byte packet
TCP_MAX_BLOCKS = 4  # 40 bytes of TCP options
# net/mptcp/protocol.c MPTCP_SEND_BURST_SIZE: 64 KB less the TCP header, options, IPv6 header and
# fragment header, the bytes one pick of the scheduler may hand its subflow
MPTCP_SEND_BURST = (1 << 16) - 20 - 40 - 40 - 8
MPTCP_MAX_BLOCKS = 3  # subflow SACK blocks + data-level NR blocks beside a DSS with 8-byte DATA ACK
GAP_OFFSET_MAX = 0xFFFF  # SCTP gap block offsets are 16 bit
# bytes on the wire around one payload, for the serialisation time
HEADER_BYTES = {"sctp": 20 + 12 + 16, "cmt": 20 + 12 + 16, "tcp": 20 + 20, "mptcp": 20 + 20 + 28}
MAX_PAYLOAD = {proto: 1500 - header for proto, header in HEADER_BYTES.items()}


@dataclass(frozen=True)
class PathConfig:
    bandwidth_bps: float = 100e6
    delay_s: float = 0.045  # one way
    loss: float = 0.0  # forward (data) direction
    queue_packets: int = 100  # drop-tail queue at the bottleneck, packets in service included
    ack_loss: float = 0.0  # reverse (ack) direction


@dataclass(frozen=True)
class SimConfig:
    protocol: str = "sctp"
    ack: str = "sack"
    sndbuf: int = 32768
    total_bytes: int = 1_000_000
    paths: tuple = (PathConfig(),)
    seed: int = 1
    payload: int = 1000
    rcvbuf: int = 4 << 20
    loss_model: str = "bernoulli"  # or "gilbert"
    burst: float = 2.0  # mean loss burst length (packets) of the Gilbert-Elliott model
    delack_s: float | None = None  # None: the profile's (200 ms; Linux 40 ms)
    ack_every: int = 2
    profile: str = "rfc"  # profiles.py: whose rules (rfc: RFC 9260; ns2: ns-2.35; freebsd: usrsctp; linux)
    writer: str = "poll"  # profiles.WRITERS: how a blocked writer comes back (linux profiles)
    # None: the profile's value
    rto_initial_s: float | None = None
    rto_min_s: float | None = None
    rto_max_s: float | None = None
    initial_cwnd_packets: int | None = None
    max_time_s: float = 3600.0
    duration_s: float | None = None  # a fixed-duration run: stop at this time, done or not
    isn: int | None = None  # first TSN / sequence number; None: drawn from the seed
    drop_units: tuple = ()  # units whose first transmission is lost (scripted loss, for tests)
    # (path, k): the k-th first transmission on that path (its subflow's k-th segment) is lost; a
    # lab run's losses replayed path by path (bench/bench_linux_profile.py); model.py only
    drop_path_packets: tuple = ()
    # MPTCP: for paths 1, 2 ...: seconds from the first path's first data to the path's (None: it
    # never carries data), in place of the handshake's timing; a lab run's join replayed (the
    # kernel joins from its path manager's worker, whose delay the model cannot know); model.py only
    join_after_s: tuple = ()

    def __post_init__(self):
        prof = profile(self.profile)
        if self.protocol not in PROTOCOLS_OF.get(self.profile, PROTOCOLS):
            raise ValueError(f"profile {self.profile} is for {' and '.join(PROTOCOLS_OF[self.profile])} "
                             f"only, not {self.protocol}")
        for name in ("rto_initial_s", "rto_min_s", "rto_max_s", "initial_cwnd_packets", "delack_s"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, getattr(prof, name))
        if self.duration_s is not None:
            if not self.duration_s > 0:
                raise ValueError(f"duration must be positive, got {self.duration_s}")
            object.__setattr__(self, "max_time_s", float(self.duration_s))
            # data always waiting: more than the paths can carry in that time
            capacity = sum(p.bandwidth_bps for p in self.paths) * self.duration_s / 8
            object.__setattr__(self, "total_bytes", int(capacity) + self.payload)
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, not {self.protocol!r}")
        if self.ack not in ACKS:
            raise ValueError(f"ack must be one of {ACKS}, not {self.ack!r}")
        if self.writer not in WRITERS:
            raise ValueError(f"writer must be one of {WRITERS}, not {self.writer!r}")
        if self.loss_model not in ("bernoulli", "gilbert"):
            raise ValueError(f"loss model must be bernoulli or gilbert, not {self.loss_model!r}")
        if self.protocol in ("sctp", "tcp") and len(self.paths) != 1:
            raise ValueError(f"{self.protocol} runs over exactly one path, got {len(self.paths)}")
        if self.protocol in ("cmt", "mptcp") and not 1 <= len(self.paths) <= 16:
            raise ValueError(f"{self.protocol} needs 1 to 16 paths, got {len(self.paths)}")
        if self.payload <= 0 or self.total_bytes <= 0:
            raise ValueError("payload and total bytes must be positive")
        if self.payload > MAX_PAYLOAD[self.protocol]:
            raise ValueError(f"payload {self.payload} does not fit a 1500-byte packet of "
                             f"{self.protocol} (at most {MAX_PAYLOAD[self.protocol]})")
        if self.sndbuf < self.payload:
            raise ValueError(f"send buffer ({self.sndbuf}) smaller than one payload ({self.payload})")
        for p in self.paths:
            if not 0.0 <= p.loss < 1.0:
                raise ValueError(f"loss rate must be in [0, 1), got {p.loss}")
            if not 0.0 <= p.ack_loss < 1.0:
                raise ValueError(f"ack loss rate must be in [0, 1), got {p.ack_loss}")
            if p.bandwidth_bps <= 0 or p.delay_s < 0 or p.queue_packets < 1:
                raise ValueError(f"bad path parameters: {p}")


@dataclass
class Trace:
    """What the model saw happen. Frames are tuples (t_ns, kind, path, a, b):
    DATA/RTX: a = unit, b = subflow index (MPTCP; the unit otherwise);
    ACK: a = (cum_unit, blocks, rwnd_bytes, subflow_cum, subflow_blocks), b = None;
    CTRL: a = name ("INIT", "SYN", "JOIN-SYN", ...), b = None.
    Blocks are tuples of [start, end) in units (subflow indices for subflow blocks)."""

    config: SimConfig
    n_units: int
    isn: int
    sender: list = field(default_factory=list)
    receiver: list = field(default_factory=list)
    # truth rows: (sender frame index, t_ns, is_ack, rtxq_sack, rtxq_nr, sacked, nr_acked, blocked, gap_open)
    rtxq: list = field(default_factory=list)
    cwnd: list = field(default_factory=list)  # (t_ns, path, cwnd, ssthresh)
    recovery: list = field(default_factory=list)  # (path, kind, start_ns, end_ns)
    first_data_ns: int | None = None
    done_ns: int | None = None  # the ack that cum-acked the last unit arrived
    counters: dict = field(default_factory=dict)
    columns: dict | None = None  # the sender frames as numpy columns (compiled runs only)
    receiver_columns: dict | None = None  # the same for the receiver frames

    def frame_kinds(self):
        if self.columns is not None:
            return self.columns["kind"]
        return np.fromiter((f[1] for f in self.sender), dtype=np.int64, count=len(self.sender))

    def last_frame_ns(self):
        if self.columns is not None:
            return int(self.columns["t"][-1]) if len(self.columns["t"]) else 0
        return self.sender[-1][0] if self.sender else 0


class _Space:
    """One sequence space that acks refer to: the TSN / byte space (SCTP, CMT, TCP) or one
    MPTCP subflow. `units` maps a space index to a unit (None: identity)."""

    __slots__ = ("cum", "sacked", "high", "holes", "units", "sent")

    def __init__(self, units=None):
        self.cum = 0
        self.sacked = IntervalSet()
        self.high = 0
        self.holes = set()
        self.units = units
        self.sent = 0  # indices below this have been sent at least once


class Simulation:
    def __init__(self, config: SimConfig, receiver_trace=False):
        self.cfg = cfg = config
        self.rng = np.random.default_rng(cfg.seed)
        # one independent stream per path, so that paths do not share draws
        self.rng_paths = [np.random.default_rng([cfg.seed, k]) for k in range(len(cfg.paths))]
        self.S = cfg.payload
        self.U = cwnd_unit(cfg.payload, profile(cfg.profile))  # cwnd's packet, in flight's units
        self.n = -(-cfg.total_bytes // cfg.payload)
        self.last_size = cfg.total_bytes - (self.n - 1) * cfg.payload
        isn = cfg.isn if cfg.isn is not None else int(self.rng.integers(0, 2**32))
        self.trace = Trace(cfg, self.n, isn)
        self.record_receiver = receiver_trace
        self.mptcp = cfg.protocol == "mptcp"
        self.drop_units = frozenset(cfg.drop_units)
        self.drop_path_packets = frozenset(cfg.drop_path_packets)
        self.cmt = cfg.protocol == "cmt"
        self.sctp_like = cfg.protocol in ("sctp", "cmt")
        self.nr = cfg.ack == "nrsack"
        prof = self.prof = profile(cfg.profile)
        # the profile's rules as numbers the hot paths use: a unit may go out while
        # flight + cwnd_need(size) <= cwnd; cwnd grows when flight before the ack + grow_margin > cwnd
        self.by_size = not prof.send_while_below_cwnd
        self.grow_margin = 1 if prof.grow_when_flight_reached_cwnd else cfg.payload
        self.window_unit = chunk_bytes(cfg.payload, prof.chunk_header_bytes)
        self.burst = None  # packets still allowed at this moment under Max.Burst (None: no limit)
        # CMT's delayed-ack algorithm (DAC): SACKs delayed even while gaps remain, each carrying the
        # number of packets it acks, which the sender may count as that many miss indications
        self.dac = self.cmt and prof.cmt_delayed_ack
        self.ack_packets = {}  # id(ack) -> packets it acks, while the ack is on its way (DAC)
        P = self.P = len(cfg.paths)
        self.delay = [int(round(p.delay_s * NS)) for p in cfg.paths]
        self.ns_per_byte = [8 * NS / p.bandwidth_bps for p in cfg.paths]
        self.overhead = HEADER_BYTES[cfg.protocol]
        self.qcap = [p.queue_packets for p in cfg.paths]
        self.linkq = [deque() for _ in range(P)]
        self._init_loss()

        # sender, per unit
        self.flags = bytearray(self.n)
        self.upath = bytearray(self.n)
        self.txt = [0] * self.n
        self.sidx = list(range(self.n)) if not self.mptcp else [0] * self.n
        self.miss = {}
        # fast-retransmitted units that may be fast-retransmitted again (profile refast_retransmit):
        # unit -> the unit that was next to send when it went out, in the order they first went
        self.refr = {}
        self.pending = []  # heap of units marked for retransmission
        self.next_new = 0
        self.sent_bytes = 0
        self.peer_rwnd = cfg.rcvbuf
        if self.mptcp:
            self.spaces = [_Space(units=[]) for _ in range(P)]
        else:
            self.spaces = [_Space()]
        # sender, data level (what frees the send buffer)
        self.dcum = 0
        self.dcum_bytes = 0
        self.dsacked = IntervalSet()
        self.dnr = IntervalSet()
        # MPTCP: subflow indices whose subflow ack the data level has taken in, per subflow
        self.dsub = [IntervalSet() for _ in range(P)] if self.mptcp else None
        self.sacked_bytes = 0
        self.nr_bytes = 0
        self.gap_open = False
        # sender, per path
        # the initial cwnd is whole chunks even when cwnd's packet is an MTU (usrsctp: (mtu - 12) * 3,
        # sctp_cc_functions.c:92)
        self.cwnd = [cfg.initial_cwnd_packets * self.S] * P
        self.ssthresh = [cfg.rcvbuf] * P
        self.pba = [0] * P
        self.flight = [0] * P
        self.in_recovery = [None] * P  # (kind, start_ns, exit index) while recovering
        self.fr_allow = [False] * P
        self.srtt = [None] * P
        self.rttvar = [0] * P
        self.rto = [int(cfg.rto_initial_s * NS)] * P
        self.rto_deadline = [None] * P
        self.rto_event = [False] * P
        self.htna = [-1] * P  # persistent highest-newly-acked marker (profile persistent_htna)
        self.errors = [0] * P  # consecutive timeouts not cleared by an ack (profile path_max_retrans)
        self.degrade_deadline = [None] * P  # the cwnd degrade timer (profile cwnd_degrade), lazy
        self.degrade_event = [False] * P
        # profile linux: the writer's state (blocked until a third of the buffer is free), the
        # buffer in truesize bytes, cubic's state per path and the smallest RTT seen
        self.writer_blocked = False
        self.buffer_bytes = 2 * cfg.sndbuf if prof.linux_sndbuf else cfg.sndbuf
        self.skb_truesize = cfg.payload + prof.skb_overhead_bytes
        # the buffer the writer waits on: MPTCP's is the connection's (payload and frag headers)
        self.truesize = (cfg.payload + prof.mptcp_dfrag_overhead_bytes if self.mptcp and prof.linux_sndbuf
                         else self.skb_truesize)
        # the kernel's MPTCP scheduler (profile mptcp_scheduler "linger"): units written by the
        # application, and per subflow the units handed to it and not yet sent, in order; units
        # [next_new, written) wait at the connection level
        self.linger = self.mptcp and prof.mptcp_scheduler == "linger"
        self.written = 0
        self.written_bytes = 0
        self.handed = [deque() for _ in range(len(cfg.paths))]
        self.avg_pacing = [None] * len(cfg.paths)  # the scheduler's smoothed pacing rate, bytes/ns
        self.cubic = [dict(w_max=0, epoch=None, k=0, origin=0, ack_cnt=0, tcp_cwnd=0, cnt=0, last_cwnd=0,
                           last_time=0) for _ in range(P)]
        self.ca_acked = [0] * P  # bytes acked in congestion avoidance toward the next increase
        self.cwnd_limited = [False] * P  # linux: tcp_cwnd_validate's is_cwnd_limited ...
        self.cwnd_usage_seq = [0] * P  # ... kept until the ack passes this space index
        self.min_rtt = [None] * P
        # RACK's reorder timer per path (profile rack_reorder_timer): its generation, and the RTT of the
        # SACKed segment that armed it
        self.rack_gen = [0] * P
        self.rack_rtt = [0] * P
        # HyStart's round per path: (space index ending it, start ns, last train ack ns, min RTT of
        # its first samples, samples); None: a new round begins with the next ack
        self.hystart = [None] * P
        self.outq = [deque() for _ in range(P)]  # units in the order they left on each path
        self.ready = [False] * P
        self.rr = 0
        # receiver
        self.rcum = 0
        self.rset = IntervalSet()
        self.ooo_bytes = 0
        self.scum = [0] * P
        self.sset = [IntervalSet() for _ in range(P)]
        n_ack_spaces = P if self.mptcp else 1
        self.ack_pending = [0] * n_ack_spaces
        self.delack_gen = [0] * n_ack_spaces
        self.delack_armed = [False] * n_ack_spaces
        self.last_arrival_path = 0
        # event queue
        self.events = []
        self.seq = 0
        self.n_data_packets = self.n_retransmissions = self.n_fast_retransmits = 0
        self.n_timeouts = self.n_acks = self.n_queue_drops = self.n_random_drops = 0

    # -- loss ------------------------------------------------------------------------------------
    def _init_loss(self):
        """Random losses use common random numbers: the first transmission of unit u draws
        first_draw[u], so a SACK run and an NR-SACK run with the same seed lose the same data
        (whatever path or time it leaves on) and their difference is the acks, not the dice.
        Retransmissions, and the Gilbert-Elliott state per path, draw from sequential streams."""
        cfg = self.cfg
        self.first_draw = self.rng.random(self.n).tolist()
        self.bernoulli = cfg.loss_model == "bernoulli"
        self.loss = [p.loss for p in cfg.paths]
        self.rand = [[] for _ in cfg.paths]
        self.rand_pos = [0] * self.P
        # the ack direction draws from its own stream per path, so that ack loss leaves the data's
        # draws (and so the common random numbers of SACK and NR-SACK runs) as they were
        self.ack_loss = [p.ack_loss for p in cfg.paths]
        self.rng_acks = [np.random.default_rng([cfg.seed, k, 1]) for k in range(self.P)]
        self.ack_rand = [[] for _ in cfg.paths]
        self.ack_rand_pos = [0] * self.P
        self.ge_bad = [False] * self.P
        if cfg.loss_model == "gilbert":
            self.ge = []
            for p in cfg.paths:
                # bad state loses everything, good state nothing; mean burst `burst` packets and a
                # stationary loss rate equal to the path's rate
                leave_bad = 1.0 / max(cfg.burst, 1.0)
                enter_bad = p.loss * leave_bad / (1.0 - p.loss) if p.loss > 0 else 0.0
                self.ge.append((enter_bad, leave_bad))

    def _uniform(self, path, acks=False):
        bufs, positions = (self.ack_rand, self.ack_rand_pos) if acks else (self.rand, self.rand_pos)
        pos = positions[path]
        buf = bufs[path]
        if pos >= len(buf):
            rng = self.rng_acks[path] if acks else self.rng_paths[path]
            buf = bufs[path] = rng.random(65536).tolist()
            pos = 0
        positions[path] = pos + 1
        return buf[pos]

    def _lost(self, path, u, rtx):
        loss = self.cfg.paths[path].loss
        if loss <= 0.0:
            return False
        if self.cfg.loss_model == "bernoulli":
            return (self._uniform(path) if rtx else self.first_draw[u]) < loss
        enter_bad, leave_bad = self.ge[path]
        if self.ge_bad[path]:
            if self._uniform(path) < leave_bad:
                self.ge_bad[path] = False
        elif self._uniform(path) < enter_bad:
            self.ge_bad[path] = True
        return self.ge_bad[path]

    # -- helpers ---------------------------------------------------------------------------------
    def _push(self, t, kind, a, b=None):
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, kind, a, b))

    def size(self, u):
        return self.S if u != self.n - 1 else self.last_size

    def range_bytes(self, start, end):
        """Payload bytes of units [start, end)."""
        if end <= start:
            return 0
        if end >= self.n:
            return (end - start - 1) * self.S + self.last_size
        return (end - start) * self.S

    def _truth(self, now, frame_index, is_ack):
        rtxq_sack = self.sent_bytes - self.dcum_bytes
        rtxq_nr = rtxq_sack - self.nr_bytes
        rtxq = rtxq_nr if self.nr else rtxq_sack
        self.trace.rtxq.append((frame_index, now, is_ack, rtxq_sack, rtxq_nr, self.sacked_bytes,
                                self.nr_bytes, self._blocked(rtxq), self.gap_open))

    def _blocked(self, rtxq):
        """metrics.md's B - rtxq < S; a profile whose window counts DATA chunks (decision 29):
        the next full chunk does not fit beside the chunks in the RtxQ."""
        if self.prof.linux_sndbuf:
            # written data not yet sent is not a buffer full of sent data (the lab's truth leaves
            # such waits out, lab/truth.py); every unit is sent as soon as written otherwise
            return self.written_bytes <= self.sent_bytes and not self._writable(rtxq)
        if not self.prof.chunk_header_bytes:
            return self.cfg.sndbuf - rtxq < self.S
        return self.cfg.sndbuf - -(-rtxq // self.S) * self.window_unit < self.window_unit

    def _writable(self, rtxq):
        """Linux: a write goes in while the queue's truesize is below the (doubled) buffer
        (sk_stream_memory_free); once refused, a poll()-driven or blocking writer waits until a
        third of the buffer is free (sk_stream_wspace >= sk_stream_min_wspace,
        sk_stream_write_space); a spinning one retries until one more segment goes in."""
        queued = -(-rtxq // self.S) * self.truesize
        if self.writer_blocked and self.cfg.writer == "poll":
            return self.buffer_bytes - queued >= queued >> 1 and queued < self.buffer_bytes
        return queued < self.buffer_bytes

    def _cwnd_changed(self, now, p):
        self.trace.cwnd.append((now, p, self.cwnd[p], self.ssthresh[p]))

    # -- run -------------------------------------------------------------------------------------
    def run(self):
        self._handshake()
        limit = int(self.cfg.max_time_s * NS)
        events = self.events
        pop = heapq.heappop
        on_data, on_ack = self._on_data_arrival, self._on_ack_arrival
        while events and self.trace.done_ns is None:
            t, _, kind, a, b = pop(events)
            if t > limit:
                break
            if kind == EV_DATA_ARRIVAL:
                on_data(t, a, b)
            elif kind == EV_ACK_ARRIVAL:
                on_ack(t, a, b)
            elif kind == EV_DELACK:
                if self.delack_armed[a] and self.delack_gen[a] == b:
                    self._send_ack(t, self.last_arrival_path if not self.mptcp else a)
            elif kind == EV_RTO:
                self._on_rto_event(t, a)
            elif kind == EV_READY:
                self.ready[a] = True
                self._try_send(t)
            elif kind == EV_CTRL:
                a.append((t, CTRL, b[0], b[1], None))
            elif kind == EV_HB_ACK:
                self._on_heartbeat_ack(t, a, b)
            elif kind == EV_DEGRADE:
                self._on_degrade_event(t, a)
            elif kind == EV_RACK:
                if self.rack_gen[a] == b:
                    self._on_rack_timer(t, a)
        for p, rec in enumerate(self.in_recovery):
            if rec is not None:
                self.trace.recovery.append((p, rec[0], rec[1], None))
        self.trace.counters = dict(
            data_packets=self.n_data_packets, retransmissions=self.n_retransmissions,
            fast_retransmits=self.n_fast_retransmits, timeouts=self.n_timeouts, acks=self.n_acks,
            queue_drops=self.n_queue_drops, random_drops=self.n_random_drops,
            acked_bytes=self.dcum_bytes)
        return self.trace

    def _handshake(self):
        """Connection set-up frames; each path becomes ready for data when its handshake ends."""
        tr = self.trace
        rec = self.record_receiver
        d0 = self.delay[0]
        if self.sctp_like:
            steps = [(0, "INIT", True), (2 * d0, "INIT-ACK", False),
                     (2 * d0, "COOKIE-ECHO", True), (4 * d0, "COOKIE-ACK", False)]
            ready = [(p, 4 * d0) for p in range(self.P)]
            paths = [0] * len(steps)
        else:
            steps = [(0, "SYN", True), (2 * d0, "SYN-ACK", False), (2 * d0, "ACK", True)]
            paths = [0, 0, 0]
            ready = [(0, 2 * d0)]
            # profile mptcp_join_after_add_addr: the join waits for the ADD_ADDR (sent by the
            # receiver when the third ACK reaches it, back at the sender two delays later), and the
            # subflow is usable once the receiver's ack of its JOIN-ACK is back
            join = 4 * d0 if self.prof.mptcp_join_after_add_addr else 2 * d0
            for p in range(1, self.P):
                dp = self.delay[p]
                usable = (4 if self.prof.mptcp_join_after_add_addr else 2) * dp
                if self.cfg.join_after_s:
                    after = self.cfg.join_after_s[p - 1]
                    if after is None:
                        continue
                    join = max(2 * d0 + int(after * NS) - usable, 0)
                steps += [(join, "JOIN-SYN", True), (join + 2 * dp, "JOIN-SYN-ACK", False),
                          (join + 2 * dp, "JOIN-ACK", True)]
                paths += [p, p, p]
                ready.append((p, join + usable))
        for (t, name, from_sender), p in zip(steps, paths):
            # a frame from the sender is seen at the sender at t and at the receiver one delay
            # later; a frame from the receiver left it one delay before t
            self._push(t, EV_CTRL, tr.sender, (p, name))
            if rec:
                t_rx = t + self.delay[p] if from_sender else t - self.delay[p]
                self._push(t_rx, EV_CTRL, tr.receiver, (p, name))
        for p, t in ready:
            self._push(t, EV_READY, p)
            if self.prof.handshake_rtt_sample and not self.sctp_like:
                self._rtt_sample(p, 2 * self.delay[p])

    # -- sender ----------------------------------------------------------------------------------
    def _try_send(self, now):
        self._send_what_fits(now)
        if self.prof.linux_sndbuf:
            self._validate_cwnd()

    def _validate_cwnd(self):
        """tcp_cwnd_validate (net/ipv4/tcp_output.c), after each tcp_write_xmit: a path whose pipe
        reached cwnd is cwnd-limited for the rest of the window then sent (until the ack passes
        snd_nxt of that moment), and tcp_is_cwnd_limited lets cwnd grow on every ack of it."""
        for q in range(self.P):
            sp = self.spaces[q if self.mptcp else 0]
            limited = self.flight[q] >= self.cwnd[q]
            if limited or sp.cum >= self.cwnd_usage_seq[q]:
                self.cwnd_limited[q] = limited
                self.cwnd_usage_seq[q] = sp.sent

    def _send_what_fits(self, now):
        if self.linger:
            return self._try_send_linger(now)
        if self.prof.max_burst_cwnd:
            self._cut_cwnd_to_burst(now)
        flags = self.flags
        pending = self.pending
        ready, flight, cwnd, fr_allow = self.ready, self.flight, self.cwnd, self.fr_allow
        P, S, n = self.P, self.S, self.n
        sndbuf = self.cfg.sndbuf
        send = self._send
        by_size = self.by_size
        header = self.prof.chunk_header_bytes
        while True:
            while pending and flags[pending[0]] & LOST == 0:
                heapq.heappop(pending)  # acked meanwhile, or already resent
            if pending:
                u = pending[0]
                sz = S if u != n - 1 else self.last_size
                need = sz if by_size else 1
                if self.mptcp or P == 1:
                    p = self.upath[u]
                    if not (ready[p] and (flight[p] + need <= cwnd[p] or fr_allow[p])):
                        return
                else:  # CMT's RTX_SSTHRESH: the path with the largest ssthresh that has room
                    best = None
                    for q in range(P):
                        if (ready[q] and (flight[q] + need <= cwnd[q] or fr_allow[q])
                                and (best is None or self.ssthresh[q] > self.ssthresh[best])):
                            best = q
                    if best is None:
                        return
                    p = best
                if self._burst_spent():
                    return
                heapq.heappop(pending)
                send(now, u, p, True)
                continue
            u = self.next_new
            if u >= n:
                return
            sz = S if u != n - 1 else self.last_size
            need = sz if by_size else 1
            in_queue = self.sent_bytes - self.dcum_bytes
            # every unit sent so far is a full one, so rtxq // S counts them: the window in units
            # of window_unit (S itself, or the DATA chunk of the ns2 profile)
            rtxq = in_queue - self.nr_bytes if self.nr else in_queue
            if self.prof.linux_sndbuf:
                if not self._writable(rtxq):
                    self.writer_blocked = True
                    return
                self.writer_blocked = False
            elif sndbuf - rtxq // S * self.window_unit < chunk_bytes(sz, header):
                return  # send buffer blocking: the application cannot write the next message
            if in_queue + sz > self.peer_rwnd:
                return
            if P == 1:
                if not (ready[0] and (flight[0] + need <= cwnd[0] or fr_allow[0])):
                    return
                p = 0
            else:
                p = None
                for k in range(P):
                    q = (self.rr + k) % P
                    if ready[q] and (flight[q] + need <= cwnd[q] or fr_allow[q]):
                        p = q
                        break
                if p is None:
                    return
                self.rr = (p + 1) % P
            if self._burst_spent():
                return
            self.next_new = u + 1
            send(now, u, p, False)

    def _try_send_linger(self, now):
        """MPTCP as the kernel sends: each subflow's retransmissions first, then what was handed to
        it, as its cwnd allows; the writer writes while the connection's buffer has room, and the
        scheduler hands each write to a subflow (mptcp_sendmsg, __mptcp_push_pending)."""
        flags, pending, ready, flight, cwnd = self.flags, self.pending, self.ready, self.flight, self.cwnd
        P, n, size = self.P, self.n, self.size
        if pending:
            waiting = []
            while pending:
                u = heapq.heappop(pending)
                if not flags[u] & LOST:
                    continue  # acked meanwhile, or already resent
                p = self.upath[u]
                if ready[p] and (flight[p] + size(u) <= cwnd[p] or self.fr_allow[p]):
                    self._send(now, u, p, True)
                else:
                    waiting.append(u)
            for u in waiting:
                heapq.heappush(pending, u)
        while True:
            for p in range(P):
                handed = self.handed[p]
                while handed and ready[p] and (flight[p] + size(handed[0]) <= cwnd[p] or self.fr_allow[p]):
                    self._send(now, handed.popleft(), p, False)
            u = self.next_new
            if u < self.written and self.sent_bytes - self.dcum_bytes + size(u) <= self.peer_rwnd:
                p = self._linger_pick()
                if p is not None:
                    self.handed[p].append(u)
                    self.next_new = u + 1
                    continue
            if self.written >= n:
                return
            rtxq = self.written_bytes - self.dcum_bytes - (self.nr_bytes if self.nr else 0)
            if not self._writable(rtxq):
                self.writer_blocked = True
                return
            self.writer_blocked = False
            self.written_bytes += size(self.written)
            self.written += 1

    def _linger_pick(self):
        """mptcp_subflow_get_send: the subflow whose queued skbs (truesize, sent and unacked at its
        level or not yet sent) would leave soonest at its smoothed pacing rate; None when that
        subflow's queue fills its buffer (sk_stream_memory_free; the connection's SO_SNDBUF is
        every subflow's, mptcp_sockopt_sync). The pick moves its smoothed rate toward the current
        one, weighted by a burst of 64 KB against the queue."""
        best = best_linger = None
        queued = [0] * self.P
        for p in range(self.P):
            if not self.ready[p] or self.srtt[p] is None:
                continue
            sp = self.spaces[p]
            queued[p] = (sp.sent - sp.cum + len(self.handed[p])) * self.skb_truesize
            if self.avg_pacing[p] is None:
                self.avg_pacing[p] = self._pacing_rate(p)
            linger = queued[p] / self.avg_pacing[p]
            if best is None or linger < best_linger:
                best, best_linger = p, linger
        if best is None or queued[best] >= self.buffer_bytes:
            return None
        wmem = queued[best]
        self.avg_pacing[best] = ((self.avg_pacing[best] * wmem + self._pacing_rate(best) * MPTCP_SEND_BURST)
                                 / (MPTCP_SEND_BURST + wmem))
        return best

    def _pacing_rate(self, p):
        """tcp_update_pacing_rate: cwnd (or the flight, if larger) per SRTT, times 2 in slow start's
        first half (cwnd < ssthresh / 2), else 1.2; bytes per ns."""
        ratio = 2.0 if self.cwnd[p] < self.ssthresh[p] / 2 else 1.2
        return ratio * max(self.cwnd[p], self.flight[p]) / max(self.srtt[p], 1)

    def _cut_cwnd_to_burst(self, now):
        """usrsctp's Max.Burst: no more than max_burst_cwnd packets may leave at once beyond flight."""
        limit = self.prof.max_burst_cwnd * self.U
        for p in range(self.P):
            if self.flight[p] + limit < self.cwnd[p]:
                self.ssthresh[p] = max(self.ssthresh[p], self.cwnd[p])
                self.cwnd[p] = self.flight[p] + limit
                self._cwnd_changed(now, p)

    def _burst_spent(self):
        """Max.Burst: True when no more packets may go out at this moment; else count one."""
        if self.burst is None:
            return False
        if self.burst == 0:
            return True
        self.burst -= 1
        return False

    def _send(self, now, u, p, rtx):
        sz = self.S if u != self.n - 1 else self.last_size
        tr = self.trace
        sender = tr.sender
        self.fr_allow[p] = False
        if rtx:
            self.txt[u] = -1  # Karn: no RTT sample from retransmitted data
            self.flags[u] = (self.flags[u] | INFL | RTXD) & ~LOST
            self.upath[u] = p
            self.n_retransmissions += 1
            sender.append((now, RTX, p, u, self.sidx[u]))
        else:
            self.txt[u] = now
            self.flags[u] |= INFL
            self.upath[u] = p
            if self.mptcp:
                sp = self.spaces[p]
                self.sidx[u] = len(sp.units)
                sp.units.append(u)
                sp.sent = len(sp.units)
            else:
                self.spaces[0].sent = u + 1
            self.sent_bytes += sz
            if tr.first_data_ns is None:
                tr.first_data_ns = now
            sender.append((now, DATA, p, u, self.sidx[u]))
            # the truth after this first transmission (decision 5); inlined: the hot path
            rtxq_sack = self.sent_bytes - self.dcum_bytes
            rtxq_nr = rtxq_sack - self.nr_bytes
            tr.rtxq.append((len(sender) - 1, now, False, rtxq_sack, rtxq_nr, self.sacked_bytes,
                            self.nr_bytes, self._blocked(rtxq_nr if self.nr else rtxq_sack),
                            self.gap_open))
        self.n_data_packets += 1
        self.flight[p] += sz
        self.outq[p].append(u)
        if self.rto_deadline[p] is None:
            self._arm_rto(now, p)
        if self.prof.cwnd_degrade:
            self._arm_degrade(now, p)
        # the bottleneck: drop-tail queue, serialisation, propagation, random loss
        q = self.linkq[p]
        while q and q[0] <= now:
            q.popleft()
        if len(q) >= self.qcap[p]:
            self.n_queue_drops += 1
            return
        finish = (q[-1] if q else now) + int((sz + self.overhead) * self.ns_per_byte[p])
        q.append(finish)
        if self.bernoulli and not rtx:
            lost = self.first_draw[u] < self.loss[p]
        else:
            lost = self._lost(p, u, rtx)
        if lost or (not rtx and (u in self.drop_units or (
                self.drop_path_packets and (p, self.sidx[u] if self.mptcp else u) in self.drop_path_packets))):
            self.n_random_drops += 1
            return
        self.seq += 1
        heapq.heappush(self.events, (finish + self.delay[p], self.seq, EV_DATA_ARRIVAL, p, u))

    def _arm_rto(self, now, p):
        self.rto_deadline[p] = now + self.rto[p]
        if not self.rto_event[p]:
            self.rto_event[p] = True
            self._push(self.rto_deadline[p], EV_RTO, p)

    def _arm_degrade(self, now, p):
        self.degrade_deadline[p] = now + self.rto[p]
        if not self.degrade_event[p]:
            self.degrade_event[p] = True
            self._push(self.degrade_deadline[p], EV_DEGRADE, p)

    def _on_degrade_event(self, now, p):
        """ns-2's cwnd degrade timer: one RTO without sending on the path halves its cwnd."""
        if not self._timer_due(now, p, self.degrade_deadline, self.degrade_event, EV_DEGRADE):
            return
        S = self.S
        if self.cwnd[p] > self.cfg.initial_cwnd_packets * S:
            self.cwnd[p] = max(self.cwnd[p] // 2, 4 * S)
            self._cwnd_changed(now, p)
        self._arm_degrade(now, p)

    def _heartbeat(self, now, p):
        """A HEARTBEAT on an inactive path: lost with the path's loss rate each way (both drawn
        as it leaves); its ack comes back one propagation RTT later (HEARTBEATs are not queued
        behind data here, nor drawn in the trace)."""
        if self._lost(p, -1, True):
            return
        if self.ack_loss[p] > 0.0 and self._uniform(p, acks=True) < self.ack_loss[p]:
            return
        self._push(now + 2 * self.delay[p], EV_HB_ACK, p, now)

    def _on_heartbeat_ack(self, now, p, sent):
        self.errors[p] = 0
        self._rtt_sample(p, now - sent)

    def _timer_due(self, now, p, deadlines, pending, kind):
        """A lazy timer's event fired: True when the timer is due now; when it was restarted
        since, its event sleeps again until the new deadline; when cancelled, nothing."""
        pending[p] = False
        deadline = deadlines[p]
        if deadline is None:
            return False
        if now < deadline:
            pending[p] = True
            self._push(deadline, kind, p)
            return False
        return True

    def _on_rto_event(self, now, p):
        if not self._timer_due(now, p, self.rto_deadline, self.rto_event, EV_RTO):
            return
        self.n_timeouts += 1
        cfg = self.cfg
        self.rto[p] = min(2 * self.rto[p], int(cfg.rto_max_s * NS))
        if self.prof.linux_sndbuf:
            self.ssthresh[p] = self._linux_ssthresh(p)
        else:
            self.ssthresh[p] = max(self.cwnd[p] // 2, 4 * self.U if self.sctp_like else 2 * self.U)
        self.cwnd[p] = self.U
        self.pba[p] = 0
        self.ca_acked[p] = 0  # tcp_enter_loss: snd_cwnd_cnt = 0
        self.fr_allow[p] = False
        self._cwnd_changed(now, p)
        self.degrade_deadline[p] = None
        sp = self.spaces[p if self.mptcp else 0]
        rec = self.in_recovery[p]
        if rec is not None:
            self.trace.recovery.append((p, rec[0], rec[1], now))
        self.in_recovery[p] = ("rto", now, sp.sent - 1)
        self.refr.clear()  # every unit goes again by the timer
        flags, upath = self.flags, self.upath
        units = sp.units
        for i in range(sp.cum, sp.sent):
            u = units[i] if units is not None else i
            f = flags[u]
            if f & INFL and upath[u] == p:
                flags[u] = (f & ~INFL) | LOST
                self.flight[p] -= self.size(u)
                sp.holes.discard(u)
                heapq.heappush(self.pending, u)
        self.rto_deadline[p] = None
        if self.prof.path_max_retrans:
            self.errors[p] += 1
            if self.errors[p] > self.prof.path_max_retrans:
                self._heartbeat(now, p)
        self._try_send(now)

    def _on_ack_arrival(self, now, p, ack):
        tr = self.trace
        self.n_acks += 1
        tr.sender.append((now, ACK, p, ack, None))
        frame_index = len(tr.sender) - 1
        cum, blocks, rwnd, scum, sblocks = ack
        stale = cum < self.dcum
        # data level: the send buffer
        if not stale and cum > self.dcum:
            self.dcum_bytes += self.range_bytes(self.dcum, cum)
            for s, e in self.dsacked.pop_prefix(cum):
                self.sacked_bytes -= self.range_bytes(s, e)
            for s, e in self.dnr.pop_prefix(cum):
                self.nr_bytes -= self.range_bytes(s, e)
            self.dcum = cum
        data_blocks = blocks if (not self.mptcp or self.nr) else ()
        for s, e in data_blocks:
            self._data_sacked(s, e, self.nr)
        if self.mptcp:
            self._subflow_acked(p, scum, sblocks)
            # decision 12: at the data level a gap is data known received above the DATA ACK
            self.gap_open = self.sacked_bytes > 0
        if not stale:
            if not self.mptcp:
                self.gap_open = bool(blocks)
            self.peer_rwnd = rwnd
        self._truth(now, frame_index, True)
        if self.dcum >= self.n:
            tr.done_ns = now
        # transport level: congestion control and loss recovery
        packets = self.ack_packets.pop(id(ack), 1) if self.dac else 1
        if self.mptcp:
            self._transport_ack(now, self.spaces[p], scum, sblocks)
        elif not stale:
            self._transport_ack(now, self.spaces[0], cum, blocks, packets)
        self._try_send(now)
        self.burst = None

    def _data_sacked(self, s, e, nr):
        """Units [s, e) known received at the data level (non-renegable too when nr); sticky."""
        if s < self.dcum:
            s = self.dcum
        for a, b in self.dsacked.add(s, e):
            self.sacked_bytes += self.range_bytes(a, b)
        if nr:
            for a, b in self.dnr.add(s, e):
                self.nr_bytes += self.range_bytes(a, b)

    def _subflow_acked(self, p, scum, sblocks):
        """Decision 12: the units a subflow ack covers (its cum ack, its SACK blocks) are sacked at the
        data level, renegable, each through the subflow index it was mapped to."""
        units, dcum = self.spaces[p].units, self.dcum
        for s, e in ((0, scum), *sblocks):
            for a, b in self.dsub[p].add(s, e):
                for i in range(a, b):
                    u = units[i]
                    if u >= dcum:
                        self._data_sacked(u, u + 1, False)

    def _transport_ack(self, now, sp, cum, blocks, packets=1):
        if cum < sp.cum:
            return  # stale at this level (RFC 9260 6.2.1 drops it)
        flags, upath, txt, flight = self.flags, self.upath, self.txt, self.flight
        S, last, last_size = self.S, self.n - 1, self.last_size
        units = sp.units
        P = self.P
        flight_before = list(flight)
        earliest = [self._earliest_outstanding(q) for q in range(P)]
        newly_bytes = [0] * P
        newly_max = [-1] * P  # highest space index newly acked, per path
        newly_min = [-1] * P  # lowest, for CMT's DAC
        rtt_unit = [None] * P
        cum_advanced = cum > sp.cum
        cum_paths = [False] * P  # paths with data the cum ack passed (profile restart_timer_on_cum_ack)
        holes = sp.holes
        fast_rtx_acked = False
        if cum_advanced:
            for i in range(sp.cum, cum):
                u = units[i] if units is not None else i
                f = flags[u]
                fast_rtx_acked = fast_rtx_acked or bool(f & FRTX)
                cum_paths[upath[u]] = True
                if not f & SACKED:
                    q = upath[u]
                    if not f & LOST:  # acked data not awaiting a retransmission clears the errors
                        self.errors[q] = 0
                    sz = S if u != last else last_size
                    if f & INFL:
                        flight[q] -= sz
                    newly_bytes[q] += sz
                    newly_max[q] = i
                    if newly_min[q] < 0:
                        newly_min[q] = i
                    if txt[u] >= 0:
                        rtt_unit[q] = u
                flags[u] = (f | ACKED) & ~(INFL | LOST)
                if u in holes:
                    holes.discard(u)
            sp.cum = cum
            sp.sacked.pop_prefix(cum)
            if fast_rtx_acked and self.prof.max_burst:
                self.burst = self.prof.max_burst
        old_high = sp.high
        for s, e in blocks:
            if e <= sp.cum:
                continue
            for a, b in sp.sacked.add(max(s, sp.cum), e):
                for i in range(a, b):
                    u = units[i] if units is not None else i
                    f = flags[u]
                    q = upath[u]
                    sz = S if u != last else last_size
                    if f & INFL:
                        flight[q] -= sz
                    flags[u] = (f | SACKED) & ~(INFL | LOST)
                    newly_bytes[q] += sz
                    if i > newly_max[q]:
                        newly_max[q] = i
                    if newly_min[q] < 0 or i < newly_min[q]:
                        newly_min[q] = i
                    if txt[u] >= 0:
                        rtt_unit[q] = u
                    holes.discard(u)
            if e > sp.high:
                sp.high = e
        for i in range(max(old_high, sp.cum), sp.high):
            u = units[i] if units is not None else i
            f = flags[u]
            if f & INFL and not f & (SACKED | RTXD):
                holes.add(u)
        # miss indications: data sent on the same path below the highest newly acked index; in SCTP
        # fast recovery an ack that advances the cum ack counts for every hole (RFC 9260 7.2.4)
        marker = newly_max
        if self.prof.persistent_htna:
            marker = self.htna = [max(a, b) for a, b in zip(self.htna, newly_max)]
        if holes and self.prof.rack_loss:
            self._rack_loss(now, sp, holes, rtt_unit)
        elif holes:
            sidx = self.sidx
            in_fr = [self.sctp_like and cum_advanced and rec is not None and rec[0] == "fast"
                     for rec in self.in_recovery]  # as the ack arrived
            # DAC (sctp-cmt.cc ~3071-3095): an ack of one path's data that all lies above the hole
            # counts as many misses as the packets it acks
            dac_paths = sum(1 for b in newly_bytes if b) if self.dac else 0
            for u in sorted(holes):
                q = upath[u]
                if sidx[u] < marker[q] or in_fr[q]:
                    step = packets if dac_paths == 1 and newly_min[q] > sidx[u] else 1
                    m = self.miss.get(u, 0) + step
                    if m >= 3:
                        self.miss.pop(u, None)
                        self._fast_retransmit(now, sp, u, q)
                    else:
                        self.miss[u] = m
        if self.refr:
            for u, mark in list(self.refr.items()):
                f = flags[u]
                if f & (SACKED | ACKED):
                    del self.refr[u]
                elif f & INFL and marker[0] >= mark:
                    m = self.miss.get(u, 0) + 1
                    if m >= 3:
                        self.miss.pop(u, None)
                        self._fast_retransmit(now, sp, u, upath[u])
                    else:
                        self.miss[u] = m
        for q in range(P):
            rec = self.in_recovery[q]
            if rec is not None and sp is self.spaces[q if self.mptcp else 0] and sp.cum > rec[2]:
                self.trace.recovery.append((q, rec[0], rec[1], now))
                self.in_recovery[q] = None
            if not newly_bytes[q]:
                continue
            if rtt_unit[q] is not None:
                self._rtt_sample(q, now - txt[rtt_unit[q]])
                if self.prof.hystart and self.cwnd[q] < self.ssthresh[q]:
                    self._hystart(now, q, sp, now - txt[rtt_unit[q]])
            elif self.prof.rto_restored_on_ack and self.srtt[q] is not None:
                self._set_rto(q)
            # RFC 9260 6.3.2 R3 / RFC 6298 5.3: restart only when the earliest outstanding data of
            # the path is acked; SACKs of later data do not keep a lost retransmission's timer alive
            # (ns2: also when the cum ack passes data of the path)
            e = earliest[q]
            if ((self.prof.restart_timer_on_cum_ack and cum_paths[q])
                    or (e is not None and flags[e] & (ACKED | SACKED))):
                if flight[q] > 0:
                    self._arm_rto(now, q)
                else:
                    self.rto_deadline[q] = None
            # growth only on acks that advance the cum point (CMT: any new ack for the path) and
            # only when cwnd was fully used (RFC 9260 7.2.1); never during loss recovery
            # (linux: slow start goes on after an RTO, in the Loss state: tcp_may_raise_cwnd)
            rec = self.in_recovery[q]
            if ((rec is not None and not (self.prof.linux_sndbuf and rec[0] == "rto"))
                    or not (cum_advanced or self.cmt)):
                continue
            if self.prof.linux_sndbuf:
                # tcp_is_cwnd_limited (include/net/tcp.h): in slow start cwnd grows to twice
                # what is in flight, so a buffer-limited sender's cwnd keeps growing there
                if (self.cwnd_limited[q] or flight_before[q] + self.grow_margin > self.cwnd[q]
                        or self.ssthresh[q] > self.cwnd[q] < 2 * flight_before[q]):
                    self._linux_grow(now, q, newly_bytes[q])
                continue
            if flight_before[q] + self.grow_margin <= self.cwnd[q]:
                continue
            if self.cwnd[q] <= self.ssthresh[q]:
                self.cwnd[q] += min(newly_bytes[q], self.prof.slow_start_limit_packets * self.U)
                self._cwnd_changed(now, q)
            else:
                self.pba[q] += newly_bytes[q]
                if self.pba[q] >= self.cwnd[q]:
                    self.pba[q] -= self.cwnd[q]
                    self.cwnd[q] += self.U
                    self._cwnd_changed(now, q)

    def _rack_loss(self, now, sp, holes, rtt_unit):
        """RACK with no reordering seen (tcp_recovery.c: tcp_rack_detect_loss, reo_wnd 0 by
        tcp_rack_reo_wnd): a hole sent before a SACKed segment is lost once three segments are
        SACKed (the reordering degree) or recovery has begun; so every such hole at once. With
        fewer SACKed (profile rack_reorder_timer) the reordering window is min_rtt / 4 (at most
        SRTT): a hole is lost once it has been out the SACKed segment's RTT plus that window, on
        this ack or when the reorder timer, armed for the last hole's moment, fires
        (tcp_rack_reo_timeout)."""
        q = self.spaces.index(sp) if self.mptcp else 0
        if self.in_recovery[q] is None and sum(e - s for s, e in sp.sacked.blocks()) < 3:
            if self.prof.rack_reorder_timer and self.min_rtt[q] is not None:
                u = rtt_unit[q]
                if u is not None:
                    self.rack_rtt[q] = now - self.txt[u]
                if self._rack_reorder_due(now, q, sp, holes):
                    self._rack_mark(now, sp, holes)
            return
        self._rack_mark(now, sp, holes)

    def _rack_reorder_due(self, now, q, sp, holes):
        """True when a hole of path q has waited out RACK's reordering window; else the reorder
        timer is armed for the latest hole's moment (tcp_rack_detect_loss's reo_timeout)."""
        window = min(self.min_rtt[q] // 4, self.srtt[q])
        rtt = self.rack_rtt[q] or self.srtt[q]  # no SACKed first transmission timed yet: SRTT
        latest = None
        for h in holes:
            if self.upath[h] != q or self.sidx[h] >= sp.high or self.txt[h] < 0:
                continue
            due = self.txt[h] + rtt + window
            if due <= now:
                return True
            latest = due if latest is None else max(latest, due)
        if latest is not None:
            self.rack_gen[q] += 1
            self._push(latest, EV_RACK, q, self.rack_gen[q])
        return False

    def _on_rack_timer(self, now, q):
        sp = self.spaces[q if self.mptcp else 0]
        if sp.holes and self.in_recovery[q] is None and self._rack_reorder_due(now, q, sp, sp.holes):
            self._rack_mark(now, sp, sp.holes)
            self._try_send(now)

    def _rack_mark(self, now, sp, holes):
        sidx, upath = self.sidx, self.upath
        for u in sorted(h for h in holes if sidx[h] < sp.high):
            self.miss.pop(u, None)
            self._fast_retransmit(now, sp, u, upath[u])

    def _hystart(self, now, q, sp, rtt):
        """tcp_cubic.c hystart_update / bictcp_hystart_reset: a round lasts until the ack passes
        what was sent when it began; from 16 segments of cwnd on, slow start ends (ssthresh = cwnd)
        when the round's acks, each within 2 ms of the last, span more than half the minimum RTT,
        or the least of its first 8 RTT samples exceeds the minimum by min_rtt/8 within [4, 16] ms."""
        rnd = self.hystart[q]
        if rnd is None or sp.cum > rnd[0]:
            rnd = self.hystart[q] = [sp.sent, now, now, None, 0]
        if self.cwnd[q] < 16 * self.S:
            return
        min_rtt = self.min_rtt[q]
        found = False
        if now - rnd[2] <= 2_000_000:
            rnd[2] = now
            found = now - rnd[1] > min_rtt // 2
        if rnd[4] < 8:
            rnd[3] = rtt if rnd[3] is None else min(rnd[3], rtt)
            rnd[4] += 1
        elif rnd[3] > min_rtt + min(max(min_rtt >> 3, 4_000_000), 16_000_000):
            found = True
        if found:
            self.ssthresh[q] = self.cwnd[q]
            self._cwnd_changed(now, q)

    def _linux_ssthresh(self, q):
        """tcp_cong.c tcp_reno_ssthresh (cwnd/2) or tcp_cubic.c cubictcp_recalc_ssthresh (0.7 cwnd,
        W_max with fast convergence), in whole segments, at least 2."""
        S = self.S
        w = self.cwnd[q] // S
        if self.prof.cc == "cubic":
            c = self.cubic[q]
            c["w_max"] = w * (1024 + 717) // 2048 if w < c["w_max"] else w
            c["epoch"] = None
            return max(w * 717 >> 10, 2) * S
        return max(w >> 1, 2) * S

    def _linux_grow(self, now, q, acked):
        """tcp_slow_start (cwnd += acked, up to ssthresh) then congestion avoidance: Reno's one
        segment per cwnd acked, or cubic's window (RFC 9438 4.2-4.3; tcp_cubic.c bictcp_update)."""
        S = self.S
        if self.cwnd[q] < self.ssthresh[q]:
            step = min(acked, self.ssthresh[q] - self.cwnd[q])
            self.cwnd[q] += step
            acked -= step
            if not acked:
                self._cwnd_changed(now, q)
                return
        per_segment = self._cubic_bytes_per_segment(now, q, acked) if self.prof.cc == "cubic" \
            else self.cwnd[q]
        # tcp_cong_avoid_ai: credit gathered toward a larger per-segment count (a higher window, or
        # cubic's plateau) gives one segment, not all it would buy at today's count
        grow = 0
        if self.ca_acked[q] >= per_segment:
            self.ca_acked[q] = 0
            grow = 1
        self.ca_acked[q] += acked
        if self.ca_acked[q] >= per_segment:
            grow += self.ca_acked[q] // per_segment
            self.ca_acked[q] %= per_segment
        if grow:
            self.cwnd[q] += grow * S
            self._cwnd_changed(now, q)

    def _cubic_bytes_per_segment(self, now, q, acked):
        """Bytes to be acked before cwnd grows by one segment: tcp_cubic.c bictcp_update's ca->cnt
        in the kernel's whole segments, so that cwnd reaches cubic's target W(t + min RTT) in one
        RTT (RFC 9438 4.2): W_max, the origin and the target are whole segments, t and K 1/1024 s;
        the Reno-friendly estimate grows a segment per cwnd * 15 / 8 acked (beta_scale) and
        bounds cnt from above; cnt is at least 2 (1.5 cwnd per RTT at most), and is kept for
        HZ/32 while cwnd is unchanged."""
        S, c = self.S, self.cubic[q]
        cwnd = self.cwnd[q] // S
        c["ack_cnt"] += acked
        if c["epoch"] is not None and c["last_cwnd"] == cwnd and now - c["last_time"] <= NS // 32:
            return c["cnt"] * S
        c["last_cwnd"], c["last_time"] = cwnd, now
        if c["epoch"] is None:
            c["epoch"] = now
            c["ack_cnt"] = acked
            c["tcp_cwnd"] = cwnd
            if c["w_max"] <= cwnd:
                c["k"], c["origin"] = 0, cwnd
            else:
                c["k"] = int(((c["w_max"] - cwnd) * CUBIC_FACTOR) ** (1 / 3))
                c["origin"] = c["w_max"]
        t = (now - c["epoch"] + (self.min_rtt[q] or 0)) * 1024 // NS
        offs = abs(t - c["k"])
        delta = CUBIC_RTT_SCALE * offs ** 3 >> 40
        target = c["origin"] - delta if t < c["k"] else c["origin"] + delta
        cnt = cwnd // (target - cwnd) if target > cwnd else 100 * cwnd
        if c["w_max"] == 0 and cnt > 20:
            cnt = 20  # no loss yet: at least 1/20 of a segment per ack
        step = cwnd * CUBIC_BETA_SCALE >> 3
        while c["ack_cnt"] > step * S:
            c["ack_cnt"] -= step * S
            c["tcp_cwnd"] += 1
        if c["tcp_cwnd"] > cwnd:
            cnt = min(cnt, cwnd // (c["tcp_cwnd"] - cwnd))
        c["cnt"] = max(cnt, 2)
        return c["cnt"] * S

    def _earliest_outstanding(self, q):
        out, flags = self.outq[q], self.flags
        while out and not flags[out[0]] & INFL:
            out.popleft()
        return out[0] if out else None

    def _fast_retransmit(self, now, sp, u, q):
        sz = self.size(u)
        self.flags[u] = (self.flags[u] & ~INFL) | LOST | FRTX
        self.flight[q] -= sz
        sp.holes.discard(u)
        heapq.heappush(self.pending, u)
        self.n_fast_retransmits += 1
        if self.prof.refast_retransmit and self.P == 1 and self.sctp_like:
            self.refr[u] = self.next_new  # a new unit keeps its place in the order
        if self.in_recovery[q] is None:
            if self.sctp_like:
                self.ssthresh[q] = max(self.cwnd[q] // 2, self.prof.fast_recovery_ssthresh_floor_packets * self.U)
            elif self.prof.linux_sndbuf:
                self.ssthresh[q] = self._linux_ssthresh(q)
            else:
                self.ssthresh[q] = max((self.flight[q] + sz) // 2, 2 * self.U)
            self.cwnd[q] = self.ssthresh[q]
            self.pba[q] = 0
            self.ca_acked[q] = 0  # tcp_init_cwnd_reduction: snd_cwnd_cnt = 0
            self.fr_allow[q] = True  # the first retransmission goes out regardless of cwnd
            self.in_recovery[q] = ("fast", now, sp.sent - 1)
            self._cwnd_changed(now, q)

    def _rtt_sample(self, q, r):
        if self.srtt[q] is None:
            self.srtt[q] = r
            self.rttvar[q] = r // 2
        else:
            self.rttvar[q] = (3 * self.rttvar[q] + abs(self.srtt[q] - r)) // 4
            self.srtt[q] = (7 * self.srtt[q] + r) // 8
        if self.min_rtt[q] is None or r < self.min_rtt[q]:
            self.min_rtt[q] = r
        self._set_rto(q)

    def _set_rto(self, q):
        """The RTO from SRTT and RTTVAR (RFC 6298 2.3), clamped; any backoff undone."""
        cfg = self.cfg
        if self.prof.rto_min_on_variance:
            rto = self.srtt[q] + max(4 * self.rttvar[q], int(cfg.rto_min_s * NS))
        else:
            rto = self.srtt[q] + 4 * self.rttvar[q]
        self.rto[q] = min(max(rto, int(cfg.rto_min_s * NS)), int(cfg.rto_max_s * NS))

    # -- receiver --------------------------------------------------------------------------------
    def _on_data_arrival(self, now, p, u):
        if self.record_receiver:
            self.trace.receiver.append((now, DATA, p, u, self.sidx[u]))
        self.last_arrival_path = p
        rset = self.rset
        if u == self.rcum and not rset and not self.mptcp:
            self.rcum = u + 1  # in order, no gaps: the common case, straight to delayed acks
            self._delayed_ack(now, p, u, 0)
            return
        gaps_before = bool(rset)
        dup = False
        if u < self.rcum or rset.contains(u):
            dup = True
        elif u == self.rcum:
            self.rcum = u + 1
            first = rset.first()
            if first is not None and first[0] == self.rcum:
                s, e = rset.pop_first()
                self.rcum = e
                self.ooo_bytes -= self.range_bytes(s, e)
        else:
            rset.add(u, u + 1)
            self.ooo_bytes += self.size(u)
        space = 0
        if self.mptcp:
            space = p
            i = self.sidx[u]
            sset = self.sset[p]
            gaps_before = gaps_before or bool(sset)
            if i < self.scum[p] or sset.contains(i):
                dup = True
            elif i == self.scum[p]:
                self.scum[p] = i + 1
                first = sset.first()
                if first is not None and first[0] == i + 1:
                    self.scum[p] = sset.pop_first()[1]
            else:
                sset.add(i, i + 1)
        gaps_after = bool(rset) or (self.mptcp and bool(self.sset[p]))
        # RFC 9260 6.7 / RFC 5681 4.2: at once on out-of-order data; the packet that fills the
        # last gap at once too, unless the profile acks it by the delayed-ack rule (ns-2); CMT's
        # DAC delays every ack but a duplicate's
        if dup or (not self.dac and (gaps_after or (gaps_before and not self.prof.gap_filler_delayed))):
            self._send_ack(now, p, u)
            return
        self._delayed_ack(now, p, u, space)

    def _delayed_ack(self, now, p, u, space):
        self.ack_pending[space] += 1
        # the last data goes out with SCTP's SACK-IMMEDIATELY bit (RFC 7053; a TCP receiver acks
        # a FIN at once): no delayed-ack wait at the end of the transfer
        if self.ack_pending[space] >= self.cfg.ack_every or self.rcum >= self.n:
            self._send_ack(now, p, u)
        elif not self.delack_armed[space]:
            self.delack_armed[space] = True
            self.delack_gen[space] += 1
            self._push(now + int(self.cfg.delack_s * NS), EV_DELACK, space, self.delack_gen[space])

    def _send_ack(self, now, p, latest=None):
        space = p if self.mptcp else 0
        packets = max(self.ack_pending[space], 1)
        self.ack_pending[space] = 0
        self.delack_armed[space] = False
        proto = self.cfg.protocol
        rblocks = self.rset.blocks()
        scum, sblocks = None, ()
        if proto in ("sctp", "cmt"):
            rwnd = self.cfg.rcvbuf  # unordered delivery: nothing is held
            blocks = tuple(b for b in rblocks[:SCTP_MAX_BLOCKS] if b[1] - self.rcum <= GAP_OFFSET_MAX)
        elif proto == "tcp":
            rwnd = self.cfg.rcvbuf - self.ooo_bytes
            blocks = _recent_first(rblocks, self.rset.block_of(latest) if latest is not None else None,
                                   TCP_MAX_BLOCKS)
        else:
            rwnd = self.cfg.rcvbuf - self.ooo_bytes
            scum = self.scum[p]
            sall = self.sset[p].blocks()
            latest_i = self.sidx[latest] if latest is not None else None
            nd = len(rblocks) if self.nr else 0
            ns = min(len(sall), MPTCP_MAX_BLOCKS - min(nd, 1))
            nd = min(nd, MPTCP_MAX_BLOCKS - ns)
            sblocks = _recent_first(sall, self.sset[p].block_of(latest_i) if latest_i is not None
                                    else None, ns)
            blocks = rblocks[:nd]  # ascending, as the DSS NR blocks must be
        ack = (self.rcum, blocks, rwnd, scum, sblocks)
        if self.record_receiver:
            self.trace.receiver.append((now, ACK, p, ack, None))
        if self.ack_loss[p] > 0.0 and self._uniform(p, acks=True) < self.ack_loss[p]:
            return  # lost on the way back (the receiver's capture still saw it leave)
        if self.dac:
            self.ack_packets[id(ack)] = packets
        self._push(now + self.delay[p], EV_ACK_ARRIVAL, p, ack)


def _recent_first(blocks, latest_block, limit):
    """RFC 2018's order: the block holding the latest arrival first, then the others, highest
    first (the ones most recently reported before)."""
    if limit <= 0 or not blocks:
        return ()
    ordered = [latest_block] if latest_block is not None else []
    for b in reversed(blocks):
        if len(ordered) >= limit:
            break
        if b != latest_block:
            ordered.append(b)
    return tuple(ordered[:limit])
