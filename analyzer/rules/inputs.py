"""The rules' input: one `Event` per SCTP chunk / TCP segment / MPTCP mapping or DATA ACK that a rule must
see, made from a chunk of the capture and the serials the analyzer's levels unwrapped (flows.py,
_levels.c): nothing is unwrapped here. An ack's block edges are the units its level placed them at (the
level's part, lane_blocks), with their wire values kept beside them; an INIT / SYN, which no level feeds
on, is unwrapped by the core's rule against its level's space (start_event). checker.py decides which
rows become Events.

Units: SCTP TSNs (a DATA chunk is [tsn, tsn + 1), a cum ack c means "first unit not acked" c + 1);
TCP sequence numbers (a segment's data [seq, seq + len); SYN / SYN-ACK events mark the ISN); MPTCP
data sequence numbers.
"""

from typing import NamedTuple

import numpy as np

from nrsack.analyzer.read import events as E
from nrsack.analyzer.state import flows as F

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
    older: bool = False   # ack: maybe sent before an ack already seen (the core's fact): judges no revocation
    # the NR ledger's facts (analyzer/rules/_ledger.c NrLedger, on the state before the event): an ack's NR-acked
    # ranges above its cum that it leaves out (SCTP: every one; TCP / MPTCP: those inside its R blocks or its
    # NR blocks' span, decisions.md 16) as their count and the first (lo, hi, frame of its NR ack); data: the
    # first NR-acked range it overlaps, clipped, as (lo, hi, frame), or ()
    lost_count: int = 0
    lost: tuple = ()
    nr_hit: tuple = ()
    rule: str = ""        # malformed: the rule the reader named (GEN-01, NR-05, TN-05, MN-02)
    reason: str = ""

    @property
    def receiver(self):
        return 1 - self.sender


def display(unit):
    """An unwrapped unit as its 32-bit wire value (what a reader of the capture sees)."""
    return int(unit) % TWO32


def far_reason(count):
    return (f"{count} ack{'s' if count != 1 else ''} or segment{'s' if count != 1 else ''} more than 2^30 from "
            f"the one before (far outside any window): ignored, never adopted as the reference")




# ---- a chunk's rows -> Events, only for the rows a rule must see (checker.py picks them) ----

FIELD = {name: i for i, name in enumerate(E.EVENT_DTYPE.names)}
_FRAME, _TIME, _CONN, _DIR, _CHUNK, _FLAGS, _TCP_FLAGS = (FIELD[n] for n in ("frame", "time_ns", "conn", "dir", "chunk",
                                                                              "flags", "tcp_flags"))
_SEQ, _ACK, _AUX, _DSN, _DATA_ACK = (FIELD[n] for n in ("seq", "ack", "aux", "dsn", "data_ack"))
_BLK_START, _BLK_COUNT = FIELD["blk_start"], FIELD["blk_count"]
LEVEL_OFFSET = {"sctp": 0.0, "tcp": 0.25, "mptcp": 0.5}  # a segment's data after its SYN, its mapping after both


class ChunkRows:
    """One chunk of the capture, read row by row only where an Event is needed (one .item() per row)."""

    def __init__(self, cap, side_of):
        self.cap, self.side_of = cap, side_of
        self.blocks = cap.blocks
        self.offset, self.conns = cap.offset, cap.conns  # (what base() reads)
        self.ends = {}  # conn -> (its endpoint A, B): a Conn costs microseconds, a SYN and its SYN-ACK share one

    @classmethod
    def of_rows(cls, offset, conns, sides):
        """base() of some rows of a chunk no longer held: its first event index, the capture's conns, {row: side}
        of those rows (a PlainChunk's start events)."""
        rows = cls.__new__(cls)
        rows.cap = rows.blocks = None
        rows.offset, rows.conns, rows.side_of, rows.ends = offset, conns, sides, {}
        return rows

    def record(self, row):
        return self.cap.ev[row].item()

    def blocks_of(self, rec, kinds):
        start, count = rec[_BLK_START], rec[_BLK_COUNT]
        if not count:
            return []
        b = self.blocks[start:start + count]
        return [(lo, hi) for lo, hi, kind in zip(b["lo"].tolist(), b["hi"].tolist(), b["kind"].tolist()) if kind in kinds]

    def base(self, row, rec, sender=None, offset=0.0):
        """Fields every event has; sender None: the chunk's own side (flow-level events)."""
        ends = self.ends.get(rec[_CONN])
        if ends is None:
            c = self.conns[rec[_CONN]]
            ends = self.ends[rec[_CONN]] = c.addr_a, c.addr_b
        src, dst = ends if rec[_DIR] == 0 else ends[::-1]
        side = int(self.side_of[row])
        return dict(index=self.offset + row + offset, frame=rec[_FRAME], time_ns=rec[_TIME], side=side,
                    sender=side if sender is None else sender, conn=rec[_CONN], src=src, dst=dst, chunk=rec[_CHUNK],
                    flags=rec[_FLAGS], tcp_flags=rec[_TCP_FLAGS])


