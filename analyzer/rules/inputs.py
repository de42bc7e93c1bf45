"""Capture -> the rules' input: per flow, one `Event` per SCTP chunk / TCP segment / MPTCP mapping or
DATA ACK, in capture order, with serial numbers unwrapped to 64 bit per sequence space (flows.unwrap32)
and blocks as unwrapped [lo, hi) units next to their wire values.

Units: SCTP TSNs (a DATA chunk is [tsn, tsn + 1), a cum ack c means "first unit not acked" c + 1);
TCP sequence numbers (SYN and FIN count one); MPTCP data sequence numbers.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from nrsack.analyzer import events as E, flows as F

TWO32 = 1 << 32

# Event kinds
DATA, ACK = "data", "ack"
INIT, INIT_ACK, SYN, SYN_ACK = "init", "init-ack", "syn", "syn-ack"
FSACK_INIT, FSACK_ACK, FSACK_COMPLETE = "fsack-init", "fsack-ack", "fsack-complete"
MALFORMED, END = "malformed", "end"  # a reader finding; the end of a flow's events
KINDS = (DATA, ACK, INIT, INIT_ACK, SYN, SYN_ACK, FSACK_INIT, FSACK_ACK, FSACK_COMPLETE, MALFORMED, END)
FSACK_KINDS = {0xA0: FSACK_INIT, 0xA1: FSACK_ACK, 0xA2: FSACK_COMPLETE}


class Event(NamedTuple):  # a NamedTuple: built once per chunk / segment, cheaply
    index: float          # capture order (event index; reader findings sort after their frame's events)
    frame: int
    time_ns: int
    kind: str
    level: str            # sctp, tcp, mptcp (data level)
    side: int             # flow side that sent it
    sender: int           # data-sender side of the direction it concerns
    conn: int = -1        # reader conn (SCTP path, TCP connection, MPTCP subflow)
    src: str = ""         # source / destination address of the packet
    dst: str = ""
    lo: int = 0           # data: units [lo, hi)
    hi: int = 0
    cum: int = 0          # ack: first unit not cum-acked
    r: tuple = ()         # ack: renegable blocks [lo, hi) (SCTP R / SACK gap, TCP SACK)
    nr: tuple = ()        # ack: non-renegable blocks [lo, hi) (SCTP NR, TCP NR-SACK, MPTCP DSS NR)
    wire_r: tuple = ()    # the same as on the wire: SCTP (start, end) offsets, TCP (left, right) edges
    wire_nr: tuple = ()   # (SCTP offsets, TCP edges, MPTCP (start, end) offsets)
    chunk: int = -1       # SCTP chunk type
    flags: int = 0        # reader EV_* flags
    tcp_flags: int = 0
    aux: int = 0          # FSACK timestamp; MPTCP subflow sequence number of the mapping
    address: str = ""     # FSACK-COMPLETE address
    wire_seq: int = 0     # data: TSN / sequence number / DSN as on the wire; ack: cum ack / ack number
    never_renege: bool = False  # TCP ack from a never-renege receiver: its SACK blocks are NR
    rule: str = ""        # malformed: the rule the reader named (GEN-01, NR-05, TN-05, MN-02)
    reason: str = ""

    @property
    def receiver(self):
        return 1 - self.sender


def display(unit):
    """An unwrapped unit as its 32-bit wire value (what a reader of the capture sees)."""
    return int(unit) % TWO32


@dataclass
class FlowInput:
    flow: F.Flow
    events: list           # Event, capture order
    endpoints: dict        # (level, conn, sender) -> "src -> dst"
    addresses: list        # per side: every address (INIT / INIT-ACK parameters and packet sources)
    vantage: list          # per sender side: analysis.vantage()


class Columns:
    """The reader's columns as Python lists: per-event scalars are read one at a time while building events,
    and list indexing is many times cheaper than numpy scalar access."""

    NAMES = ("frame", "time_ns", "conn", "dir", "chunk", "flags", "tcp_flags", "seq", "ack", "aux", "len", "dsn",
             "data_ack", "dss_len", "blk_start", "blk_count")

    def __init__(self, cap, side_of):
        for name in self.NAMES:
            setattr(self, name, cap.ev[name].tolist())
        self.side_of = side_of
        self.side = side_of.tolist()
        self.frame_array = cap.ev["frame"]
        self.conns = cap.conns
        self.block_lo, self.block_hi = cap.blocks["lo"].tolist(), cap.blocks["hi"].tolist()
        self.block_kind = cap.blocks["kind"].tolist()

    def blocks_of(self, row, kinds):
        start = self.blk_start[row]
        stop = start + self.blk_count[row]
        return [(lo, hi) for lo, hi, k in zip(self.block_lo[start:stop], self.block_hi[start:stop],
                                              self.block_kind[start:stop]) if k in kinds]


def _sctp(cap, cols, flow, rows, out, endpoints, far):
    sides = cols.side_of[rows]
    ev = cap.ev
    chunk = ev["chunk"][rows]
    for sender in (0, 1):
        data = (sides == sender) & (chunk == 0)
        acks = (sides != sender) & ((chunk == 3) | (chunk == 16))
        init = (sides == sender) & (chunk == (1 if sender == 0 else 2))
        sel = rows[data | acks | init]
        raw = np.where(ev["chunk"][sel] == 0, ev["seq"][sel], np.where(np.isin(ev["chunk"][sel], (1, 2)),
                       ev["seq"][sel] - np.uint32(1), ev["ack"][sel]))
        u, keep = F.unwrap32_guarded(raw, None, cols.frame_array[sel], far)  # rows are in capture order already
        sel, u = sel[keep], u[keep]
        key = ("sctp", -1, sender)
        endpoints[key] = f"{flow.endpoints[sender]} -> {flow.endpoints[1 - sender]}"
        for row, value in zip(sel.tolist(), u.tolist()):
            c = cols.chunk[row]
            base = _base(cols, row, sender)
            if c == 0:
                out.append(Event(kind=DATA, level="sctp", lo=value, hi=value + 1, wire_seq=cols.seq[row], **base))
            elif c in (1, 2):
                # INIT / INIT-ACK: initial TSN - 1 is the cum ack of "nothing sent yet"
                out.append(Event(kind=INIT if c == 1 else INIT_ACK, level="sctp", cum=value + 1, lo=value + 1,
                                 hi=value + 1, wire_seq=cols.seq[row], **base))
            else:
                r = cols.blocks_of(row, (E.BK_R,))
                nr = cols.blocks_of(row, (E.BK_NR,))
                out.append(Event(kind=ACK, level="sctp", cum=value + 1, wire_seq=cols.ack[row],
                                 r=tuple((value + s, value + e + 1) for s, e in r),
                                 nr=tuple((value + s, value + e + 1) for s, e in nr),
                                 wire_r=tuple(r), wire_nr=tuple(nr), **base))
    fsack = rows[np.isin(chunk, list(FSACK_KINDS))]
    for row in fsack.tolist():
        base = _base(cols, row, None)
        if cols.chunk[row] == 0xA1:
            base["sender"] = 1 - base["side"]  # the FSACK-ACK answers for the data sender's direction
        address = cols.blocks_of(row, (E.BK_ADDR,))
        out.append(Event(kind=FSACK_KINDS[cols.chunk[row]], level="sctp", aux=cols.aux[row],
                         address=E.block_address(*address[0]) if address else "", **base))


def _base(cols, row, sender):
    """Fields every event has; sender None: the chunk's own side (flow-level events)."""
    c = cols.conns[cols.conn[row]]
    src, dst = (c.addr_a, c.addr_b) if cols.dir[row] == 0 else (c.addr_b, c.addr_a)
    side = cols.side[row]
    return dict(index=float(row), frame=cols.frame[row], time_ns=cols.time_ns[row], side=side,
                sender=side if sender is None else sender, conn=cols.conn[row], src=src, dst=dst,
                chunk=cols.chunk[row], flags=cols.flags[row], tcp_flags=cols.tcp_flags[row])


