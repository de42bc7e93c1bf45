"""Flows and scoreboard -> results, in two passes that each hold one chunk of rows at a time.

Pass 1 (DirectionAccumulator.feed, per chunk of the capture): a sender direction's level (flows.py) builds the
scoreboard input, the compiled Board runs it, the per-row figures go to a row store and the DirectionAccumulator
keeps running tallies. Pass 2 (DirectionAccumulator.finish, once the capture is read): the send buffer (given, or
estimated from the waits for acks, core/sndbuf.c), the largest payload and the end of the transfer are known; the rows
come back in batches to mark the blocked ones, sum p, b and q, and give the RtxQ and blocking
tables. The definitions are docs/metrics.md with the readings of docs/decisions.md.
"""

from __future__ import annotations  # pandas is imported only where tables are made

from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from nrsack.analyzer import _native
from nrsack.analyzer.state import flows as F

if TYPE_CHECKING:
    import pandas as pd

SUMMARY_KEYS = [
    "id", "protocol", "src", "dst", "nr_sack", "data_bytes", "q_s", "p_s", "b_s", "p_over_q", "b_over_q",
    "sndbuf_bytes", "sndbuf_estimated", "max_rtxq_sack_bytes", "max_rtxq_nr_bytes", "max_rtxq_whatif_bytes",
    "throughput_bps", "blocking_intervals", "vantage", "complete", "sndbuf_source", "sndbuf_verdict", "sndbuf_reason",
]

# core/sndbuf.c: sbe_verdict_t and sbe_why_t, as the summary says them (docs/metrics.md, "Estimating B")
HELD_BACK, NEVER, CANNOT_TELL = "held back", "never", "cannot tell"
VERDICTS = (HELD_BACK, NEVER, CANNOT_TELL)  # indexed by sbe_verdict_t
SBE_HELD_BACK, SBE_CANNOT_TELL = 0, 2
PATHS = ONE_PATH, A_PATH_OF_SEVERAL, MPTCP_DATA_LEVEL, CMT_ASSOCIATION, TCP_CONNECTION = range(5)  # sbe_paths_t


def buffer_fields(given, capacity, judged, b_ns) -> tuple:
    """The summary's send-buffer values: sndbuf_bytes, sndbuf_estimated, sndbuf_source, sndbuf_verdict,
    sndbuf_reason, and whether p and b can be told (not a key). given: B came from the user (capacity); else
    judged is _native.sndbuf_verdict's (estimate, reason): Board.sndbuf_estimate's (verdict, why, sndbuf, low,
    high, waits, long_waits, at_ceiling, above, packet, deep_waits) judged for the vantage and worded by the
    core (sbe_vantage, sbe_reason: the plugins' words too)."""
    if given:
        return capacity, False, "given", HELD_BACK if b_ns else NEVER, None, True
    (verdict, _, sndbuf, *_), reason = judged
    return (sndbuf if verdict == SBE_HELD_BACK else None, True, "estimated", VERDICTS[verdict], reason,
            verdict != SBE_CANNOT_TELL)


# vantage: the capture sits next to the endpoint whose handshake gap is the short one (its own
# processing time, against a round trip for the other); "short" means under 1/2.5 of the other gap.
# A real Linux pair on veth shows 58 us against 18 us.
VANTAGE_RATIO = 2.5

BOARD_OUTPUTS = ("sack", "sacked", "nr", "freed", "acked", "units_sack", "units_sacked", "units_nr")
# a pass-1 row as the stores keep it, and as Board.feed_level writes it (_scoreboard.c board_row_t)
ROW_DTYPE = np.dtype([(name, "<i8") for name in BOARD_OUTPUTS]
                     + [("time_ns", "<i8"), ("frame", "<u4"), ("flags", "<i4"), ("is_data", "?")])
# Board.feed's revoke input (core/nrsack_core.h sb_revoke_t; BOARD_RECEIVED: renegable blocks are units
# known received, decisions.md 12) and the SCTP chunk whose acks report every NR-acked TSN
REVOKE_NONE, REVOKE_ALL, REVOKE_IN_SPAN, BOARD_RECEIVED = 0, 1, 2, 4
SCTP_NR_SACK = 16
# A flow's rows in a chunk up to which one compiled call (Board.feed_level) builds its level and feeds its Board:
# below it the calls cost more than the rows (a thousand flows make 60,000 of them a capture); above it the
# records' row layout, read column by column, costs more than the calls save.
FUSED_ROWS = 512


def revoke_modes(level, events: F.FlowEvents, part: F.ScoreboardInput) -> np.ndarray:
    """Per row of `part`: which earlier NR-acked units the ack must still report (decisions.md 16)."""
    if isinstance(level, (F.SctpLevel, F.SctpPathLevel)):
        chunk = events.cap.ev["chunk"][events.rows[part.pos]]  # the part's rows only, not the flow's
        return ((chunk == SCTP_NR_SACK) * REVOKE_ALL).astype(np.int8)
    mode = REVOKE_IN_SPAN | (BOARD_RECEIVED if isinstance(level, F.MptcpLevel) else 0)
    return _constant_modes(mode, len(part.pos))


_MODES = {}  # mode -> a read-only array of it, sliced per part (not an allocation per flow and chunk)


def _constant_modes(mode, n) -> np.ndarray:
    modes = _MODES.get(mode)
    if modes is None or len(modes) < n:
        modes = _MODES[mode] = np.full(max(n, 1024), mode, np.int8)
        modes.flags.writeable = False
    return modes[:n]


class Serials(NamedTuple):
    """An entry's rows as its level unwrapped them (kept for the in-memory analysis only: keep_serials)."""

    rows: np.ndarray         # event indices of its data and acks, capture order
    serial: np.ndarray       # unwrapped 64-bit TSN / seq / DSN of data, cum ack of acks
    is_data: np.ndarray
    end: np.ndarray          # where the data ends / what the cum ack covers up to (exclusive), level units
    block_rows: np.ndarray   # per gap / NR block of an ack (the Board's blocks, ack order): its event index
    block_lo: np.ndarray     # and the units it covers, [lo, hi)
    block_hi: np.ndarray


