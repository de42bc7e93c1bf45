"""`nrsack check`'s engine: every rule of docs/rules.md over every flow of a capture, in one chunked pass.

The capture is read in chunks through the analyzer's own Pipeline (pipeline.py): the same flows and the
same levels (flows.py, _levels.c), so every serial number is unwrapped once, by the level that feeds the
scoreboard. The pipeline hands the checker each level's rows of a chunk (DirectionAccumulator.on_part); the checker keeps
per flow only its rule state (rules/state.py) from chunk to chunk, so memory is a chunk plus per-flow state
plus the findings.

Python work follows the rows that matter, not every row. Per direction and chunk, the NR ledger (C,
analyzer/rules/_ledger.c NrLedger: the NR-acked pieces with the frame that first NR-acked each) takes every row
in one call and writes per row the facts the revocation and retransmission rules read; numpy then picks the
rows no rule can fire on: data neither below the cum ack nor over NR-acked units, acks that neither go back,
nor leave NR-acked units out, nor hold a unit in an R and an NR block, nor (SCTP) cover unsent data or break a
block list's own rules, nor (TCP, MPTCP) carry NR blocks. Their effect on the state (highest sent, cum ack and
its recent steps) is applied at once (state.advance_quietly); every other row becomes an
Event and goes through state.advance and its rules one by one. Quiet acks that only the handshake can fault
(NR-01 / NR-06 by SCTP chunk type, TN-01 / MN-01 for NR blocks: the notes on every ack of a capture without
its handshake) are judged as runs: a NoteRun keeps their frames and numbers, and Findings makes their dicts
or JSON lines only when asked. A flow's chunk that holds any FSACK chunk (or a flow that
ever had FSACK: FS-04 / FS-05 look at every ack and DATA) is taken whole; in a chunk that holds its handshake
every ack is an event (what was negotiated changes there).

What stays Python state per flow: the handshake events (negotiation rules), the FSACK procedure, the cum
ack's last steps (the frame that cum-acked a resent unit), the highest unit sent.

A finding: rule ID, severity, flow, direction, frames (the breaking frame last), message.
"""

import json
from bisect import bisect_left
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from nrsack.analyzer import _native
from nrsack.analyzer.state import scoreboard as A
from nrsack.analyzer.read import events as E
from nrsack.analyzer.state import flows as F
from nrsack.analyzer.state.pipeline import MAX_OPEN_FLOWS, Pipeline, grouped_order
from nrsack.analyzer.state.run import Run, few_collections
from nrsack.analyzer.state.stores import NullStore
from nrsack.analyzer.rules import REGISTRY, SEVERITIES, frames
from nrsack.analyzer.rules import inputs as I
from nrsack.analyzer.rules import state as S
from nrsack.analyzer.rules import mptcp as M, tcp as T
from nrsack.analyzer.rules.sctp import NR_SACK, SACK, against_handshake, negotiated

COLUMNS = ["rule", "severity", "flow", "direction", "frames", "message"]
# the rule levels of each flow protocol (level "" = reader findings, any protocol)
PROTOCOL_LEVELS = {"sctp": {"sctp"}, "tcp": {"tcp"}, "mptcp": {"tcp", "mptcp"}}
LOWEST = np.iinfo(np.int64).min
FLAG_OLDER = 1024  # _scoreboard.c: an ack the core judged maybe sent before one already seen


def applies(rule, protocol):
    """Whether the rule can fire on a flow of this protocol (GEN-01, level "" only, on every one)."""
    levels = set(rule.levels) - {""}
    return bool(levels & PROTOCOL_LEVELS[protocol]) if levels else True


@dataclass(frozen=True)
class Context:
    """What a rule may know beyond the event and the states: the flow, per sender side the capture's
    vantage (analysis.vantage: the handshake's reply gaps), and per side every address seen so far."""

    flow: F.Flow
    vantage: list
    addresses: list


def select(rule_ids=None):
    """The registered rules named (all when None); KeyError names an unknown ID."""
    if rule_ids is None:
        return list(REGISTRY.values())
    unknown = [r for r in rule_ids if r not in REGISTRY]
    if unknown:
        raise KeyError(", ".join(unknown))
    return [REGISTRY[r] for r in rule_ids]


def _dispatch(rules):
    table = {}
    for r in rules:
        for kind in r.kinds:
            for level in r.levels:
                table.setdefault((kind, level), []).append(r)
    return table


def _finding(r, verdict, flow_id, direction):
    return {"rule": r.id, "severity": "note" if verdict.note else r.severity, "flow": flow_id,
            "direction": direction, "frames": list(verdict.frames), "message": verdict.message}


@dataclass
class Lane:
    """One level's rows of one direction in one chunk, as the level unwrapped them (numpy arrays)."""

    key: tuple             # state.direction_key: (level, conn, sender)
    level: str
    sender: int
    row: np.ndarray        # chunk rows
    kind: np.ndarray       # 0 data, 1 ack
    lo: np.ndarray
    hi: np.ndarray
    cum: np.ndarray        # acks: first unit not cum-acked
    frame: np.ndarray
    time_ns: np.ndarray
    conn: np.ndarray
    older: np.ndarray      # acks the core judged maybe sent before one already seen (FLAG_OLDER)
    part: F.ScoreboardInput  # the level's rows: their blocks' units (inputs.lane_blocks)
    facts: np.ndarray = None   # rows x FACTS: the NR ledger's facts (Checker._facts)
    quiet: np.ndarray = None   # rows no rule reading the direction's state can fire on (Checker._pick)
    told: np.ndarray = None    # quiet rows the negotiation rules still judge


def _lane(key, level, sender, frows, part, flags):
    row = frows[part.pos]
    cum = part.hi if level == "sctp" else part.lo
    return Lane(key, level, sender, row, part.kind, part.lo, part.hi, np.where(part.kind == 1, cum, LOWEST), part.frame,
                part.time_ns, part.conn, (flags & FLAG_OLDER) != 0, part)