def _tcp(cap, cols, flow, rows, out, endpoints, far):
    sides = cols.side_of[rows]
    """TCP level of every connection / subflow of the flow."""
    ev = cap.ev
    for conn in flow.conns:
        sel_all = rows[ev["conn"][rows] == conn]
        s_all = sides[ev["conn"][rows] == conn]
        tf = ev["tcp_flags"][sel_all]
        c = cap.conns[conn]
        for sender in (0, 1):
            mine = s_all == sender
            syn = mine & ((tf & E.TCP_SYN) != 0)
            data = mine & ((ev["len"][sel_all] > 0) | ((tf & E.TCP_FIN) != 0)) & ((tf & E.TCP_RST) == 0)
            acks = ~mine & ((ev["flags"][sel_all] & E.ACK) != 0) & ((tf & E.TCP_RST) == 0)
            sel = sel_all[syn | data | acks]
            is_ack = acks[syn | data | acks]
            raw = np.where(is_ack, ev["ack"][sel], ev["seq"][sel])
            u, keep = F.unwrap32_guarded(raw, None, cols.frame_array[sel], far)
            sel, u, is_ack = sel[keep], u[keep], is_ack[keep]
            # the sender is the conn's endpoint A when its own segments go A -> B (dir 0)
            sender_is_b = int(ev["dir"][sel_all[mine][0]]) if mine.any() else 1 - int(ev["dir"][sel_all[0]])
            a, b = c.endpoint(sender_is_b), c.endpoint(1 - sender_is_b)
            endpoints[("tcp", conn, sender)] = f"{a} -> {b}"
            never = flow.never_renege[1 - sender]
            for row, value, ack in zip(sel.tolist(), u.tolist(), is_ack.tolist()):
                base = _base(cols, row, sender)
                flags = cols.tcp_flags[row]
                if ack:
                    sack = cols.blocks_of(row, (E.BK_TCP_SACK,))
                    nr = cols.blocks_of(row, (E.BK_TCP_NR,))
                    near = lambda edges: tuple((int(F.near(value, lo)), int(F.near(value, hi))) for lo, hi in edges)
                    out.append(Event(kind=ACK, level="tcp", cum=value, wire_seq=cols.ack[row], r=near(sack),
                                     nr=near(nr), wire_r=tuple(sack), wire_nr=tuple(nr), never_renege=never, **base))
                else:
                    syn_bit = 1 if flags & E.TCP_SYN else 0
                    length = cols.len[row] + syn_bit + (1 if flags & E.TCP_FIN else 0)
                    if syn_bit:
                        out.append(Event(kind=SYN_ACK if flags & 0x10 else SYN, level="tcp", lo=value, hi=value + 1,
                                         cum=value + 1, wire_seq=cols.seq[row], **base))
                    if length > syn_bit:
                        out.append(Event(kind=DATA, level="tcp", lo=value + syn_bit, hi=value + length,
                                         wire_seq=cols.seq[row], **dict(base, index=base["index"] + 0.25)))