@dataclass
class DirectionResult:
    """Results of one sender direction, path or subflow (columns as numpy arrays)."""

    summary: dict
    rtxq_columns: dict
    blocking_columns: dict
    serials: Serials = None
    paths: list = field(default_factory=list)

    @property
    def rtxq(self) -> pd.DataFrame:
        return rtxq_frame([self])

    @property
    def blocking(self) -> pd.DataFrame:
        return blocking_frame([self])


def vantage(flow: F.Flow, sender: int) -> str:
    return VANTAGES[vantages([flow])[0, sender]]


def vantages(flows) -> np.ndarray:
    """vantage(flow, side) of each flow's two sides, all at once (a flood's flows): (flows, 2) of VANTAGES's indices.
    Unknown without the whole handshake; else the capture sits by the opener when its reply came back late and it
    confirmed at once (reply > VANTAGE_RATIO x confirm), by the other side the other way round, else in the middle."""
    handshakes = [f.handshake_ns if len(f.handshake_ns) == 3 else (0, 0, 0) for f in flows]
    known = np.fromiter((len(f.handshake_ns) >= 3 for f in flows), bool, len(flows))
    t = np.array(handshakes, np.int64).reshape(-1, 3)
    reply, confirm = t[:, 1] - t[:, 0], t[:, 2] - t[:, 1]
    near = np.where(reply > VANTAGE_RATIO * confirm, 0, np.where(confirm > VANTAGE_RATIO * reply, 1, -1))
    out = np.where(near[:, None] == np.arange(2), 0, 1)  # sender, receiver
    out[near < 0] = 2
    out[~known] = 3
    return out


VANTAGES = ("sender", "receiver", "middle", "unknown")


def IGNORE(columns):
    """The sink of a table nobody reads (DirectionAccumulator.finish skips making its rows)."""


class FusedPart:
    """What feed_fused made of a level's rows of a chunk for its on_part hook: the rows' pos, kind, lo, hi,
    frame and time_ns (what the checker's plain chunk reads), and full(), the whole ScoreboardInput built again
    from the level's state before the chunk (the checker's general way; a flood's flows seldom take it)."""

    __slots__ = ("pos", "kind", "lo", "hi", "frame", "time_ns", "_level", "_space", "_rows")

    def __init__(self, lanes, records, level, space, rows):
        self.pos, self.kind, self.lo, self.hi = lanes.T
        self.frame, self.time_ns = records["frame"], records["time_ns"]
        # rows: (cap, order, sides, lo, hi), its flow's rows order[lo:hi] as feed_fused got them; their FlowEvents
        # made by full() alone (a flood's plain chunks never ask)
        self._level, self._space, self._rows = level, space, rows

    def full(self) -> F.ScoreboardInput:
        level = F.TcpLevel(self._level.conn, self._level.sender, self._level.flow)
        level.space = self._space
        cap, order, sides, lo, hi = self._rows
        return level.build(F.FlowEvents(cap, order[lo:hi], sides[lo:hi]))