PLAN_CHUNKS = 8  # chunks a PlainChunk waits to be read (a flood's connections are released sooner)
FACTS = 5  # NrLedger.feed's facts per row: count, lo, hi, frame, r_and_nr
LEDGER_DATA, LEDGER_ACK, LEDGER_START = 0, 1, 2
def _ledger(numbers=None):
    """A direction's NrLedger; numbers: (cum ack, highest sent) that _plain_chunk kept instead of feeding one
    (None each: not fed), fed to it as a bare data row and a bare ack (a ledger without a piece holds nothing else)."""
    ledger = _native.NrLedger()
    cum, sent = numbers or (None, None)
    kind, at = [], []
    if sent is not None:
        kind.append(LEDGER_DATA)
        at.append((sent, sent, 0))
    if cum is not None:
        kind.append(LEDGER_ACK)
        at.append((0, 0, cum))
    if kind:
        n = len(kind)
        lo, hi, cum_ = (np.array(column, np.int64) for column in zip(*at))
        zeros = np.zeros(n, np.int64)
        empty = np.zeros(0, np.int64)
        ledger.feed(np.array(kind, np.int8), lo, hi, cum_, zeros, zeros, zeros, empty, empty, np.zeros(0, np.int8),
                    np.empty((n, FACTS), np.int64), False, True)
    return ledger


def _ledger_numbers(numbers, lane, starts, offset):
    """The (cum ack, highest sent) a direction's NrLedger would hold after a _plain_chunk lane's rows and its
    start events (each fed before the rows of its own packet), as _facts feeds them, from `numbers` before
    (None each: not fed); offset: the chunk's first event index."""
    cum, sent = numbers or (None, None)
    key, lane_rows, kind, lo, hi = lane[:5]
    fed = sorted([(int(e.index) - offset, 0, e) for e in starts if S.direction_key(e) == key] +
                 [(row, 1, i) for i, row in enumerate(lane_rows)], key=lambda item: item[:2])
    for _, is_row, what in fed:
        if not is_row:  # a start: the direction's first unit, unless data came first
            if sent is None:
                sent = what.hi
                if cum is None:
                    cum = what.cum
        elif kind[what]:
            cum = lo[what] if cum is None or lo[what] > cum else cum
        else:
            sent = hi[what] if sent is None or hi[what] > sent else sent
    return cum, sent


def _quiet_rows(state, lane, advances, start, stop):
    """Checker._quiet of a _plain_chunk lane (every row quiet): the state after rows start .. stop - 1;
    advances: the lane's acks that move the cum ack."""
    if stop <= start:
        return state
    key, _, kind, lo, hi, frame, time_ns = lane
    data_hi = last_data_ns = None
    for i in range(stop):
        if not kind[i]:  # the highest sent so far (the rows before were applied already), the last data's time
            data_hi = hi[i] if data_hi is None or hi[i] > data_hi else data_hi
            last_data_ns = time_ns[i] if i >= start else None
    if last_data_ns is None:
        data_hi = None
    moved = [i for i in advances if start <= i < stop]
    steps = tuple([(lo[i], frame[i]) for i in moved[-S.CUM_HISTORY:]])
    d = state.dirs.get(key, S.EMPTY)
    new = S.advance_quietly(d, data_hi, last_data_ns, steps)
    return state._replace(dirs={**state.dirs, key: new}) if new is not d else state


class PlainChunk(NamedTuple):
    """Checker._plain_chunk's reading of a TCP connection's chunk (every row quiet), applied to a FlowRun when its
    state is first read (a flood's connection is released before it is). Numbers, arrays and tuples of them
    only: the cyclic collector stops tracking it, where it traverses a FlowRun's state at every pass."""

    lanes: tuple    # per lane: (key, chunk rows, kind, lo, hi, frame, time_ns), arrays (kind, lo, hi: views of
    #                 the chunk's fused lanes, 32 bytes a row; the others copies, not views of its wider records)
    starts: tuple   # per SYN row: (row, side, its serial unwrapped, its record as np.void)
    picked: tuple   # per lane: its acks that move the cum ack
    chunk: int      # the chunk's number (Checker.chunks)
    offset: int     # its first event index
    last_index: int
    last_frame: int
    last_time: int

    def apply(self, run, conns):
        """run after the chunk (conns: the capture's, ConnList): as _run, each start event after the quiet rows
        of its direction before it, then the rest per lane; the ledger numbers (_ledger_numbers) and where the
        flow's last event lies. -> run."""
        state, picked, offset = run.state, self.picked, self.offset
        lanes = [(lane[0], *(column.tolist() for column in lane[1:])) for lane in self.lanes]
        rows = I.ChunkRows.of_rows(offset, conns, {row: side for row, side, _, _ in self.starts})
        starts = [I.start_event_at(rows, row, "tcp", side, value, record.item())
                  for row, side, value, record in self.starts]
        done = [0] * len(lanes)
        for e in starts:
            key = S.direction_key(e)
            for j, lane in enumerate(lanes):
                if lane[0] == key:
                    n = bisect_left(lane[1], e.index - offset)
                    state = _quiet_rows(state, lane, picked[j], done[j], n)
                    done[j] = max(done[j], n)
            state = S.advance(state, e)
        for j, lane in enumerate(lanes):
            state = _quiet_rows(state, lane, picked[j], done[j], len(lane[1]))
        run.state = state
        for lane in lanes:
            run.ledgers[lane[0]] = _ledger_numbers(run.ledgers.get(lane[0]), lane, starts, offset)
        run.last_index, run.last_frame, run.last_time = self.last_index, self.last_frame, self.last_time
        return run


@dataclass(slots=True)
class FlowRun:
    """A flow's rule state carried from chunk to chunk (slots, and the SCTP-only fields made when first needed:
    a flood holds tens of thousands of them)."""

    state: S.FlowState = S.FlowState()
    sources: list = None  # per side: packet source addresses seen (SCTP: _sources)
    last_index: float = None
    last_frame: int = None
    last_time: int = 0
    fsack: bool = False
    far_side: int = None
    ledgers: dict = field(default_factory=dict)  # direction key -> its NrLedger (or _plain_chunk's numbers for one)
    seen_pairs: set = None  # conn * 2 + dir of the packets seen (SCTP: _sources)