def lane_event(rows: ChunkRows, level, sender, row, kind, lo, hi, never_renege=False, older=False, facts=None,
               blocks=((), (), (), ())):
    """The Event of one row a level fed to the scoreboard: data [lo, hi) or an ack whose cum is `hi` (SCTP:
    cum TSN + 1) or `lo` (TCP, MPTCP), unwrapped by the level; blocks: an ack's (r, nr, wire_r, wire_nr)
    (ack_blocks). older: the scoreboard core's fact on an ack (maybe sent before one already seen,
    decisions.md 46); facts: the NR ledger's row (count, lo, hi, frame, r_and_nr)."""
    rec = rows.record(row)
    base = rows.base(row, rec, sender, LEVEL_OFFSET[level] if kind == 0 else 0.0)
    if facts is not None and facts[0]:
        if kind == 0:
            base["nr_hit"] = tuple(facts[1:4])
        else:
            base["lost_count"], base["lost"] = facts[0], tuple(facts[1:4])
    if kind != 0:
        base["older"] = older
    if kind == 0 and level == "mptcp":
        return Event(kind=DATA, level="mptcp", lo=lo, hi=hi, wire_seq=rec[_DSN], **base)
    if kind == 0:
        return Event(kind=DATA, level=level, lo=lo, hi=hi, wire_seq=rec[_SEQ], **base)
    r, nr, wire_r, wire_nr = blocks
    if level == "sctp":
        return Event(kind=ACK, level="sctp", cum=hi, wire_seq=rec[_ACK], r=r, nr=nr, wire_r=wire_r, wire_nr=wire_nr,
                     **base)
    if level == "tcp":
        return Event(kind=ACK, level="tcp", cum=lo, wire_seq=rec[_ACK], r=r, nr=nr, wire_r=wire_r, wire_nr=wire_nr,
                     never_renege=never_renege, **base)
    return Event(kind=ACK, level="mptcp", cum=lo, wire_seq=rec[_DATA_ACK], nr=nr, wire_nr=wire_nr, **base)


# per level: the wire block kinds of its renegable and non-renegable lists (MPTCP: its wire blocks are NR only)
LEVEL_BLOCKS = {"sctp": (E.BK_R, E.BK_NR), "tcp": (E.BK_TCP_SACK, E.BK_TCP_NR), "mptcp": (-1, E.BK_MPTCP_NR)}


class LaneBlocks(NamedTuple):
    """The wire blocks of a lane's acks, in wire order: per lane row (bstart, bcount) into the others; owner:
    the lane row of each; (blo, bhi) the units the level placed them at; nr: a non-renegable block by its
    wire kind (not the level's bnr, which on TCP also marks a never-renege receiver's SACK blocks: TN-02
    and the rules' r / nr read the option each came in); (wlo, whi) as on the wire (SCTP Start / End
    offsets, TCP edges, MPTCP offsets)."""

    bstart: np.ndarray
    bcount: np.ndarray
    owner: np.ndarray
    blo: np.ndarray
    bhi: np.ndarray
    nr: np.ndarray
    wlo: np.ndarray
    whi: np.ndarray


def lane_blocks(cap, level, rows, is_ack, part):
    """The wire blocks of a level's ack rows (numpy, vectorised): their units from the level's part (a
    flows.ScoreboardInput whose rows are `rows`), their kinds and wire values from the chunk's blocks.
    The level keeps, per ack, its blocks of the level's kinds in wire order (_levels.c block_wanted, all
    of them: the malformed ones too; flows.MptcpLevel: the DATA ACK's NR blocks, then the renegable
    blocks decision 12 derives from subflow acks, which are no wire blocks: bnr 0)."""
    n = len(rows)
    count = np.where(is_ack, cap.ev["blk_count"][rows], 0).astype(np.int64)
    owner = np.repeat(np.arange(n), count)
    at = F.expand_runs(cap.ev["blk_start"][rows], count)
    kind = cap.blocks["kind"][at]  # field by field: gathering the records (with their pad) costs 15 times more
    r_kind, nr_kind = LEVEL_BLOCKS[level]
    keep = (kind == r_kind) | (kind == nr_kind)
    owner, at, nr = owner[keep], at[keep], (kind[keep] == nr_kind).astype(np.int8)
    bcount = np.bincount(owner, minlength=n).astype(np.int64)
    placed = np.where(is_ack, part.bcount, 0).astype(np.int64)
    pick = F.expand_runs(part.bstart, placed)
    if level == "mptcp":
        wire = part.bnr[pick] == 1
        pick = pick[wire]
        placed = np.bincount(np.repeat(np.arange(n), placed)[wire], minlength=n)
    if not np.array_equal(placed, bcount):  # units paired with another block's wire values: never silently
        raise RuntimeError(f"{level} level placed {int(placed.sum())} blocks where its acks carry {len(at)}")
    return LaneBlocks(np.cumsum(bcount) - bcount, bcount, owner, part.blo[pick], part.bhi[pick], nr,
                      cap.blocks["lo"][at].astype(np.int64), cap.blocks["hi"][at].astype(np.int64))