class DirectionAccumulator:
    """Pass 1 of one entry (sender direction, path or subflow): its level, its Board, its tallies."""

    def __init__(self, key, level, store, keep_serials=False):
        self.key, self.level, self.store = key, level, store
        self.board = _native.Board(units=level.units)
        self.rows = 0                  # rows fed so far
        # rows before the chunk of the first data, not stored: pass 2 reads none of them (before the first data
        # no row changes the scoreboard, so none is in the RtxQ table, and p, b and q start there); a direction
        # that only acks the other (half the rows of a bulk transfer) stores nothing
        self.unstored = 0
        self.first_data = None         # row index of the first data row
        self.first_frame = self.t_start = None
        self.done = None               # row index of the ack ending the transfer (after the last data)
        self.last_new = -1             # row index of the last new data (the first transmission of some)
        self.estimates = None          # release(): Board.sndbuf_estimate's, per (nr_sack, paths)
        # core/sndbuf.c sbe_paths_t: whose waits these are (the pipeline sets a CMT association's and the
        # paths of several)
        self.paths = (MPTCP_DATA_LEVEL if isinstance(level, F.MptcpLevel)
                      else TCP_CONNECTION if isinstance(level, F.TcpLevel) else ONE_PATH)
        self.max_payload = 0
        self.max_rtxq = {"sack": 0, "nr": 0, "whatif": 0}
        self.retransmissions = 0
        self.serials = [] if keep_serials else None
        self.on_part = None            # pipeline hook: on_part(sender, part, flags) after each chunk's rows

    def feed(self, events: F.FlowEvents):
        if self.first_data is None and self.on_part is None and hasattr(self.level, "feed_acks"):
            # no data yet and only acks of nothing in this chunk: the Board takes the one that counts, the rows
            # are counted (before the first data nothing else of them is kept but their serials, if asked)
            quiet = self.level.feed_acks(self.board, events, self.serials is not None)
            if quiet is not None:
                kept, pos, serial = quiet
                self.rows += kept
                self.unstored += kept
                if kept and self.serials is not None:
                    rows, none = events.cap.offset + events.rows[pos], np.empty(0, np.int64)
                    self.serials.append((rows, serial, np.zeros(kept, bool), serial, none, none, none))
                return
        feed_board = getattr(self.level, "feed_board", None)
        if (feed_board is not None and self.on_part is None and self.serials is None
                and len(events.rows) <= FUSED_ROWS):
            # nobody reads the level's rows but the Board: one compiled call, no arrays but the store's
            records, tallies = feed_board(self.board, events)
            records = np.frombuffer(records, ROW_DTYPE)
            if len(records):
                self._tally(len(records), tallies, records["time_ns"], records["frame"])
                self._store(records)
            return
        part = self.level.build(events)
        n = len(part.pos)
        if not n:
            return
        # one allocation for the Board's outputs the store reads (the others None: not written); each row of
        # it is a C-contiguous column
        outputs = getattr(self.store, "board_outputs", BOARD_OUTPUTS)
        out = dict(zip(outputs, np.empty((len(outputs), n), np.int64)))
        flags = np.empty(n, np.int32)
        tallies = self.board.feed(
            part.kind, part.lo, part.hi, part.size, part.bstart, part.bcount, part.blo, part.bhi, part.bnr,
            revoke_modes(self.level, events, part), *(out.get(name) for name in BOARD_OUTPUTS), flags,
            part.conn.astype(np.int64, copy=False),  # the path each ack came on (sb_ack)
            part.time_ns.astype(np.int64, copy=False))  # the waits' time (sbe_new_data)
        if self.on_part is not None:
            self.on_part(self, part, flags)
        is_data = part.kind == 0
        times, frames = part.time_ns, part.frame
        self._tally(n, tallies, times, frames)
        self._store(dict(out, time_ns=times, frame=frames, flags=flags, is_data=is_data), n)
        if self.serials is not None:
            rows = events.cap.offset + events.rows[part.pos]
            blocks = F.expand_runs(part.bstart, part.bcount)  # the rows' own (a CMT path's part shares the association's)
            self.serials.append((rows, part.serial, is_data, part.hi, np.repeat(rows, part.bcount), part.blo[blocks],
                                 part.bhi[blocks]))

    def fusable(self) -> bool:
        """Whether nobody reads this entry's level rows but its Board (feed_fused may feed it)."""
        return self.on_part is None and self.serials is None and hasattr(self.level, "feed_board")

    def _store(self, rows, n=None):
        """The rows just tallied to the store, or counted as unstored while no data came."""
        if self.first_data is None:
            self.unstored += len(rows) if n is None else n
        else:
            self.store.append(self.key, rows)

    def _tally(self, n, tallies, times, frames):
        """The running tallies after n more rows (Board.feed's tallies of them)."""
        first = tallies[0]
        self._add_tallies(n, tallies, times[first] if first >= 0 else -1, frames[first] if first >= 0 else -1)

    def _add_tallies(self, n, tallies, first_time, first_frame):
        """_tally with the first data row's time and frame given (-1: no data row)."""
        first, _, last_new, max_payload, max_sack, max_nr, max_whatif, retransmissions, ending = tallies[:9]
        if first >= 0:
            if self.first_data is None:
                self.first_data = self.rows + first
                self.first_frame, self.t_start = int(first_frame), int(first_time)
            self.max_payload = max(self.max_payload, max_payload)
            self.done = None
            if last_new >= 0:
                self.last_new = self.rows + last_new
        if self.first_data is not None and self.done is None and ending >= 0:
            # the first ack after the last data that cum-acks all of it ends the transfer
            self.done = self.rows + ending
        max_rtxq = self.max_rtxq
        max_rtxq["sack"] = max(max_rtxq["sack"], max_sack)
        max_rtxq["nr"] = max(max_rtxq["nr"], max_nr)
        max_rtxq["whatif"] = max(max_rtxq["whatif"], max_whatif)
        self.retransmissions += retransmissions
        self.rows += n

    @staticmethod
    def feed_fused(senders, cap, order, sides, lo, hi, watched=False):
        """feed() of many fusable TCP entries of one chunk (at most FUSED_ROWS rows each) in one compiled call
        (_native.feed_levels): senders[k]'s flow has the rows order[lo[k]:hi[k]], sides[lo[k]:hi[k]] theirs. A
        thousand flows made a feed() each per chunk, whose Python cost more than their rows. `watched`: the
        senders' on_part hooks get a FusedPart of their rows (the checker's plain chunks of a flood)."""
        levels = [sender.level for sender in senders]
        fresh = [k for k, level in enumerate(levels) if level.space is None]
        if fresh:  # the flows' first chunk: anchored on their handshake, if here
            spaces = F.handshake_spaces(cap, order, sides, [(lo[k], hi[k], levels[k].conn, levels[k].sender) for k in fresh])
            for k, space in zip(fresh, spaces):
                levels[k].space = space
        n = len(levels)
        never_renege = np.fromiter((level.flow is not None and level.flow.never_renege[1 - level.sender]
                                    for level in levels), np.int8, n)
        spaces = [level.space for level in levels]
        records, counts, tallies, states, nr_seen, far, far_frame, *lanes = _native.feed_levels(
            cap.ev, cap.blocks, order, sides, np.asarray(lo, np.int64), np.asarray(hi, np.int64),
            [sender.board for sender in senders], np.fromiter((level.conn for level in levels), np.int32, n),
            np.fromiter((level.sender for level in levels), np.int8, n), never_renege, spaces, watched)
        records = np.frombuffer(records, ROW_DTYPE)
        lanes = np.frombuffer(lanes[0], np.int64).reshape(-1, 4) if watched else None
        at = 0
        for k, (sender, level, count, tally, state, seen, far_count, far_first) in enumerate(zip(
                senders, levels, np.frombuffer(counts, np.int64).tolist(),
                np.frombuffer(tallies, np.int64).reshape(n, -1).tolist(), states, nr_seen, np.frombuffer(far, np.int64).tolist(),
                np.frombuffer(far_frame, np.int64).tolist())):
            if watched and count and sender.on_part is not None:
                mine = records[at:at + count]
                sender.on_part(sender, FusedPart(lanes[at:at + count], mine, level, spaces[k],
                                                 (cap, order, sides, lo[k], hi[k])), mine["flags"])
            level.space = state
            if seen:
                level.nr_seen = True
            if far_count:
                level.far.add(far_count, far_first)
            if count:
                sender._add_tallies(count, tally, tally[9], tally[10])
                if sender.first_data is None:
                    sender.unstored += count
                else:
                    sender.store.append(sender.key, records[at:at + count])
                at += count

    def fork(self, key, level, keep_data):
        """A DirectionAccumulator for `level` in this one's state (keep_data) or in the state of its acks only."""
        twin = DirectionAccumulator(key, level, self.store, self.serials is not None)
        twin.board = self.board.fork(keep_data)
        if keep_data:
            twin.serials = None if self.serials is None else list(self.serials)
            for name in ("rows", "unstored", "first_data", "first_frame", "t_start", "done", "last_new", "max_payload",
                         "retransmissions"):
                setattr(twin, name, getattr(self, name))
            twin.max_rtxq = dict(self.max_rtxq)
            self.store.fork(self.key, key)
        return twin

    @property
    def has_data(self):
        return self.first_data is not None

    def release(self):
        """The flow ended: the Board and the level's tables go, what finish() reads stays."""
        if self.board is not None:
            self.data_bytes = self.board.data_bytes
            self.estimates = {(nr, paths): self.board.sndbuf_estimate(nr, paths) for nr in (False, True)
                              for paths in PATHS}
            self.board = None
            self.level = EndedLevel(self.level.units, self.level.gap_from_sacked, getattr(self.level, "far", None),
                                    self.level.nr_seen)

    def finish(self, entry_id, base, nr_sack, sndbuf, end_ns, rtxq_sink=None, blocking_sink=None) -> DirectionResult:
        """Pass 2. The RtxQ and blocking rows go to the sinks (callables taking a column dict) when
        given, else into the DirectionResult; with the sink IGNORE they are not even made."""
        estimated = sndbuf is None
        judged = None
        if estimated:
            estimate = (self.estimates[bool(nr_sack), self.paths] if self.board is None
                        else self.board.sndbuf_estimate(bool(nr_sack), self.paths))
            # a capture not by the sender cannot tell: no row is blocked (the plugins' rule too)
            judged = _native.sndbuf_verdict(estimate, base["vantage"])
            capacity = estimate[2]
            after_new = 0  # the RtxQ after the last new data, carried from batch to batch
        else:
            capacity = int(sndbuf)
        complete = self.done is not None
        last = self.done if complete else self.rows - 1
        window = _Window(self.first_data, last)
        kept_rtxq, kept_blocking = [], []
        rtxq_sink = rtxq_sink or kept_rtxq.append
        blocking_sink = blocking_sink or kept_blocking.append
        start = self.unstored
        for rows in self.store.batches(self.key):
            rtxq = rows["sack"] - rows["nr"] if nr_sack else rows["sack"]
            gap_open = rows["sacked"] > 0 if self.level.gap_from_sacked else (rows["flags"] & 2) != 0
            if estimated:
                blocked = np.empty(len(rtxq), bool)
                after_new = _native.sndbuf_blocked(judged[0], rows["is_data"] & ((rows["flags"] & 1) != 0),
                                                   np.ascontiguousarray(rtxq, np.int64), gap_open, blocked, start,
                                                   after_new, self.last_new)
            else:
                blocked = (capacity - rtxq) < self.max_payload
            window.add(start, rows, blocked, gap_open, rtxq, blocking_sink)
            if rtxq_sink is not IGNORE:
                rtxq_sink(_rtxq_columns(rows, rtxq, blocked, gap_open, self.level.units))
            start += len(rtxq)
        t_end = window.close(end_ns, complete, blocking_sink)
        far = getattr(self.level, "far", None)  # (a CMT path's level has none: its association counts)
        buffer = buffer_fields(not estimated, capacity, judged, window.b_ns)
        summary = entry_summary(
            base, entry_id, nr_sack, buffer,
            self.board.data_bytes if self.board is not None else self.data_bytes,
            (self.max_rtxq["sack"], self.max_rtxq["nr"], self.max_rtxq["whatif"]), t_end - self.t_start,
            window.p_ns, window.b_ns, window.acked, window.intervals, complete, self.max_payload,
            self.retransmissions, self.first_frame, *((far.count, far.first_frame) if far is not None else (0, None)))
        serials = None
        if self.serials and len(self.serials) == 1:  # (one chunk, as the in-memory API reads a capture: its arrays, not a copy)
            serials = Serials(*self.serials[0])
        elif self.serials:
            serials = Serials(*(np.concatenate(part) for part in zip(*self.serials)))
        return DirectionResult(summary, join_columns(kept_rtxq), join_columns(kept_blocking, NO_INTERVALS), serials)