class Checker:
    """The rules over a capture fed chunk by chunk: `feed(cap)` per chunk, then `finish()` -> findings."""

    def __init__(self, rule_ids=None, pipeline=None, every_row=False, max_open_flows=MAX_OPEN_FLOWS):
        self.every_row = every_row  # every row through state.advance, none applied at once (the tests' reference)
        self.rules = select(rule_ids)
        self.selected = {r.id for r in self.rules}
        self.dispatch = _dispatch(self.rules)
        self.pipeline = None
        self.attach(pipeline or Pipeline(NullStore(), max_open_flows=max_open_flows))
        self.parts = {}
        self.runs = {}
        self.planned = {}  # flow id -> its PlainChunk not yet applied (it has no FlowRun yet)
        # per chunk of the last PLAN_CHUNKS: the flow ids planned there
        self.plan_batches = deque()
        self.chunks = 0  # chunks fed so far
        self.chunk_ends = None  # the chunk's frame and time_ns columns (where a plain chunk's flow last lies)
        self.found = []
        self.note_runs = []  # NoteRuns: findings kept as numbers until asked for
        self.seen_findings = Counter()
        self.last = None

    def attach(self, pipeline):
        """Rides on `pipeline` (before its first chunk): its levels' rows and its chunks come here too."""
        self.pipeline = pipeline
        pipeline.on_part = self._on_part
        pipeline.on_chunk = self._on_chunk
        pipeline.on_cut = self._on_cut
        pipeline.fuse_watched = not self.every_row  # (_plain_chunk reads what a FusedPart holds)
        # new connections whose chunk is quiet are parked, not fed (Pipeline._checker_parks): read if they show again
        pipeline.park_plain = not self.every_row

    def _on_part(self, sender, part, flags):
        self.parts[sender.key] = part, flags

    def feed(self, cap: E.Capture):
        """Feeds one chunk to the pipeline (the analyzer's pass 1) and, through its on_chunk, the rules."""
        self.pipeline.feed(cap)

    def _on_chunk(self, cap, flow_of, side_of):
        self.last = cap
        self._apply_old_plans()
        self.chunks += 1
        rows = I.ChunkRows(cap, side_of)
        self.plan_batches.append([])
        parked = self.pipeline.parked_now
        if len(parked):  # read in the chunk where they show again, if they do (their rows carry no reader finding)
            flow_of = np.where(np.isin(flow_of, parked), -1, flow_of)
        per_flow = self._reader_events(cap, rows, flow_of)
        if len(cap.ev):
            ev = cap.ev
            order = grouped_order(flow_of)
            order = order[flow_of[order] >= 0]
            sorted_flows = flow_of[order]
            # each flow's rows of the chunk (the flows present only: a flood's table holds a million)
            starts = np.flatnonzero(np.diff(sorted_flows, prepend=-1))
            stops = np.append(starts[1:], len(order))
            # per flow of the chunk, for _plain_chunk: whether any of its rows carries a wire block, its SYN rows
            blocked = np.add.reduceat(ev["blk_count"][order] > 0, starts) > 0 if len(order) else starts
            syn_rows = np.flatnonzero((flow_of >= 0) & ((ev["tcp_flags"] & E.TCP_SYN) != 0))
            syns = {}
            syn_records = ev[syn_rows]  # (a plan keeps its SYNs' as np.void, a third of a tuple of their fields)
            syn_flows = flow_of[syn_rows].tolist()
            for k, (row, fid, rec) in enumerate(zip(syn_rows.tolist(), syn_flows, syn_records.tolist())):
                syns.setdefault(fid, []).append((row, rec, syn_records, k))
            flows = self.pipeline.table.flows
            self.chunk_ends = ev["frame"], ev["time_ns"]
            for fid, start, stop, loud in zip(sorted_flows[starts].tolist(), starts.tolist(), stops.tolist(),
                                              blocked.tolist()):
                flow = flows[fid]
                if flow is None:  # released for the budget and judged (_on_cut): its later events are not
                    continue
                if fid in self.planned:
                    self._run_of(fid)
                frows = order[start:stop]
                extra = per_flow.pop(fid, [])
                if extra or loud or not self._plain_chunk(flow, frows, rows, syns.get(fid, ())):
                    self._flow_chunk(flow, frows, rows, extra)
        self.parts = {}

    # -- one flow's rows of one chunk

    def _flow_chunk(self, flow, frows, rows, extra):
        run = self.runs.setdefault(flow.id, FlowRun())
        cap = rows.cap
        ev = cap.ev
        chunk = ev["chunk"][frows]
        tcp_flags = ev["tcp_flags"][frows]
        sides = rows.side_of[frows]
        events = list(extra)
        starts = []
        if flow.protocol == "sctp":
            fsack_rows = frows[np.isin(chunk, list(I.FSACK_KINDS))]
            run.fsack |= bool(len(fsack_rows))
            events += [I.fsack_event(rows, row) for row in fsack_rows.tolist()]
            for side, kind in ((0, 1), (1, 2)):
                starts += [(row, "sctp", side, -1) for row in frows[(sides == side) & (chunk == kind)].tolist()]
        else:
            syn = frows[(tcp_flags & E.TCP_SYN) != 0]
            starts += [(row, "tcp", int(rows.side_of[row]), int(ev["conn"][row])) for row in syn.tolist()]
        levels = self._levels(flow)
        started = []
        for row, level, sender, conn in starts:
            reference = levels.get((level, conn if level == "tcp" else -1, sender))
            space = getattr(reference, "space", None)  # none once the flow ended (EndedLevel)
            started.append(I.start_event(rows, row, level, sender, space))
        events += started
        lanes = self._lanes(flow, frows)
        whole = run.fsack or self.every_row
        # a handshake in the chunk changes what was negotiated, which the acks' rules read: every ack is an event
        loud_acks = whole or bool(started)
        listed = negotiated(run.state, E.EXT_NRSACK)[0]
        for lane in lanes:
            d = run.state.dirs.get(lane.key, S.EMPTY)
            mine = sorted((e for e in started if S.direction_key(e) == lane.key), key=lambda e: e.index)
            # the direction's start taken first: its first unit only makes more data rows loud, never fewer
            for e in mine:
                d = S.on_start(d, e)
            never = flow.never_renege[1 - lane.sender]
            screen = self._facts(run, lane, mine, never and lane.level == "tcp", cap)
            self._pick(lane, d, whole, loud_acks, listed, ev, screen)
            loud = ~lane.quiet
            events += [I.lane_event(rows, lane.level, lane.sender, row, kind, lo, hi, never, older, facts, blocks)
                       for row, kind, lo, hi, older, facts, blocks in zip(
                           lane.row[loud].tolist(), lane.kind[loud].tolist(), lane.lo[loud].tolist(),
                           lane.hi[loud].tolist(), lane.older[loud].tolist(), lane.facts[loud].tolist(),
                           I.ack_blocks(screen, np.flatnonzero(loud)))]
        events.sort(key=lambda e: (e.index, e.level != "tcp"))
        self._sources(run, flow, frows, sides, cap)
        self._run(flow, run, events, {lane.key: lane for lane in lanes})
        run.last_index = cap.offset + int(frows[-1])
        run.last_frame, run.last_time = int(ev["frame"][frows[-1]]), int(ev["time_ns"][frows[-1]])
        self._far(run, frows, rows, levels)

    def _plain_chunk(self, flow, frows, rows, syns):
        """A plain TCP connection's rows of a chunk, none carrying a wire block, when no rule can fire on them:
        the state they leave made in plain Python, as _flow_chunk would make it (its start events through
        state.advance, its quiet rows as _quiet applies them, in the same order), without lanes, numpy or the
        NR ledger. Such a connection NR-acks nothing, so its ledger would hold no piece: what it would hold,
        the cum ack and the highest sent it was fed, is kept as numbers (_ledger makes the real one when a
        later chunk needs it). A SYN or data flood's every connection is one. -> whether it was taken so
        (False: a row is loud, a serial was far, or the flow has a real ledger; nothing was changed).
        A connection first seen in this chunk keeps its plan (PlainChunk), applied only when something reads
        its state (_run_of): a flood's connections are mostly released by the budget before anything does."""
        if flow.protocol != "tcp" or self.every_row or len(flow.conns) != 1:
            return False
        run = self.runs.get(flow.id)
        if run is not None and any(type(v) is not tuple for v in run.ledgers.values()):
            return False
        mine = self.pipeline.senders.get(flow.id)
        conn = flow.conns[0]
        if mine:
            levels = [sender.level for sender in mine["main"]]
            if any(getattr(level, "far", None) is not None and level.far.count for level in levels):
                return False  # _far names its side: the general way
            spaces = [getattr(level, "space", None) for level in levels]
        else:
            spaces = None
        lanes = []
        for side in (0, 1):
            fed = self.parts.get((flow.id, side))
            if fed is not None:
                part = fed[0]
                lanes.append((("tcp", conn, side), frows[part.pos], part.kind, part.lo, part.hi, part.frame.copy(),
                              part.time_ns.copy()))
        starts = []
        for row, rec, records, k in syns:
            side = int(rows.side_of[row])
            space = spaces[side] if spaces is not None else self.pipeline.dormant_space(flow.id, side)
            starts.append((row, side, I.start_serial(rec, "tcp", space), records[k]))
        state = S.FlowState() if run is None else run.state
        picked = []
        for key, _, kind, lo, hi, _, _ in lanes:
            d = state.dirs.get(key, S.EMPTY)
            sent, cum = d.snd_max, d.cum
            for _, side, value, _ in starts:  # the cum ack after the direction's starts (state.on_start), as _pick
                if sent is None and side == key[2]:  # takes it (a start's hi and cum: its serial + 1)
                    sent, cum = value + 1, value + 1 if cum is None else cum
            cum = LOWEST if cum is None else cum
            advances = []
            for i, (k, a, b) in enumerate(zip(kind.tolist(), lo.tolist(), hi.tolist())):
                if a < cum or a < 0 or b < 0:  # data below the cum ack, an ack going back: loud
                    return False
                if k and a > cum:
                    advances.append(i)
                    cum = a
            picked.append(tuple(advances))
        last = int(frows[-1])
        offset = rows.cap.offset
        frame, time_ns = self.chunk_ends
        plan = PlainChunk(tuple(lanes), tuple(starts), tuple(picked), self.chunks, offset, offset + last,
                          int(frame[last]), int(time_ns[last]))
        if run is None:
            self.planned[flow.id] = plan
            self.plan_batches[-1].append(flow.id)
        else:
            plan.apply(run, rows.conns)
        return True

    def _apply_old_plans(self):
        """The plans of PLAN_CHUNKS chunks ago still not read applied now: they hold views of their chunk's fused
        rows, which a connection still open and quiet would otherwise keep for the rest of the capture."""
        while len(self.plan_batches) >= PLAN_CHUNKS:
            for fid in self.plan_batches.popleft():
                if fid in self.planned:
                    self._run_of(fid)

    def _run_of(self, fid):
        """The flow's FlowRun (None: none yet), its PlainChunk applied first if it has one."""
        plan = self.planned.pop(fid, None)
        if plan is not None:
            self.runs[fid] = self._applied(plan, FlowRun())
        return self.runs.get(fid)

    def _applied(self, plan, run):
        """plan applied to run (the capture's conns name its start events' endpoints)."""
        return plan.apply(run, self.pipeline.conns)

    def _levels(self, flow):
        """(level, conn, sender) -> the pipeline's level object of each lane of the flow."""
        mine = self.pipeline.senders.get(flow.id, {})
        out = {}
        if not mine and flow.protocol == "tcp":  # no levels yet (Pipeline._dormant): what they would hold
            for side in (0, 1):
                out[("tcp", flow.conns[0], side)] = level = F.TcpLevel(flow.conns[0], side, flow)
                level.space = self.pipeline.dormant_space(flow.id, side)
            return out
        for side, sender in enumerate(mine.get("main", ())):
            conn = flow.conns[0] if flow.protocol == "tcp" else -1
            out[(flow.protocol, conn, side)] = sender.level
        if flow.protocol == "mptcp":
            for conn in flow.conns:
                for side, sender in enumerate(mine.get(conn, ())):
                    out[("tcp", conn, side)] = sender.level
        return out

    def _whole_part(self, key):
        """The (part, flags) the pipeline fed for `key` this chunk, a FusedPart made whole (the general way reads
        its blocks and every column)."""
        fed = self.parts.get(key)
        if fed is not None and type(fed[0]) is A.FusedPart:
            fed = self.parts[key] = fed[0].full(), fed[1]
        return fed

    def _lanes(self, flow, frows):
        lanes = []
        for side in (0, 1):
            fed = self._whole_part((flow.id, side))
            if fed is not None:
                conn = flow.conns[0] if flow.protocol == "tcp" else -1
                lanes.append(_lane((flow.protocol, conn, side), flow.protocol, side, frows, *fed))
            if flow.protocol == "mptcp":
                for conn in flow.conns:
                    fed = self.parts.get((flow.id, side, conn))
                    if fed is not None:
                        lanes.append(_lane(("tcp", conn, side), "tcp", side, frows, *fed))
        return lanes

    @staticmethod
    def _facts(run, lane, starts, never_renege, cap):
        """Feeds the lane's rows (and the direction's start events among them, in order) to its NR ledger: its
        facts per row go to lane.facts. Returns what _pick reads of the wire blocks."""
        ledger = run.ledgers.get(lane.key)
        if type(ledger) is not _native.NrLedger:
            ledger = run.ledgers[lane.key] = _ledger(ledger)
        is_ack = lane.kind == 1
        blocks = I.lane_blocks(cap, lane.level, lane.row, is_ack, lane.part)
        bstart, bcount = blocks.bstart, blocks.bcount
        kind, lo, hi = lane.kind.astype(np.int8), lane.lo, lane.hi
        cum, frame = np.where(is_ack, lane.cum, 0), lane.frame.astype(np.int64)
        if starts:  # a start is fed before the rows of its own packet and after the earlier ones
            at = np.searchsorted(lane.row, [int(e.index) - cap.offset for e in starts], "left")
            kind = np.insert(kind, at, LEDGER_START)
            lo, hi = np.insert(lo, at, [e.lo for e in starts]), np.insert(hi, at, [e.hi for e in starts])
            cum, frame = np.insert(cum, at, [e.cum for e in starts]), np.insert(frame, at, [e.frame for e in starts])
            bstart, bcount = np.insert(bstart, at, 0), np.insert(bcount, at, 0)
        facts = np.empty((len(kind), FACTS), np.int64)
        # NR by wire kind: a TCP level marks a never-renege receiver's SACK blocks NR too, but the ledger takes that
        # from never_renege and its R-and-NR fact must still see them as SACK blocks
        ledger.feed(kind, lo, hi, cum, frame, bstart, bcount, blocks.blo, blocks.bhi, blocks.nr, facts, never_renege,
                    lane.level != "sctp")
        lane.facts = np.delete(facts, at + np.arange(len(at)), axis=0) if starts else facts
        return blocks

    @staticmethod
    def _pick(lane, d, whole, loud_acks, listed, ev, screen):
        """lane.quiet: the rows no rule can fire on (see the module docstring); exact, since what decides it (the
        ledger's facts, the cum ack and highest sent before each row) is the same whether rows are applied at
        once or one by one. Also the running figures _quiet reads, so applying a run of quiet rows costs a few
        lookups."""
        n = len(lane.row)
        is_data = lane.kind == 0
        cum_before = np.maximum.accumulate(np.concatenate(([LOWEST if d.cum is None else d.cum], lane.cum[:-1])))
        lane.told = np.zeros(n, bool)
        if whole or not n:
            lane.quiet = lane.told
        else:
            facts = lane.facts
            data = is_data & (lane.lo >= cum_before) & (facts[:, 0] == 0)
            ack = ~is_data & (lane.cum >= cum_before) & (facts[:, 0] == 0) & (facts[:, 4] == 0)
            owner, blo, bhi, bnr, wlo, whi = screen.owner, screen.blo, screen.bhi, screen.nr, screen.wlo, screen.whi
            if lane.level == "sctp":
                sent = np.where(is_data, lane.hi, LOWEST)
                sent_before = np.maximum.accumulate(np.concatenate(([LOWEST if d.snd_max is None else d.snd_max],
                                                                    sent[:-1])))
                top = lane.cum.copy()
                np.maximum.at(top, owner, bhi)
                ack &= (sent_before != LOWEST) & (top <= sent_before)  # NR-09
                # NR-05 / NR-08 on the wire: a block Start < 2 or > End, or not above the previous one of its list + 1
                group = owner * 2 + bnr
                follows = np.concatenate(([False], group[1:] == group[:-1]))
                prev_end = np.concatenate(([0], whi[:-1]))
                bad = (wlo < 2) | (wlo > whi) | (follows & (wlo <= prev_end + 1))
                ack[owner[bad]] = False
                chunk = ev["chunk"][lane.row]
                # the chunk type the handshake did not agree on: NR-01 / NR-06 only, they read no direction state
                lane.told = ack & np.where(chunk == NR_SACK, not listed, listed)
            else:
                nr = bnr == 1
                lane.nr_count = np.bincount(owner[nr], minlength=n)
                if lane.level == "tcp":  # TN-05: an NR block empty or at or below the ack
                    bad = nr & ((blo >= bhi) | (blo <= lane.cum[owner]))
                else:  # MN-05 on the wire: Start >= End, or below the previous block's End (every block is NR)
                    follows = np.concatenate(([False], owner[1:] == owner[:-1]))
                    bad = (wlo >= whi) | (follows & (wlo < np.concatenate(([0], whi[:-1]))))
                ack[owner[bad]] = False
                # NR blocks the handshake may not have permitted: TN-01 / MN-01 only, they read no direction state
                lane.told = ack & (lane.nr_count > 0)
            if loud_acks:  # the acks the handshake's rules may judge (SCTP: every one; TCP, MPTCP: NR blocks)
                ack &= np.zeros(n, bool) if lane.level == "sctp" else lane.nr_count == 0
                lane.told = np.zeros(n, bool)
            lane.quiet = data | ack
        at = np.arange(n)
        quiet_data, quiet_ack = lane.quiet & is_data, lane.quiet & ~is_data
        lane.sent_upto = np.maximum.accumulate(np.where(is_data, lane.hi, LOWEST)) if n else lane.hi
        lane.last_quiet_data = np.maximum.accumulate(np.where(quiet_data, at, -1)) if n else at
        # the quiet acks that move the cum ack (state._on_ack: cum > the highest before), in order
        lane.advances = np.flatnonzero(quiet_ack & (lane.cum > cum_before))

    def _context(self, flow, run):
        return Context(flow, [A.vantage(flow, s) for s in (0, 1)], self._addresses(run, flow))

    def _run(self, flow, run, events, lanes):
        """The flow's events of the chunk in order; each lane's quiet rows applied just before the next event
        of their direction, and the rest at the end."""
        ctx = None  # made for the first event a rule looks at (a SYN flood's events have none)
        # per event of a lane: how many of the lane's rows lie in rows before its own (one search per lane)
        upto = [None] * len(events)
        offset = self.last.offset
        for key, lane in lanes.items():
            mine = [k for k, e in enumerate(events) if e.kind in DIRECTION_KINDS and S.direction_key(e) == key]
            if mine:
                at = np.searchsorted(lane.row, [int(events[k].index) - offset for k in mine], "left")
                for k, n in zip(mine, at.tolist()):
                    upto[k] = n
        done = dict.fromkeys(lanes, 0)
        state = run.state
        rules_of = self.dispatch.get
        for k, e in enumerate(events):
            n = upto[k]
            if n is not None:
                key = S.direction_key(e)
                if n > done[key]:
                    state = self._quiet(state, lanes[key], done[key], n)
                    done[key] = n
            after = S.advance(state, e)
            checks = rules_of((e.kind, e.level), ())
            if checks and ctx is None:
                ctx = self._context(flow, run)
            for r in checks:
                for verdict in r.check(e, state, after, ctx):
                    self.found.append(_finding(r, verdict, flow.id, self._direction(flow, e)))
            state = after
        for key, lane in lanes.items():
            state = self._quiet(state, lane, done[key], len(lane.row))
        run.state = state
        self._negotiation(flow, run.state, lanes)

    def _negotiation(self, flow, state, lanes):
        """The rules that judge an ack against the handshake alone (NR-01 / NR-06 by chunk type, TN-01 per
        connection, MN-01 per flow) on the lanes' quiet acks they may break (lane.told), a run at a time: each
        finding differs only in the ack's frame and one number (SCTP: the cum; TCP, MPTCP: the NR block count).
        The handshake state is the chunk's: a chunk holding handshake events has no quiet acks."""
        ev = self.last.ev
        for lane in lanes.values():
            told = np.flatnonzero(lane.told)
            if not len(told):
                continue
            if lane.level == "sctp":
                chunks = ev["chunk"][lane.row[told]]
                runs = [(told[chunks == chunk], against_handshake(chunk, state), -1) for chunk in (NR_SACK, SACK)]
                numbers = (lane.cum - 1) % I.TWO32
            elif lane.level == "tcp":
                conns = ev["conn"][lane.row[told]]
                runs = [(told[conns == conn], T.without_permission(state, conn), conn)
                        for conn in np.unique(conns).tolist()]
                numbers = lane.nr_count
            else:
                runs = [(told, M.without_permission(state, flow), -1)]
                numbers = lane.nr_count
            for mine, broken, conn in runs:
                if not len(mine) or broken is None or broken[0] not in self.selected:
                    continue
                rule_id, hs, parts, note = broken
                where = I.Event(index=0, frame=0, time_ns=0, kind=I.ACK, level=lane.level, side=1 - lane.sender,
                                sender=lane.sender, conn=conn)
                self.note_runs.append(NoteRun(
                    rule_id, "note" if note else REGISTRY[rule_id].severity, flow.id, self._direction(flow, where),
                    list(frames(*hs)), lane.frame[mine], numbers[mine], parts,
                    2 * len(self.found) - 1))

    @staticmethod
    def _quiet(state, lane, start, stop):
        """The state after the quiet rows among the lane's rows start .. stop - 1 (the others were events)."""
        if stop <= start:
            return state
        last = stop - 1
        k = int(lane.last_quiet_data[last])
        data_hi = last_data_ns = None
        if k >= start:  # the highest sent so far: the rows before were applied already, so a running max does
            data_hi, last_data_ns = int(lane.sent_upto[last]), int(lane.time_ns[k])
        a, b = np.searchsorted(lane.advances, (start, stop)).tolist()
        moved = lane.advances[max(a, b - S.CUM_HISTORY):b]
        steps = tuple(zip(lane.cum[moved].tolist(), lane.frame[moved].tolist()))
        d = state.dirs.get(lane.key, S.EMPTY)
        new = S.advance_quietly(d, data_hi, last_data_ns, steps)
        return state._replace(dirs={**state.dirs, lane.key: new}) if new is not d else state

    def _direction(self, flow, e):
        if e.kind == I.MALFORMED or e.level == "":
            return f"{flow.endpoints[e.side]} -> {flow.endpoints[1 - e.side]}"
        if e.level == "tcp":
            c = self.last.conns[e.conn]
            near = e.sender ^ self.pipeline.table.flip(e.conn)
            return f"{c.endpoint(near)} -> {c.endpoint(1 - near)}"
        return f"{flow.endpoints[e.sender]} -> {flow.endpoints[1 - e.sender]}"

    @staticmethod
    def _sources(run, flow, frows, sides, cap):
        """Every packet source address of each side (FS-02 counts the receiver's addresses: SCTP only, so a
        TCP or MPTCP flow's are not gathered)."""
        if flow.protocol != "sctp" or (run.seen_pairs is not None and len(run.seen_pairs) == 2 * len(flow.conns)):
            return  # both directions of every conn of the flow were seen: nothing new can come
        if run.seen_pairs is None:
            run.seen_pairs, run.sources = set(), [[], []]
        conn_dir = cap.ev["conn"][frows].astype(np.int64) * 2 + cap.ev["dir"][frows]
        values, first = np.unique(conn_dir, return_index=True)
        run.seen_pairs.update(values.tolist())
        for value, k in zip(values.tolist(), first.tolist()):
            conn, direction = divmod(value, 2)
            c = cap.conns[conn]
            src = c.addr_a if direction == 0 else c.addr_b
            side = int(sides[k])
            if src not in run.sources[side]:
                run.sources[side].append(src)

    @staticmethod
    def _addresses(run, flow):
        out = []
        for side in (0, 1):
            seen = list(flow.addresses[side])
            primary = flow.endpoints[side].rpartition(":")[0].strip("[]")
            for address in [primary] + (run.sources[side] if run.sources else []):
                if address not in seen:
                    seen.append(address)
            out.append(seen)
        return out

    @staticmethod
    def _far(run, frows, rows, levels):
        """Where the flow's first serial far outside any window lies (its side names the direction); levels:
        the flow's (_levels)."""
        if run.far_side is not None:
            return
        first = [level.far.first_frame for level in levels.values()
                 if getattr(level, "far", None) is not None and level.far.count]
        if first:
            frame = min(first)
            hit = np.flatnonzero(rows.cap.ev["frame"][frows] == frame)
            if len(hit):
                run.far_side = int(rows.side_of[frows[hit[0]]])

    # -- reader findings, the end of each flow

    def _reader_events(self, cap, rows, flow_of):
        """This chunk's new reader findings as events, per flow id (their frame's last event's flow); those in
        frames of no flow are checked at once."""
        listed = [(frame, "GEN-01", reason) for frame, reason in cap.findings] + list(cap.rule_findings)
        new = Counter(listed) - self.seen_findings
        self.seen_findings.update(new)
        out = {}
        frames = cap.ev["frame"]
        for frame, rule_id, reason in sorted(new.elements(), key=lambda f: f[0]):
            k = int(np.searchsorted(frames, frame, "right")) - 1
            row = k if k >= 0 and int(frames[k]) == frame else None
            flow = int(flow_of[row]) if row is not None else -1
            e = I.reader_event(rows, row, frame, rule_id, reason)
            if flow < 0:
                for r in self.dispatch.get((e.kind, ""), ()):
                    self.found.extend(_finding(r, v, None, "") for v in r.check(e, S.FlowState(), S.FlowState(), None))
            else:
                out.setdefault(flow, []).append(e)
        return out

    def finish(self, lazy=False):
        """-> (flows, findings as dicts of COLUMNS, sorted by breaking frame) once every chunk was fed; lazy:
        the findings as Findings (the notes of runs of acks kept as numbers until asked for)."""
        flows = self.pipeline.table.flows
        for frame, rule_id, reason in self.pipeline.budget_note():
            e = I.reader_event(None, None, frame, rule_id, reason)
            for r in self.dispatch.get((e.kind, ""), ()):
                self.found.extend(_finding(r, v, None, "") for v in r.check(e, S.FlowState(), S.FlowState(), None))
        for flow in flows:
            if flow is None:  # a flow the table forgot
                continue
            run = self.runs.get(flow.id) or self.planned.get(flow.id)
            if run is not None and run.last_index is not None:
                self._judge_end(flow, run)
        found = Findings(self.found, range(0, 2 * len(self.found), 2), self.note_runs)
        return flows, found if lazy else list(found)

    def _on_cut(self, fids):
        """Flows the budget of open flows released (Pipeline._cut: those without data, and with `check` alone
        those with data too): their ends judged now, as at the capture's end (their later events are not
        analysed), and their rule state dropped (the pipeline forgets them), so a flood does not stay in memory."""
        flows = self.pipeline.table.flows
        for fid in fids.tolist():
            run = self.runs.pop(fid, None) or self.planned.pop(fid, None)
            if run is not None and run.last_index is not None:
                self._judge_end(flows[fid], run)

    def _judge_end(self, flow, run):
        """The rules on the flow's end: its far serials' note, then the END event. run: its FlowRun or its
        PlainChunk (applied here only when a rule is to read it)."""
        level = flow.protocol if flow.protocol == "sctp" else "tcp"
        ends = self.dispatch.get((I.END, level), ())
        # a flow without levels yet (Pipeline._dormant) left no serial out; a TCP connection's are its main
        # pair's (_levels, without its dict: a flood's every connection comes here)
        mine = self.pipeline.senders.get(flow.id)
        levels = () if mine is None else [s.level for s in mine["main"]] if flow.protocol == "tcp" \
            else self._levels(flow).values()
        far = [lv.far for lv in levels if getattr(lv, "far", None) is not None]
        count = sum(f.count for f in far)
        if not count and not ends:
            return
        if type(run) is PlainChunk:
            run = self._applied(run, FlowRun())
        ctx = self._context(flow, run)
        if count:
            first = min(f.first_frame for f in far if f.count)
            side = run.far_side or 0
            e = I.Event(index=run.last_index + 0.75, frame=first, time_ns=0, kind=I.MALFORMED, level="",
                        side=side, sender=1 - side, rule="GEN-01.note", reason=I.far_reason(count))
            for r in self.dispatch.get((e.kind, ""), ()):
                self.found.extend(_finding(r, v, flow.id, self._direction(flow, e))
                                  for v in r.check(e, run.state, run.state, ctx))
        end = I.Event(index=run.last_index + 1, frame=run.last_frame, time_ns=run.last_time, kind=I.END,
                      level=level, side=0, sender=0)
        for r in ends:
            self.found.extend(_finding(r, v, flow.id, "") for v in r.check(end, run.state, run.state, ctx))