def _mptcp(cap, cols, flow, rows, out, endpoints, far):
    sides = cols.side_of[rows]
    """MPTCP data level: DSS mappings and DATA ACKs (with their NR blocks) of every subflow."""
    ev = cap.ev
    fl = ev["flags"][rows]
    for sender in (0, 1):
        data = (sides == sender) & ((fl & E.DSS_MAP) != 0) & (ev["dss_len"][rows] > 0)
        acks = (sides != sender) & ((fl & E.DATA_ACK) != 0)
        sel = rows[data | acks]
        is_ack = acks[data | acks]
        raw = np.where(is_ack, ev["data_ack"][sel], ev["dsn"][sel]) & np.uint64(0xFFFFFFFF)
        u, keep = F.unwrap32_guarded(raw, None, cols.frame_array[sel], far)
        sel, u, is_ack = sel[keep], u[keep], is_ack[keep]
        endpoints[("mptcp", -1, sender)] = f"{flow.endpoints[sender]} -> {flow.endpoints[1 - sender]}"
        for row, value, ack in zip(sel.tolist(), u.tolist(), is_ack.tolist()):
            base = dict(_base(cols, row, sender), index=float(row) + 0.5)
            if ack:
                nr = cols.blocks_of(row, (E.BK_MPTCP_NR,))
                out.append(Event(kind=ACK, level="mptcp", cum=value, wire_seq=cols.data_ack[row],
                                 nr=tuple((value + s, value + e) for s, e in nr), wire_nr=tuple(nr), **base))
            else:
                out.append(Event(kind=DATA, level="mptcp", lo=value, hi=value + cols.dss_len[row],
                                 aux=cols.aux[row], wire_seq=cols.dsn[row], **base))