def entry_base(flow: F.Flow, side) -> dict:
    """The summary's keys that name a sender direction of `flow` (its paths' add to them)."""
    return {"protocol": flow.protocol, "src": flow.endpoints[side], "dst": flow.endpoints[1 - side],
            "flow": flow.id, "side": side, "level": "association" if flow.protocol == "sctp" else "connection",
            "vantage": vantage(flow, side)}


def entry_summary(base, entry_id, nr_sack, buffer, data_bytes, max_rtxq, q_ns, p_ns, b_ns, acked,
                  intervals, complete, max_payload, retransmissions, first_frame, far_count, far_frame) -> dict:
    """An entry's summary from its figures (integers; max_rtxq: sack, nr, whatif; buffer: buffer_fields'):
    the one place its keys and their order are made (short_tcp_rows writes the same keys as rows)."""
    summary = dict(base)
    sndbuf_bytes, estimated, source, verdict, reason, figures = buffer
    if not figures:  # the capture cannot tell when the sender was blocked
        p_ns = b_ns = intervals = None
    q_s, p_s, b_s, p_over_q, b_over_q, throughput = entry_ratios(q_ns, p_ns, b_ns, acked)
    summary.update({
        "id": entry_id,
        "nr_sack": bool(nr_sack),
        "data_bytes": data_bytes,
        "q_s": q_s, "p_s": p_s, "b_s": b_s,
        "p_over_q": p_over_q,
        "b_over_q": b_over_q,
        "sndbuf_bytes": sndbuf_bytes,
        "sndbuf_estimated": estimated,
        "max_rtxq_sack_bytes": max_rtxq[0],
        "max_rtxq_nr_bytes": max_rtxq[1],
        "max_rtxq_whatif_bytes": max_rtxq[2],
        "throughput_bps": throughput,
        "blocking_intervals": intervals,
        "complete": complete,
        "sndbuf_source": source,
        "sndbuf_verdict": verdict,
        "sndbuf_reason": reason,
        "max_payload_bytes": max_payload,
        "acked_bytes": acked,
        "retransmissions": retransmissions,
        "first_frame": first_frame,
        "q_ns": q_ns, "p_ns": p_ns, "b_ns": b_ns,
    })
    if far_count:  # said once per entry (views/formats.py summary_dict lists it as a finding)
        summary.update(far_serials_ignored=far_count, far_serials_first_frame=far_frame)
    return summary


def entry_ratios(q_ns, p_ns, b_ns, acked) -> tuple:
    """-> q, p and b in seconds, p/q, b/q and the throughput in bit/s: the one place they are made
    (p_ns and b_ns None: p, b and their ratios None)."""
    if p_ns is None:
        return q_ns / 1e9, None, None, None, None, acked * 8e9 / q_ns if q_ns > 0 else 0.0
    if q_ns > 0:
        return q_ns / 1e9, p_ns / 1e9, b_ns / 1e9, p_ns / q_ns, b_ns / q_ns, acked * 8e9 / q_ns
    return q_ns / 1e9, p_ns / 1e9, b_ns / 1e9, 0.0, 0.0, 0.0