RULE_RANK = {rule_id: k for k, rule_id in enumerate(sorted(REGISTRY))}


class NoteRun:
    """One rule's findings on a run of quiet acks (Checker._negotiation: NR-01 / NR-06 / TN-01 / MN-01): they
    differ only in the ack's frame and one number in the message, so they stay two arrays of numbers until a
    finding dict or a JSON line is asked for (a note stands on every NR-SACK of a capture without its
    handshake: tens of thousands). parts: the message around the number; seq: where the run stands among
    the checker's findings in the order they were made."""

    __slots__ = ("rule", "severity", "flow", "direction", "known", "frames", "numbers", "parts", "seq")

    def __init__(self, rule, severity, flow, direction, known, frames, numbers, parts, seq):
        self.rule, self.severity, self.flow, self.direction = rule, severity, flow, direction
        self.known, self.parts, self.seq = known, parts, seq
        self.frames, self.numbers = np.asarray(frames, np.int64), np.asarray(numbers, np.int64)

    def __len__(self):
        return len(self.frames)

    def finding(self, k):
        frame = int(self.frames[k])
        return {"rule": self.rule, "severity": self.severity, "flow": self.flow, "direction": self.direction,
                "frames": self.known + [frame] if frame not in self.known else list(frames(*self.known, frame)),
                "message": f"{self.parts[0]}{int(self.numbers[k])}{self.parts[1]}"}

    def json_lines(self, flow, ks):
        """Findings ks as json.dumps writes them, with `flow` as reported; only their numbers are formatted."""
        head = (f'{{"rule": {json.dumps(self.rule)}, "severity": {json.dumps(self.severity)}, "flow": {json.dumps(flow)}, '
                f'"direction": {json.dumps(self.direction)}, "frames": [{"".join(f"{f}, " for f in self.known)}')
        middle = f'], "message": {json.dumps(self.parts[0])[:-1]}'
        tail = json.dumps(self.parts[1])[1:] + "}"
        lines = [f"{head}{frame}{middle}{number}{tail}"
                 for frame, number in zip(self.frames[ks].tolist(), self.numbers[ks].tolist())]
        if self.known:  # a handshake frame: frames() puts it last, once
            for at in np.flatnonzero(np.isin(self.frames[ks], self.known)).tolist():
                lines[at] = json.dumps(dict(self.finding(ks[at]), flow=flow))
        return lines