def far_reason(count):
    return (f"{count} ack{'s' if count != 1 else ''} or segment{'s' if count != 1 else ''} more than 2^30 from "
            f"the one before (far outside any window): ignored, never adopted as the reference")


def _malformed(cap, cols, flow_of):
    """Reader findings as events, in the flow of their frame's events (None: no flow)."""
    frame_rows = {f: i for i, f in enumerate(cols.frame)}  # the last event of each frame
    found = [(frame, "GEN-01", reason) for frame, reason in cap.findings] + list(cap.rule_findings)
    out = {}
    for frame, rule_id, reason in found:
        row = frame_rows.get(frame)
        flow = int(flow_of[row]) if row is not None else -1
        side = cols.side[row] if row is not None else 0
        out.setdefault(flow, []).append(Event(index=(row if row is not None else -1) + 0.75, frame=int(frame),
                                              time_ns=cols.time_ns[row] if row is not None else 0, kind=MALFORMED,
                                              level="", side=side, sender=1 - side, rule=rule_id, reason=reason))
    return out


def flow_inputs(cap, flows, flow_of, side_of, vantage):
    """-> ([FlowInput], events of reader findings outside any flow)."""
    cols = Columns(cap, side_of)
    malformed = _malformed(cap, cols, flow_of)
    order = np.argsort(flow_of, kind="stable")  # rows of each flow, in capture order, in one pass
    bounds = np.searchsorted(flow_of[order], [flow.id for flow in flows] + [len(flows)])
    inputs = []
    for k, flow in enumerate(flows):
        rows = order[bounds[k]:bounds[k + 1]]
        out, endpoints, far = [], {}, F.FarSerials()
        if flow.protocol == "sctp":
            _sctp(cap, cols, flow, rows, out, endpoints, far)
        else:
            _tcp(cap, cols, flow, rows, out, endpoints, far)
            if flow.protocol == "mptcp":
                _mptcp(cap, cols, flow, rows, out, endpoints, far)
        out.extend(malformed.get(flow.id, []))
        if far.count:  # as the analyzer: left out of every rule's state, and said once per flow
            row = int(np.flatnonzero(cols.frame_array[rows] == far.first_frame)[0])
            out.append(Event(index=float(rows[row]) + 0.75, frame=far.first_frame, time_ns=cols.time_ns[rows[row]],
                             kind=MALFORMED, level="", side=cols.side[rows[row]], sender=1 - cols.side[rows[row]],
                             rule="GEN-01.note", reason=far_reason(far.count)))
        out.sort(key=lambda e: (e.index, e.level != "tcp"))
        addresses = [_side_addresses(flow, out, side) for side in (0, 1)]
        inputs.append(FlowInput(flow, out, endpoints, addresses, [vantage(flow, s) for s in (0, 1)]))
    return inputs, malformed.get(-1, [])


def _side_addresses(flow, events, side):
    seen = list(flow.addresses[side])
    primary = flow.endpoints[side].rpartition(":")[0].strip("[]")
    for address in [primary] + [e.src for e in events if e.side == side and e.src]:
        if address not in seen:
            seen.append(address)
    return seen