def ack_blocks(blocks: LaneBlocks, acks):
    """Per lane row in `acks` (acks): its (r, nr, wire_r, wire_nr) as tuples of (lo, hi) pairs, the Event's."""
    count = blocks.bcount[acks]
    pick = F.expand_runs(blocks.bstart[acks], count)
    blo, bhi, nr = blocks.blo[pick].tolist(), blocks.bhi[pick].tolist(), blocks.nr[pick].tolist()
    wlo, whi = blocks.wlo[pick].tolist(), blocks.whi[pick].tolist()
    out, k = [], 0
    for c in count.tolist():
        placed, wire = ([], []), ([], [])
        for j in range(k, k + c):
            placed[nr[j]].append((blo[j], bhi[j]))
            wire[nr[j]].append((wlo[j], whi[j]))
        out.append((tuple(placed[0]), tuple(placed[1]), tuple(wire[0]), tuple(wire[1])))
        k += c
    return out


def start_event(rows: ChunkRows, row, level, sender, space, rec=None):
    """INIT / INIT-ACK (the initial TSN - 1 is the cum ack of "nothing sent yet") or SYN / SYN-ACK (the ISN
    counts one) of direction `sender`, unwrapped by the core's rule (flows.unwrap32) against its level's
    serial space `space` (None: fresh). The level's space stays as it is: the level feeds on no INIT / SYN
    (its handshake anchors it, flows.handshake_space), so where the capture holds one it unwraps its
    serial here, once. rec: the row's record when read already (rows.record)."""
    rec = rows.record(row) if rec is None else rec
    return start_event_at(rows, row, level, sender, start_serial(rec, level, space), rec)


def start_serial(rec, level, space):
    """The unwrapped serial of a start row's record (start_event's lo; SCTP: its cum - 1)."""
    wire = (rec[_SEQ] - 1) % TWO32 if level == "sctp" else rec[_SEQ]
    return F.unwrap_one(wire, space)  # (a far one counts nowhere here)


def start_event_at(rows: ChunkRows, row, level, sender, value, rec):
    """start_event with its serial unwrapped already (start_serial)."""
    base = rows.base(row, rec, sender)
    if level == "sctp":
        return Event(kind=INIT if rec[_CHUNK] == 1 else INIT_ACK, level="sctp", cum=value + 1, lo=value + 1, hi=value + 1,
                     wire_seq=rec[_SEQ], **base)
    return Event(kind=SYN_ACK if rec[_TCP_FLAGS] & 0x10 else SYN, level="tcp", lo=value, hi=value + 1, cum=value + 1,
                 wire_seq=rec[_SEQ], **base)


def fsack_event(rows: ChunkRows, row):
    rec = rows.record(row)
    base = rows.base(row, rec)
    if rec[_CHUNK] == 0xA1:
        base["sender"] = 1 - base["side"]  # the FSACK-ACK answers for the data sender's direction
    address = rows.blocks_of(rec, (E.BK_ADDR,))
    return Event(kind=FSACK_KINDS[rec[_CHUNK]], level="sctp", aux=rec[_AUX],
                 address=E.block_address(*address[0]) if address else "", **base)


def reader_event(rows: ChunkRows, row, frame, rule_id, reason):
    """A reader finding (GEN-01, NR-05, TN-05, MN-02, GEN-02) as an event after its frame's last event."""
    if row is None:
        return Event(index=-1, frame=int(frame), time_ns=0, kind=MALFORMED, level="", side=0, sender=1, rule=rule_id,
                     reason=reason)
    side = int(rows.side_of[row])
    return Event(index=rows.cap.offset + row + 0.75, frame=int(frame), time_ns=int(rows.cap.ev["time_ns"][row]),
                 kind=MALFORMED, level="", side=side, sender=1 - side, rule=rule_id, reason=reason)