class Findings:
    """A capture's findings sorted by breaking frame (then flow, rule, the order they were made): finding
    dicts, each with its seq, and NoteRuns. Iterating gives dicts (made once); json_lines writes the
    report's lines a batch at a time without making the runs' dicts. Both line up every finding (the
    dicts, then each run's rows) and take them in `order`, a permutation of that line-up."""

    def __init__(self, found, seqs, runs):
        self.found, self.seqs, self.runs = list(found), list(seqs), list(runs)
        lengths = [len(r) for r in self.runs]
        self.starts = np.cumsum([0, len(self.found)] + lengths)  # where each part of the line-up starts

        def lined_up(of_found, of_run):
            return np.concatenate([np.array([of_found(f) for f in self.found], np.int64)] +
                                  [np.full(n, of_run(r), np.int64) for r, n in zip(self.runs, lengths)])

        frame = np.concatenate([np.array([f["frames"][-1] for f in self.found], np.int64)] + [r.frames for r in self.runs])
        flow = lined_up(lambda f: -1 if f["flow"] is None else f["flow"], lambda r: r.flow)
        rank = lined_up(lambda f: RULE_RANK.get(f["rule"], -1), lambda r: RULE_RANK[r.rule])
        seq = lined_up(lambda f: 0, lambda r: r.seq)
        seq[:len(self.found)] = self.seqs
        self.order = np.lexsort((seq, rank, flow, frame))  # stable: a run's rows keep their order
        self._list = None

    def __len__(self):
        return len(self.order)

    def __iter__(self):
        if self._list is None:
            line_up = np.empty(len(self.order), object)
            line_up[:] = self.found + [run.finding(k) for run in self.runs for k in range(len(run))]
            self._list = line_up[self.order].tolist()
        return iter(self._list)

    def at_least(self, keep):
        mine = [k for k, f in enumerate(self.found) if f["severity"] in keep]
        if len(mine) == len(self.found) and all(r.severity in keep for r in self.runs):
            return self
        return Findings([self.found[k] for k in mine], [self.seqs[k] for k in mine],
                        [r for r in self.runs if r.severity in keep])

    def json_lines(self, label=None, batch=4096):
        """Each finding as one JSON line (json.dumps), in order, made `batch` at a time (a report of a capture
        without its handshake need not hold every line); label: flow written "LABEL:ID" (several captures)."""
        named = (lambda flow: flow) if label is None else (lambda flow: f"{label}:{flow if flow is not None else '-'}")
        for first in range(0, len(self.order), batch):
            taken = self.order[first:first + batch]
            part = np.searchsorted(self.starts, taken, "right") - 1  # 0: the dicts, 1 + r: run r
            lines = [None] * len(taken)
            for p in np.unique(part).tolist():
                at = np.flatnonzero(part == p)
                ks = taken[at] - self.starts[p]
                if p == 0:
                    made = [json.dumps(f if label is None else dict(f, flow=named(f["flow"])))
                            for f in (self.found[k] for k in ks.tolist())]
                else:
                    run = self.runs[p - 1]
                    made = run.json_lines(named(run.flow), ks)
                for a, line in zip(at.tolist(), made):
                    lines[a] = line
            yield from lines