_ORDERS = {}  # a summary's keys -> the same keys in the JSON's order (most summaries share one)


def summary_order(keys) -> tuple:
    """A summary's keys (a dict or a tuple) in the JSON summary's order: the contract's keys first, in
    metrics.md's order, then the extras as they come."""
    keys = tuple(keys)
    order = _ORDERS.get(keys)
    if order is None:
        order = _ORDERS[keys] = tuple(SUMMARY_KEYS + [k for k in keys if k not in SUMMARY_KEYS])
    return order


def summary_row(summary) -> tuple:
    """-> (keys in the JSON's order, the values in that order): how a summary is spilled and written."""
    keys = summary_order(summary)
    return keys, tuple([summary[k] for k in keys])


# _scoreboard.c short_tcp_entries: the fields of its record per sender direction, and its flow flags
SHORT_FIELDS = ("has_data", "complete", "nr_sack", "first_frame", "t_start", "q_ns", "p_ns", "b_ns", "data_bytes",
                "capacity", "max_sack", "max_nr", "max_whatif", "acked", "intervals", "max_payload",
                "retransmissions", "far", "far_frame", "verdict", "why", "estimate_sndbuf", "low", "high", "waits",
                "long_waits", "at_ceiling", "above", "packet", "deep_waits", "level")
FLOW_NEGOTIATED_NR, FLOW_NEVER_RENEGE_0, FLOW_NEVER_RENEGE_1 = 1, 2, 4


def short_tcp_records(ev, blocks, rows, side, lo, hi, flows, sndbuf, end_ns=None, tables=False, seen=None):
    """_native.short_tcp_entries of `flows` (short_tcp_rows's arguments) -> (flows, 2 sides, SHORT_FIELDS) int64;
    `tables`: -> (those, the RtxQ and blocking rows of its summed directions: RTXQ_ROW_FIELDS and BLOCKING_ROW_FIELDS
    int64 each). seen: vantages(flows), when the caller has them."""
    conn = ev["conn"][rows[lo]].astype(np.int32)  # (a TCP connection has one conn, its every event's)
    flags = np.fromiter((FLOW_NEGOTIATED_NR * f.negotiated_nr | FLOW_NEVER_RENEGE_0 * f.never_renege[0]
                         | FLOW_NEVER_RENEGE_1 * f.never_renege[1] for f in flows), np.int8, len(flows))
    # (pass 2 judges the estimate for the capture's vantage: sndbuf_verdict's "sender" or "unknown")
    if tables:
        seen = vantages(flows) if seen is None else seen
    by_sender = np.ascontiguousarray(np.isin(seen, (0, 3)).ravel(), np.int8) if tables else None
    out = _native.short_tcp_entries(ev, blocks, rows, side, lo, hi, conn, flags, -1 if sndbuf is None else int(sndbuf),
                                    None if end_ns is None else np.ascontiguousarray(end_ns, np.int64), by_sender)
    records, rtxq, runs = out if tables else (out, None, None)
    records = np.frombuffer(records, np.int64).reshape(len(flows), 2, len(SHORT_FIELDS))
    if not tables:
        return records
    return (records, np.frombuffer(rtxq, np.int64).reshape(-1, len(RTXQ_ROW_FIELDS)),
            np.frombuffer(runs, np.int64).reshape(-1, len(BLOCKING_ROW_FIELDS)))


# _scoreboard.c table_rows: the fields of its RtxQ rows and blocking runs (the entry's index: 2 * flow + side)
RTXQ_ROW_FIELDS = ("entry", "time_ns", "sack", "sacked", "nr", "freed", "rtxq", "frame", "blocked", "gap_open", "is_data")
BLOCKING_ROW_FIELDS = ("entry", "start_ns", "start_frame", "rtxq_bytes_at_start", "gap_open", "end_ns", "end_frame")


class TablePieces(NamedTuple):
    """One table's pieces of entries finished together, in entry order, their rows joined: a piece is what
    DirectionAccumulator.finish gives a sink at once (the RtxQ table: one per entry; blocking: the runs ended in
    the rows, then the one open at the end of q), so a writer that flushes between pieces cuts the table where
    it did. Column arrays, not a dict a piece: a flood's pieces are a row or two each."""

    entry: np.ndarray    # per piece: its entry's index (short_tcp_records's: 2 * flow + side)
    length: np.ndarray   # per piece: its rows
    columns: dict        # the pieces' rows, one after another

    def take(self, pieces) -> "TablePieces":
        """The pieces `pieces` (indices, in order) alone."""
        at = np.cumsum(self.length) - self.length
        rows = F.expand_runs(at[pieces], self.length[pieces])
        return TablePieces(self.entry[pieces], self.length[pieces], {k: v[rows] for k, v in self.columns.items()})


