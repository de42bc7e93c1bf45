"""The parameters of one lab run, checked before anything starts (a bad one is a usage error)."""

from dataclasses import asdict, dataclass

STACKS = ("usrsctp", "linux-tcp", "linux-mptcp", "usrsctp-udp")
LINUX_STACKS = ("linux-tcp", "linux-mptcp")
CONGESTION_CONTROLS = ("cubic", "bbr", "reno")  # linux stacks: TCP_CONGESTION (each subflow on mptcp)
# usrsctp-udp: usrsctp multi-homed over UDP encapsulation in namespaces, CMT on with 2+ paths
MULTIPATH_STACKS = ("linux-mptcp", "usrsctp-udp")  # the stacks that take one --loss/--delay/--bandwidth per path


@dataclass(frozen=True)
class LabConfig:
    stack: str = "usrsctp"
    ack: str = "sack"
    sndbuf: int = 32768
    rcvbuf: int = 1 << 20
    bytes: int = 1_000_000
    message: int = 1000  # bytes per write: one DATA chunk / segment, as the simulator's payload
    loss: float = 0.01
    ack_loss: float = 0.0
    loss_model: str = "bernoulli"
    burst: float = 2.0
    delay_ms: float = 45.0  # one way
    bandwidth_mbps: float = 100.0
    queue: int = 100
    seed: int = 1
    unordered: bool = False
    timeout_s: float = 300.0
    rto_min_ms: int = 0  # 0: the stack's own default
    sack_delay_ms: int = 0
    # usrsctp's sctp_do_drain (on by default): a receiver that may renege reports ordered data held
    # behind a gap in R blocks only; with drain off it NR-acks everything it holds
    drain: bool = True
    # paths after the first, each (loss, delay_ms, bandwidth_mbps); the first is loss/delay_ms/bandwidth_mbps
    more_paths: tuple = ()
    # virtual: the usrsctp lab's one event loop on a clock of its own (deterministic, faster than real
    # time); real: threads against the machine's clock. None: virtual for usrsctp, real for the rest
    clock: str = None
    # linux stacks: the congestion control ("": the kernel's default) and whether the sender's device
    # segments (GSO/TSO on, as real hosts capture: the sender's capture shows segments of many MSS)
    cc: str = ""
    gso: bool = False
    # the path's IP MTU (usrsctp); 0: the stack's AF_CONN default, 1280-byte SCTP packets, which cut a
    # message longer than 1252 bytes into two DATA chunks
    mtu: int = 0

    def __post_init__(self):
        if self.clock is None:
            object.__setattr__(self, "clock", "virtual" if self.stack == "usrsctp" else "real")
        self._check()

    def _check(self):
        problems = []
        if self.stack not in STACKS:
            problems.append(f"stack must be one of {', '.join(STACKS)}")
        if self.ack not in ("sack", "nrsack"):
            problems.append("ack must be sack or nrsack")
        if self.stack in ("linux-tcp", "linux-mptcp") and self.ack == "nrsack":
            problems.append(f"{self.stack} has no NR-SACK: use --ack sack (the analyzer's what-if shows "
                            "what NR-SACKs would have freed)")
        if self.more_paths and self.stack not in MULTIPATH_STACKS:
            problems.append(f"{self.stack} runs over one path: give one --loss, --delay and --bandwidth")
        if self.stack == "linux-mptcp" and len(self.more_paths) != 1:
            problems.append("linux-mptcp runs 2 subflows over 2 paths: give one or two values per path option")
        if self.stack == "usrsctp-udp" and len(self.more_paths) > 7:
            problems.append("usrsctp-udp runs over 1 to 8 paths")
        if self.loss_model not in ("bernoulli", "gilbert"):
            problems.append("loss model must be bernoulli or gilbert")
        for name in ("rcvbuf", "bytes", "message", "queue"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1")
        if self.sndbuf < (0 if self.stack in LINUX_STACKS else 1):
            problems.append("sndbuf must be at least 1 (0, the kernel's autotuning, on linux stacks only)")
        if self.stack not in LINUX_STACKS and (self.cc or self.gso):
            problems.append(f"{self.stack} has no choice of congestion control or GSO (linux stacks only)")
        if self.cc and self.cc not in CONGESTION_CONTROLS:
            problems.append(f"cc must be one of {', '.join(CONGESTION_CONTROLS)}")
        if self.sndbuf > 1 << 30 or self.rcvbuf > 1 << 30:
            problems.append("sndbuf and rcvbuf must be at most 1 GiB")
        if self.message > 65000:
            problems.append("message must be at most 65000 bytes")
        if self.queue > 100000:
            problems.append("queue must be at most 100000 packets")
        losses = [p[0] for p in self.paths()] + [self.ack_loss]
        for name, value in zip(["loss"] * (len(losses) - 1) + ["ack_loss"], losses):
            if not 0 <= value < 1:
                problems.append(f"{name} must be in [0, 1)")
        if self.burst < 1:
            problems.append("burst must be at least 1 packet")
        if not all(0 <= p[1] <= 10_000 for p in self.paths()):
            problems.append("delay must be in [0, 10000] ms")
        if not all(0 < p[2] <= 100_000 for p in self.paths()):
            problems.append("bandwidth must be in (0, 100000] Mbit/s")
        if not 0 <= self.seed < 2**63:
            problems.append("seed must be in [0, 2^63)")
        if not 0 < self.timeout_s <= 86400:
            problems.append("timeout must be in (0, 86400] s")
        if self.rto_min_ms < 0 or self.sack_delay_ms < 0:
            problems.append("rto-min and sack-delay must not be negative")
        if self.mtu and not 576 <= self.mtu <= 65535:
            problems.append("mtu must be in [576, 65535] bytes (0: the stack's default)")
        if self.mtu and self.stack != "usrsctp":
            problems.append(f"{self.stack} takes its MTU from its interfaces: --mtu is usrsctp's")
        if self.clock not in ("virtual", "real"):
            problems.append("clock must be virtual or real")
        elif self.clock == "virtual" and self.stack != "usrsctp":
            problems.append(f"{self.stack} runs in real time only (--clock real): the virtual clock is the "
                            "usrsctp lab's own event loop")
        if problems:
            raise ValueError("; ".join(dict.fromkeys(problems)))

    def paths(self):
        """Every path's (loss, delay_ms, bandwidth_mbps), the first path first."""
        return [(self.loss, self.delay_ms, self.bandwidth_mbps), *self.more_paths]

    def as_dict(self):
        return asdict(self)