DIRECTION_KINDS = {I.DATA, I.ACK, I.INIT, I.INIT_ACK, I.SYN, I.SYN_ACK}


def check_capture(cap: E.Capture, rule_ids=None):
    """-> (flows, findings as dicts of COLUMNS) of every selected rule over every flow of a read capture
    (one chunk). Raises CaptureError when it holds no SCTP or TCP flow, KeyError for an unknown rule ID."""
    run = Run(cap.path, NullStore())
    checker = Checker(rule_ids, run.pipeline)
    run.feed(cap)
    run.end()
    return checker.finish()


def check_path(path, rule_ids=None, chunk_frames=E.CHUNK_FRAMES, progress=None, every_row=False, lazy=False,
               max_open_flows=MAX_OPEN_FLOWS):
    """-> (the last chunk's header: path, frames, truncated; flows; findings) of a capture read in chunks,
    in bounded memory (lazy: findings as Findings). Raises CaptureError for unusable input, KeyError for an
    unknown rule ID. max_open_flows: the flows held open at once (pipeline.MAX_OPEN_FLOWS)."""
    run = Run(path, NullStore(), chunk_frames, progress, max_open_flows=max_open_flows)
    checker = Checker(rule_ids, run.pipeline, every_row=every_row)
    with few_collections():
        header = run.read()
        flows, found = checker.finish(lazy)
    return header, flows, found