def short_tcp_tables(rtxq, runs, entries) -> tuple:
    """short_tcp_records's table rows -> (RtxQ, blocking) TablePieces of `entries` (indices, sorted, each with data)."""
    col = dict(zip(RTXQ_ROW_FIELDS, rtxq.T))
    wanted = np.asarray(entries, np.int64)
    lo, hi = np.searchsorted(col["entry"], np.stack((wanted, wanted + 1)))
    rows = F.expand_runs(lo, hi - lo)
    col = {k: v[rows] for k, v in col.items()}
    sack, nr, sacked = col["sack"], col["nr"], col["sacked"]
    table = {"time_ns": col["time_ns"], "rtxq_sack_bytes": sack, "rtxq_nr_bytes": sack - nr,
             "rtxq_whatif_bytes": sack - sacked, "sacked_bytes": sacked, "nr_acked_bytes": nr,
             "blocked": col["blocked"] != 0, "gap_open": col["gap_open"] != 0, "frame": col["frame"],
             "is_data": col["is_data"] != 0, "rtxq_bytes": col["rtxq"], "freed_bytes": col["freed"]}
    rtxq_pieces = TablePieces(wanted, hi - lo, {k: np.ascontiguousarray(v) for k, v in table.items()})
    run = dict(zip(BLOCKING_ROW_FIELDS, runs.T))
    # a piece per entry for the runs that ended in its rows, another for the one still open at the end of q
    key = run["entry"] * 2 + (run["end_frame"] == -1)
    starts = np.flatnonzero(np.diff(key, prepend=-1))
    stops = np.append(starts[1:], len(key))
    mine = np.isin(key[starts] // 2, wanted)
    starts, stops = starts[mine], stops[mine]
    rows = F.expand_runs(starts, stops - starts)
    blocking = {k: np.ascontiguousarray(run[k][rows], t) for k, t in BLOCKING_COLUMNS.items()}
    blocking["gap_open"] = run["gap_open"][rows] != 0
    return rtxq_pieces, TablePieces(key[starts] // 2, stops - starts, blocking)


def short_tcp_rows(ev, blocks, rows, side, lo, hi, flows, sndbuf, end_ns=None, tables=False):
    """DirectionAccumulator.feed and .finish of TCP connections given whole, all in one compiled call:
    `flows[k]`'s events are ev[rows[lo[k]:hi[k]]] (in capture order; `side` per row; blocks: the events'
    SACK blocks). -> per flow the summaries of its directions with data as the spill takes them
    (summary_row's keys and values, no paths: EntrySpill.put_rows), or None when one of them did not
    complete and end_ns (per flow, where q ends for such a direction, as DirectionAccumulator.finish's
    end_ns) is not given: its q runs to the end of the capture. The rows are made here, not through
    entry_summary: a dict a flow cost more than the flow's analysis. `tables`: -> (those, short_tcp_tables's of
    the directions summarized)."""
    seen = vantages(flows)  # (once: the tables' pass reads them too)
    records = short_tcp_records(ev, blocks, rows, side, lo, hi, flows, sndbuf, end_ns, tables, seen)
    if tables:
        records, rtxq, runs = records
    has_data = records[:, :, 0] != 0
    finished = ~(has_data & (records[:, :, 1] == 0)).any(1) if end_ns is None else np.ones(len(flows), bool)
    out = [[] if ok else None for ok in finished.tolist()]
    kept = has_data & finished[:, None]
    flow_of, side_of = np.nonzero(kept)  # (in flow, then side order)
    flow_of, side_of = flow_of.tolist(), side_of.tolist()
    picked = [flows[k] for k in flow_of]
    # a column at a time (lists), the rows zipped from them: a Python statement a row cost more
    (_, complete, nr_sack, first_frame, _, q_ns, p_ns, b_ns, data_bytes, capacity, max_sack, max_nr, max_whatif,
     acked, intervals, max_payload, retransmissions, far, far_frame, *estimate) = records[kept].T.tolist()
    seen_from = list(map(VANTAGES.__getitem__, seen[flow_of, side_of].tolist()))
    given = sndbuf is not None
    if given:
        buffers = list(map(buffer_fields, repeat(given), capacity, repeat(None), b_ns))
    else:  # (judged once per estimate and vantage: a flood's directions mostly share a few)
        judged = {}
        for key in set(zip(*estimate, seen_from)):
            judged[key] = buffer_fields(False, None, _native.sndbuf_verdict(key[:-1], key[-1]), None)
        buffers = list(map(judged.__getitem__, zip(*estimate, seen_from)))
    sndbuf_bytes, estimated, source, verdict, reason, figures = zip(*buffers) if picked else [()] * 6
    if not all(figures):  # the capture cannot tell when these senders were blocked
        p_ns, b_ns, intervals = ([x if ok else None for x, ok in zip(column, figures)] for column in (p_ns, b_ns, intervals))
    q_s, p_s, b_s, p_over_q, b_over_q, throughput = zip(*map(entry_ratios, q_ns, p_ns, b_ns, acked)) if picked else [()] * 6
    rows = zip([f"{flow.id}{'ab'[side]}" for flow, side in zip(picked, side_of)], repeat("tcp"),
               [flow.endpoints[side] for flow, side in zip(picked, side_of)],
               [flow.endpoints[1 - side] for flow, side in zip(picked, side_of)], map(bool, nr_sack), data_bytes,
               q_s, p_s, b_s, p_over_q, b_over_q, sndbuf_bytes, estimated, max_sack, max_nr, max_whatif,
               throughput, intervals, seen_from, map(bool, complete), source, verdict, reason, [flow.id for flow in picked],
               side_of, repeat("connection"), max_payload, acked, retransmissions, first_frame, q_ns, p_ns, b_ns)
    for k, values, far_count, far_first in zip(flow_of, rows, far, far_frame):
        out[k].append((SHORT_KEYS_FAR, values + (far_count, far_first), ()) if far_count else (SHORT_KEYS, values, ()))
    if tables:
        return out, short_tcp_tables(rtxq, runs, 2 * np.asarray(flow_of, np.int64) + side_of)
    return out


@dataclass
class EndedLevel:
    """What finish() and the pipeline read of a released DirectionAccumulator's level."""

    units: bool
    gap_from_sacked: bool
    far: object
    nr_seen: bool


def _rtxq_columns(rows, rtxq, blocked, gap_open, units) -> dict:
    """The RtxQ table's columns of the rows that changed the scoreboard."""
    changed = (rows["flags"] & 1) != 0
    every = bool(changed.all())
    # the changed rows' places found once, not by a boolean mask for each of the dozen columns
    where = None if every else np.flatnonzero(changed)

    def pick(values):
        # almost every row changes the scoreboard: keep the arrays instead of copying them
        return values if every else values.take(where)

    sack = rows["sack"]
    table = {
        "time_ns": pick(rows["time_ns"]),
        "rtxq_sack_bytes": pick(sack),
        "rtxq_nr_bytes": pick(sack - rows["nr"]),
        "rtxq_whatif_bytes": pick(sack - rows["sacked"]),
        "sacked_bytes": pick(rows["sacked"]),
        "nr_acked_bytes": pick(rows["nr"]),
        "blocked": pick(blocked),
        "gap_open": pick(gap_open),
        "frame": pick(rows["frame"]).astype(np.int64),
        "is_data": pick(rows["is_data"]),
        "rtxq_bytes": pick(rtxq),
        "freed_bytes": pick(rows["freed"]),
    }
    if units:
        # SCTP: the same figures counted in TSNs
        table["rtxq_sack_tsns"] = pick(rows["units_sack"])
        table["rtxq_nr_tsns"] = pick(rows["units_sack"] - rows["units_nr"])
        table["rtxq_whatif_tsns"] = pick(rows["units_sack"] - rows["units_sacked"])
    return table


RTXQ_COLUMNS = {"time_ns": np.int64, "rtxq_sack_bytes": np.int64, "rtxq_nr_bytes": np.int64,
                "rtxq_whatif_bytes": np.int64, "sacked_bytes": np.int64, "nr_acked_bytes": np.int64, "blocked": bool,
                "gap_open": bool, "frame": np.int64, "is_data": bool, "rtxq_bytes": np.int64, "freed_bytes": np.int64}
INTERVAL_ORDER = ("start_ns", "start_frame", "rtxq_bytes_at_start", "gap_open", "end_ns", "end_frame")
BLOCKING_COLUMNS = {"start_ns": np.int64, "end_ns": np.int64, "rtxq_bytes_at_start": np.int64, "gap_open": bool,
                    "start_frame": np.int64, "end_frame": np.int64}
NO_INTERVALS = {k: np.empty(0, t) for k, t in BLOCKING_COLUMNS.items()}  # join_columns copies the dict


def join_columns(parts, empty=None) -> dict:
    """Column dicts of consecutive rows as one (`empty` when there are none)."""
    if not parts:
        return dict(empty or {})
    if len(parts) == 1:
        return parts[0]
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


WINDOW_START = (0, 0, 0, 0, False, False, False)  # _native.window_add's state before any row


class _Window:
    """p, b and the blocking intervals over the rows from the first data to the end of the transfer,
    fed batch by batch: summed in C (_native.window_add / window_close, as the short-TCP pass sums them),
    the blocking table's runs made here when somebody reads them."""

    def __init__(self, first, last):
        self.first, self.last = first, last
        self.state = WINDOW_START
        self.acked = 0
        self.run = None       # the open blocked run: [start time, start frame, rtxq at start, gap seen]

    @property
    def p_ns(self):
        return self.state[0]

    @property
    def b_ns(self):
        return self.state[1]

    @property
    def intervals(self):
        return self.state[2]

    def add(self, start, rows, blocked, gap_open, rtxq, sink):
        if self.first is None:
            return
        lo, hi = max(self.first - start, 0), min(self.last - start + 1, len(blocked))
        if lo >= hi:
            return
        if self.last - start < len(blocked):
            self.acked = int(rows["acked"][self.last - start])
        t = np.ascontiguousarray(rows["time_ns"][lo:hi], np.int64)
        b, g = np.ascontiguousarray(blocked[lo:hi]), np.ascontiguousarray(gap_open[lo:hi])
        self.state = _native.window_add(self.state, t, b, g)
        if sink is not IGNORE:  # (a summary alone reads the counts, not the runs)
            frames = rows.get("frame")
            self._runs(t, b, g, frames[lo:hi] if frames is not None else np.full(hi - lo, -1, np.int64),
                       rtxq[lo:hi], sink)

    def _runs(self, t, b, g, frames, r, sink):
        """Runs of blocked rows: start at the row after which blocked holds, end at the one after which
        it no longer does (decision 10), or at the end of q."""
        before = self.run is not None
        padded = np.zeros(len(b) + 2, np.int8)
        padded[0] = before
        padded[1:-1] = b
        # where blocked flips: starts and stops alternate, the first a stop when a run is open already
        changes = np.flatnonzero(padded[1:] != padded[:-1])
        starts, stops = (changes[1::2], changes[0::2]) if before else (changes[0::2], changes[1::2])
        if not len(changes) and not before:
            return
        gap_cum = np.zeros(len(g) + 1, np.int64)
        np.cumsum(g, out=gap_cum[1:])
        carried = None
        if before:  # the run open from the previous batch ends at the first stop
            stop, stops = stops[0], stops[1:]
            self.run[3] |= bool(gap_cum[stop] > 0)
            if stop < len(t):
                carried = (*self.run, int(t[stop]), int(frames[stop]))
                self.run = None
        if len(starts) and stops[-1] == len(t):  # the last run goes on into the next batch
            self.run = [int(t[starts[-1]]), int(frames[starts[-1]]), int(r[starts[-1]]),
                        bool(gap_cum[-1] - gap_cum[starts[-1]] > 0)]
            starts, stops = starts[:-1], stops[:-1]
        columns = {"start_ns": t[starts], "start_frame": frames[starts], "rtxq_bytes_at_start": r[starts],
                   "gap_open": gap_cum[stops] - gap_cum[starts] > 0, "end_ns": t[stops], "end_frame": frames[stops]}
        if carried is not None:
            columns = {k: np.concatenate(([v], columns[k])) for k, v in zip(INTERVAL_ORDER, carried)}
        self._emit(columns, sink)

    def _emit(self, columns, sink):
        if len(columns["start_ns"]):
            sink({k: np.asarray(columns[k], t) for k, t in BLOCKING_COLUMNS.items()})

    def close(self, end_ns, complete, sink) -> int:
        """-> the end of q; the last row's time and a run still open count until then."""
        self.state, t_end = _native.window_close(self.state, int(end_ns), complete)
        if self.run is not None:  # end frame -1: still blocked at the end of q
            self._emit({k: [v] for k, v in zip(INTERVAL_ORDER, (*self.run, t_end, -1))}, sink)
            self.run = None
        return t_end


def summary_frame(entries) -> pd.DataFrame:
    """One row per entry, in the order given."""
    import pandas as pd

    return typed_summary(pd.DataFrame([e.summary for e in entries], columns=SUMMARY_COLUMNS))


# the summary frame's columns: the contract's, then those the views and the compare need
SUMMARY_COLUMNS = SUMMARY_KEYS + ["flow", "side", "level", "parent", "max_payload_bytes", "acked_bytes",
                                  "retransmissions", "first_frame"]


def typed_summary(frame):
    """The summary frame's dtypes, set on the frame pandas made of the summaries (summary_frame's)."""
    for col in ("protocol", "vantage", "level"):
        frame[col] = frame[col].astype("category")
    for col in ("flow", "side", "data_bytes", "sndbuf_bytes", "max_rtxq_sack_bytes", "max_rtxq_nr_bytes",
                "max_rtxq_whatif_bytes", "blocking_intervals", "max_payload_bytes", "acked_bytes",
                "retransmissions", "first_frame"):
        frame[col] = frame[col].astype("Int64")
    return frame


TSN_COLUMNS = ("rtxq_sack_tsns", "rtxq_nr_tsns", "rtxq_whatif_tsns")


def rtxq_frame(entries, nullable_tsns=False) -> pd.DataFrame:
    """metrics.md's rtxq.csv columns, then frame, event, rtxq_bytes, freed_bytes (acks only), time_ns
    and, for SCTP, the figures in TSNs (NA elsewhere; nullable_tsns: always there, as nullable
    integers, as when entries of several protocols are stacked)."""
    return rtxq_table(_stack(entries, "rtxq", RTXQ_COLUMNS), nullable_tsns)


def rtxq_table(cols, nullable_tsns=False) -> pd.DataFrame:
    """rtxq_frame of the entries' columns stacked (_stack's, or the in-memory analysis's, written stacked)."""
    import pandas as pd

    is_data = cols["is_data"]
    frame = pd.DataFrame({
        "flow": cols["flow"],
        "time_s": cols["time_ns"] / 1e9,
        **{k: cols[k] for k in ("rtxq_sack_bytes", "rtxq_nr_bytes", "rtxq_whatif_bytes", "sacked_bytes",
                                "nr_acked_bytes", "blocked", "gap_open", "frame")},
        "event": pd.Categorical.from_codes((~is_data).astype(np.int8), ["data", "ack"]),
        "rtxq_bytes": cols["rtxq_bytes"],
        "freed_bytes": pd.arrays.IntegerArray(cols["freed_bytes"], is_data.astype(bool)),
        "time_ns": cols["time_ns"],
        # in the constructor, not set afterwards: pandas copies a column it is given by __setitem__
        **{name: _tsn_column(cols.get(name), len(is_data), nullable_tsns) for name in TSN_COLUMNS
           if name in cols or nullable_tsns},
    }, copy=False)  # the columns are fresh arrays: no need to copy them into 2-D blocks
    return frame


def _tsn_column(values, n, nullable):
    """An rtxq TSN column as the frame shows it: nullable Int64 when `nullable` or when some entries lack it."""
    import pandas as pd

    if values is None:
        return pd.arrays.IntegerArray(np.zeros(n, np.int64), np.ones(n, bool))
    return pd.array(values, "Int64") if nullable and isinstance(values, np.ndarray) else values


def blocking_frame(entries) -> pd.DataFrame:
    return blocking_table(_stack(entries, "blocking", BLOCKING_COLUMNS))


def blocking_table(cols) -> pd.DataFrame:
    """blocking_frame of the entries' columns stacked (as rtxq_table)."""
    import pandas as pd

    end_frame = cols["end_frame"]
    return pd.DataFrame({
        "flow": cols["flow"],
        "start_s": cols["start_ns"] / 1e9,
        "end_s": cols["end_ns"] / 1e9,
        "duration_s": (cols["end_ns"] - cols["start_ns"]) / 1e9,
        "rtxq_bytes_at_start": cols["rtxq_bytes_at_start"],
        "gap_open": cols["gap_open"],
        "start_frame": cols["start_frame"],
        "end_frame": pd.arrays.IntegerArray(np.maximum(end_frame, 0), end_frame < 0),
        "start_ns": cols["start_ns"],  # exact; the float seconds above round to ~0.2 us
        "end_ns": cols["end_ns"],
    }, copy=False)


def flow_codes(ids, lengths):
    """The `flow` column of stacked tables: each entry id repeated over its rows, as a categorical."""
    import pandas as pd

    # the codes made in the width the categorical keeps them in (a million rows: no int64 array to narrow)
    code_type = np.int8 if len(ids) < 1 << 7 else np.int16 if len(ids) < 1 << 15 else np.int32
    return pd.Categorical.from_codes(np.repeat(np.arange(len(ids), dtype=code_type), lengths), ids)


def _stack(entries, attribute, dtypes) -> dict:
    """Concatenates the entries' column dicts; `flow` becomes a categorical of the entry ids; a column
    some entries lack becomes a nullable integer column, NA there; no entries: empty `dtypes` columns."""
    import pandas as pd

    if not entries:
        return {"flow": pd.Categorical([]), **{name: np.empty(0, dtype) for name, dtype in dtypes.items()}}
    parts = [getattr(e, f"{attribute}_columns") for e in entries]
    lengths = [len(next(iter(p.values()))) if p else 0 for p in parts]
    ids = [e.summary["id"] for e in entries]
    out = {"flow": flow_codes(ids, lengths)}
    names = list(dict.fromkeys(k for p in parts for k in p))
    for name in names:
        present = [p.get(name) for p in parts]
        if all(a is not None for a in present):
            if len(present) == 1:
                out[name] = present[0]
                continue
            out[name] = joined = np.concatenate(present)
            # the entries now view the joined column, so their own copies can go (peak memory)
            offset = 0
            for part, n in zip(parts, lengths):
                part[name] = joined[offset:offset + n]
                offset += n
        else:
            out[name] = pd.arrays.IntegerArray(*fill_missing(present, lengths))
    return out


def fill_missing(present, lengths) -> tuple:
    """Parts of an integer column, None where a part lacks it, joined -> (values, mask: True where missing):
    filled in place, one array of values and one mask, no parts of zeros joined and copied."""
    values, mask = np.zeros(sum(lengths), np.int64), np.ones(sum(lengths), bool)
    offset = 0
    for a, n in zip(present, lengths):
        if a is not None:
            values[offset:offset + n] = a
            mask[offset:offset + n] = False
        offset += n
    return values, mask


def gain(throughput_a, throughput_b):
    """Gain of run A over run B in percent (metrics.md); None when B moved no data."""
    return (throughput_a - throughput_b) / throughput_b * 100 if throughput_b else None


# the keys of short_tcp_rows's rows, as entry_summary makes them for a TCP connection's direction
SHORT_KEYS = summary_order(entry_summary(
    dict.fromkeys(("protocol", "src", "dst", "flow", "side", "level", "vantage")), "", False,
    (0, True, "estimated", NEVER, "", True), 0, (0, 0, 0), 1, 0, 0, 0, 0, True, 0, 0, 0, 0, None))
SHORT_KEYS_FAR = summary_order(SHORT_KEYS + ("far_serials_ignored", "far_serials_first_frame"))