def at_least(findings, severity):
    """The findings at `severity` or more severe."""
    keep = SEVERITIES[: SEVERITIES.index(severity) + 1]
    if isinstance(findings, Findings):
        return findings.at_least(keep)
    return [f for f in findings if f["severity"] in keep]


def json_lines(findings, label=None):
    """Each finding as one JSON line, in order (an iterator); label: flow written "LABEL:ID" (a report of
    several captures)."""
    if isinstance(findings, Findings):
        return findings.json_lines(label)
    return (json.dumps(f if label is None else dict(f, flow=f"{label}:{f['flow'] if f['flow'] is not None else '-'}"))
            for f in findings)


def findings_frame(found):
    """The findings as a DataFrame (pandas imported here only: the command line does without it)."""
    import pandas as pd

    frame = pd.DataFrame(found, columns=COLUMNS)
    frame["flow"] = frame["flow"].astype("Int64")
    frame["severity"] = frame["severity"].astype(pd.CategoricalDtype(list(SEVERITIES)))
    return frame


def check(path, rules=None, severity="note"):
    """Runs every rule of rules.md (or the IDs in `rules`) over the capture at `path`.

    Returns one row per finding: rule, severity, flow (the analyzer's flow id; NA for a frame of no flow),
    direction ("src -> dst" of the data sender), frames (1-based, the breaking frame last), message.
    Raises CaptureError for unusable input (not a capture, damaged, no SCTP or TCP flow) and KeyError for
    an unknown rule ID.
    """
    return findings_frame(at_least(check_path(path, rules)[2], severity))
