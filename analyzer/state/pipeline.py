"""The pipeline under every analysis: chunks of events -> FlowTable (flows.py) -> one DirectionAccumulator per
sender direction, path and subflow (scoreboard.py, pass 1) -> DirectionResults (pass 2). No pandas here: the
summary of a capture is made without it (results.py and views/stream.py turn results into DataFrames).

A flow's state is released when it ends: an SCTP association at its SHUTDOWN-COMPLETE or ABORT, a
TCP connection when both FINs are acked or at a RST, an MPTCP connection when all its subflows
have so ended; or when it has sent nothing for IDLE_NS of capture time (docs/decisions.md 44).
Its events after that point are not analysed (counted: `late`), in whichever chunk they come, so
the figures do not depend on the chunk size. Released, a DirectionAccumulator keeps its tallies, not its
scoreboard; with `finish_ended` (the summary alone is wanted) a flow whose every direction
completed its transfer is finished at once and its entries spilled to a temporary file
(EntrySpill), so the memory a capture needs does not grow with its flows; a TCP connection that
begins and ends in one chunk is finished in one compiled pass (_finish_short), and one that begins
in a chunk and does not end in it is held as its events (_hold, ParkedFlows): replayed into the
chunk where it shows again, or finished in one compiled pass with the others the budget cuts, the
idle bound ends or the capture's end finds open. With `check` alone, a new connection whose chunk no rule can
fire on is parked the same way (_checker_parks), and dropped if it never shows again.
"""

import pickle
import tempfile
from typing import NamedTuple

import numpy as np

from nrsack.analyzer import _native
from nrsack.analyzer.state import scoreboard as A
from nrsack.analyzer.read import events as E
from nrsack.analyzer.state import flows as F
from nrsack.analyzer.state.workers import feed_share

# A transfer making progress is never silent this long: TCP's largest RTO is 120 s (Linux
# TCP_RTO_MAX), SCTP's 60 s (RFC 9260 RTO.Max); 300 s leaves room for two of either.
IDLE_NS = 300 * 1_000_000_000
SCTP_ABORT, SCTP_SHUTDOWN_COMPLETE = 6, 14
_NEVER = np.iinfo(np.int64).min
# A connection with more events than this in its first chunk is a transfer, not a short exchange: parking and
# replaying its events in the next chunk (_hold) would cost more than the general path saves (a long transfer's
# first chunk was copied and assigned twice).
HOLD_MAX_EVENTS = 256
PLAIN_QUIET, PLAIN_DATA = 1, 2  # _native.plain_tcp_flows's verdict bits
# Flows held open at once (docs/decisions.md 67): a flow's state costs a few KB, so a flood of flows that never
# end (a SYN flood, a load test's connections never closed) stays well under a GB. Past it the flows without
# data go first, then those idle longest, finished at their last event (Pipeline._cut), down to CUT_TO of it.
MAX_OPEN_FLOWS = 50_000
CUT_TO = 0.75


def KEEP_ALL(entry_id) -> bool:
    """keep_tables of every entry (EntrySpill): known as such, not asked entry by entry."""
    return True


class EntrySpill:
    """Finished flows' entries in a temporary file (their summaries as scoreboard.summary_row makes them,
    pickled a batch of flows at a time: one pickle.dumps for the short flows a chunk finishes), read
    back in flow order; the index is four numbers a flow in arrays (a dict of tuples would be ~200 bytes
    a flow).
    keep_tables(entry id) -> bool, when given (the streamed files): the RtxQ and blocking tables of those
    entries are kept too, a flow finished alone's pieces pickled into the file one at a time as pass 2 makes
    them (table_sinks), those of flows finished together (put_batch) as one blob of column arrays, and replayed
    in flow order at the end (replay_tables); else they are never made."""

    BATCHES_LOADED = 3  # table blobs read back at once (SpilledEntries's reason)

    def __init__(self, folder=None, keep_tables=None):
        self.file = tempfile.TemporaryFile(dir=folder, prefix="nrsack-entries-")
        self.keep_tables = keep_tables
        self.offset = np.full(0, -1, np.int64)    # per flow id: its batch (-1: not spilled)
        self.length = np.zeros(0, np.int32)
        self.slot = np.zeros(0, np.int32)         # the flow's place in its batch (-1: alone)
        self.count = np.zeros(0, np.int16)        # entries of the flow
        # per flow id: where its table pieces begin and end (-1: none), or for a flow of a put_batch blob where
        # the blob begins and -1 - the flow's place in it
        self.tables = np.zeros((0, 2), np.int64)
        self.tables_from = None                   # where the pieces of the flow being finished begin
        self.loaded = {}                          # blob offset -> (its flow ids, its TablePieces, their row offsets)
        self.end = 0
        self.moved = False

    def put(self, fid, entries):
        """Only the summaries (and the table pieces table_sinks wrote while they were made) are kept."""
        self.put_rows([fid], [[(*A.summary_row(e.summary), [A.summary_row(p.summary) for p in e.paths])
                               for e in entries]], alone=True)

    def table_sinks(self, entry_id):
        """-> (rtxq, blocking) sinks of an entry being finished before put(): its pieces into the file."""
        if self.keep_tables is None or not self.keep_tables(entry_id):
            return A.IGNORE, A.IGNORE
        return (lambda columns: self._put_piece(0, entry_id, columns),
                lambda columns: self._put_piece(1, entry_id, columns))

    def _put_piece(self, table, entry_id, columns):
        self._to_end()
        if self.tables_from is None:
            self.tables_from = self.end
        self._write(pickle.dumps((table, entry_id, columns), pickle.HIGHEST_PROTOCOL))

    def put_batch(self, fids, rows, tables):
        """Flows finished together: their rows (put_rows's) and their (RtxQ, blocking) scoreboard.TablePieces, a
        piece's entry 2 * k + side for flow fids[k], those of the entries keep_tables refuses left out."""
        self.put_rows(fids, rows)
        fids = np.asarray(fids, np.int64)
        entries = tables[0].entry  # (each entry has its one RtxQ piece)
        if self.keep_tables is not KEEP_ALL:
            entries = entries[list(map(self.keep_tables, piece_entry_ids(fids, entries)))]
        kept = entries
        if len(kept) < len(entries):
            tables = tuple(t.take(np.flatnonzero(np.isin(t.entry, kept))) for t in tables)
        if not len(kept):
            return
        self._to_end()
        places = np.unique(kept >> 1)
        self.tables[fids[places]] = np.stack((np.full(len(places), self.end), -1 - places), 1)
        self._write(pickle.dumps((fids, tables), pickle.HIGHEST_PROTOCOL))

    def _write(self, blob):
        self.file.write(blob)
        self.end += len(blob)

    def replay_tables(self, fids, sinks):
        """The table pieces of the flows `fids` (sorted ids), kept when they were spilled, to sinks(entry id) ->
        (rtxq, blocking) sinks in flow order, or, where sinks has `many`, sinks.many(table, entry ids, TablePieces)
        with a run of flows of one blob at once."""
        fids = np.asarray(fids, np.int64)
        fids = fids[fids < len(self.tables)]
        start, stop = self.tables[fids].T
        has = start >= 0
        start, stop = start[has], stop[has]
        if not len(start):
            return
        self.moved = True
        batch = stop < 0
        place = -1 - stop
        # runs: the flows of one blob at consecutive places; a flow finished alone is a run of its own
        head = ~batch
        head[0] = True
        head[1:] |= (start[1:] != start[:-1]) | (place[1:] != place[:-1] + 1)
        heads = np.flatnonzero(head)
        for h, e in zip(heads.tolist(), np.append(heads[1:], len(start)).tolist()):
            if batch[h]:
                self._replay_batch(int(start[h]), int(place[h]), int(place[e - 1]) + 1, sinks)
            else:
                self._replay_pieces(int(start[h]), int(stop[h]), sinks)

    def _replay_pieces(self, start, stop, sinks):
        self.file.seek(start)
        while self.file.tell() < stop:
            table, entry_id, columns = pickle.load(self.file)
            sinks(entry_id)[table](columns)

    def _replay_batch(self, offset, first, stop, sinks):
        """The pieces of the flows at places first .. stop - 1 of the put_batch blob at `offset`."""
        def load():
            self.file.seek(offset)
            fids, tables = pickle.load(self.file)
            return fids, tables, [np.append(0, np.cumsum(t.length)) for t in tables]

        fids, tables, row_at = recently_read(self.loaded, offset, self.BATCHES_LOADED, load)
        for table, (pieces, at) in enumerate(zip(tables, row_at)):
            lo, hi = np.searchsorted(pieces.entry, (2 * first, 2 * stop)).tolist()
            if lo == hi:
                continue
            entries = pieces.entry[lo:hi]
            ids = piece_entry_ids(fids, entries)
            columns = {k: v[at[lo]:at[hi]] for k, v in pieces.columns.items()}
            if hasattr(sinks, "many"):
                sinks.many(table, ids, A.TablePieces(entries, pieces.length[lo:hi], columns))
                continue
            for entry_id, a, b in zip(ids, at[lo:hi].tolist(), at[lo + 1:hi + 1].tolist()):
                sinks(entry_id)[table]({k: v[a - at[lo]:b - at[lo]] for k, v in columns.items()})

    def has_tables(self) -> np.ndarray:
        """The ids of the flows whose table pieces were kept, in order."""
        return np.flatnonzero(self.tables[:, 0] >= 0)

    def _to_end(self):
        if self.moved:  # a reading moved the file's position from the end
            self.file.seek(self.end)
            self.moved = False

    def put_rows(self, fids, rows, alone=False):
        """rows[k]: [(keys, values, [its paths' (keys, values)])] of the entries of flow fids[k] (summary_row's);
        `alone`: one flow finished on its own (not kept loaded when read: the batches around it are)."""
        blob = pickle.dumps(rows, pickle.HIGHEST_PROTOCOL)
        top = max(fids)
        if top >= len(self.offset):
            grow = max(top + 1, 2 * len(self.offset)) - len(self.offset)
            self.offset = np.concatenate((self.offset, np.full(grow, -1, np.int64)))
            self.length = np.concatenate((self.length, np.zeros(grow, np.int32)))
            self.slot = np.concatenate((self.slot, np.zeros(grow, np.int32)))
            self.count = np.concatenate((self.count, np.zeros(grow, np.int16)))
            self.tables = np.concatenate((self.tables, np.full((grow, 2), -1, np.int64)))
        self._to_end()
        if self.tables_from is not None:  # (pieces come only from a flow finished alone: put)
            self.tables[fids[0]] = self.tables_from, self.end
            self.tables_from = None
        self.offset[fids], self.length[fids] = self.end, len(blob)
        self.slot[fids] = -1 if alone else np.arange(len(fids))
        self.count[fids] = [len(entries) for entries in rows]
        self._write(blob)

    def spilled(self) -> np.ndarray:
        """The ids of the flows spilled so far, in order."""
        return np.flatnonzero(self.offset >= 0)

    def entries(self):
        return SpilledEntries(self)

    def close(self):
        self.file.close()


def piece_entry_ids(fids, entries) -> list:
    """The entry ids of table pieces numbered 2 * k + side for flow fids[k] (ParkedFlows.finish's)."""
    return [f"{fid}{'ab'[side]}" for fid, side in zip(fids[entries >> 1].tolist(), (entries & 1).tolist())]


def recently_read(loaded, offset, limit, load):
    """loaded[offset], read by load() when it is not there; of at most `limit` kept, the one read longest ago
    leaves first (a batch of short flows is read for flows that lie near each other in flow order)."""
    value = loaded.pop(offset, None)
    if value is None:
        if len(loaded) == limit:
            del loaded[next(iter(loaded))]
        value = load()
    loaded[offset] = value  # (put back last)
    return value


class SpilledEntries:
    """The spilled entries in flow order, as a re-iterable sequence (read from the file each time). A
    batch holds the short flows of one chunk, first seen in it or parked before (Pipeline._hold: those
    of one parcel the budget, the idle bound or the capture's end finished together): their ids mostly lie
    above those of every batch but the last few, so a few batches at a time are loaded (the one read
    longest ago goes first), and a flow spilled alone is read around them.
    Iterated: DirectionResults; rows(): the same as summary rows, which the JSON writer takes as they are."""

    ROWS_AT_ONCE = 4096
    BATCHES_LOADED = 3  # a chunk's batch also holds the connections parked in the chunk before (Pipeline._hold)

    def __init__(self, spill: EntrySpill):
        self.spill = spill
        self.count = int(spill.count.sum())

    def __len__(self):
        return self.count

    def __iter__(self):
        for rows in self.rows():
            for keys, values, paths in rows:
                yield A.DirectionResult(dict(zip(keys, values)), {}, {},
                                        paths=[A.DirectionResult(dict(zip(*path)), {}, {}) for path in paths])

    def rows(self):
        """-> lists of (keys, values, paths) (EntrySpill.put_rows's), in flow order, ROWS_AT_ONCE or so at a time."""
        file, spill = self.spill.file, self.spill
        spill.moved = True
        fids = spill.spilled()
        loaded, out = {}, []  # batch offset -> its rows, the last few loaded
        for offset, length, slot in zip(spill.offset[fids].tolist(), spill.length[fids].tolist(),
                                        spill.slot[fids].tolist()):
            if slot < 0:
                file.seek(offset)
                out += pickle.loads(file.read(length))[0]
            else:
                def load():
                    file.seek(offset)
                    return pickle.loads(file.read(length))

                out += recently_read(loaded, offset, self.BATCHES_LOADED, load)[slot]
            if len(out) >= self.ROWS_AT_ONCE:
                yield out
                out = []
        if out:
            yield out


class ParkedFlows:
    """TCP connections held as their events, not as DirectionAccumulators (Pipeline._hold): a few hundred
    bytes a connection where two DirectionAccumulators and their levels cost ~10 KB and a Python finish
    each. Kept in parcels, one per chunk (the events of its connections, in capture order, their blocks
    re-based); a connection leaves whole: replayed into a chunk where it shows again (replay), or finished
    with others in one compiled call (finish: scoreboard.short_tcp_rows, the same figures as the general
    path's: docs/decisions.md, "A flood's never-closed short connections")."""

    class Parcel(NamedTuple):
        ev: np.ndarray       # events, capture order
        blocks: np.ndarray
        side: np.ndarray     # per event
        order: np.ndarray    # the events grouped by flow (capture order within one)
        fids: np.ndarray     # the parcel's flow ids, sorted; flow k's events: order[lo[k]:hi[k]]
        lo: np.ndarray
        hi: np.ndarray

    COMPACT_FROM = 64  # flows in a parcel from which it is rebuilt when three quarters of them left (_compact)

    def __init__(self):
        self.parcels = {}                           # number -> Parcel
        self.alive = {}                             # number -> its flows still parked
        self.parcel_of = np.full(0, -1, np.int64)   # per flow id: its parcel's number (-1: not parked)
        self.has_data = np.zeros(0, bool)           # per flow id: a direction of it sent data (DirectionAccumulator.has_data)
        self.count = 0
        self.numbered = 0

    def grow(self, flows):
        more = flows - len(self.parcel_of)
        if more > 0:
            self.parcel_of = np.concatenate((self.parcel_of, np.full(more, -1, np.int64)))
            self.has_data = np.concatenate((self.has_data, np.zeros(more, bool)))

    def park(self, ev, blocks, side, flow_of, flows, sndbuf, has_data=None):
        """Events ev (capture order, blocks re-based: with_blocks) of the flows `flows` (sorted by id), side
        and flow id per event; has_data: per flow, whether it sent data, when known."""
        number = self.numbered
        self.numbered += 1
        parcel = self.parcels[number] = self._parcel(ev, blocks, side, flow_of)
        if has_data is None:
            records = A.short_tcp_records(ev, blocks, parcel.order, side[parcel.order], parcel.lo, parcel.hi, flows,
                                          sndbuf)
            has_data = (records[:, :, 0] != 0).any(1)
        self.has_data[parcel.fids] = has_data
        self.alive[number] = len(parcel.fids)
        self.parcel_of[parcel.fids] = number
        self.count += len(parcel.fids)

    def _parcel(self, ev, blocks, side, flow_of):
        order = np.argsort(flow_of, kind="stable")
        lo = np.flatnonzero(np.diff(flow_of[order], prepend=-1))
        hi = np.append(lo[1:], len(order))
        return self.Parcel(ev, blocks, side, order, flow_of[order[lo]].astype(np.int64), lo, hi)

    def _groups(self, fids):
        """-> [(number, parcel, mask of fids in it, their indices in parcel.fids)], the oldest parcel first."""
        where = self.parcel_of[fids]
        out = []
        for number in np.unique(where).tolist():
            parcel = self.parcels[number]
            mask = where == number
            out.append((number, parcel, mask, np.searchsorted(parcel.fids, fids[mask])))
        return out

    def _leave(self, number, parcel, index):
        self.parcel_of[parcel.fids[index]] = -1
        self.count -= len(index)
        self.alive[number] -= len(index)
        if not self.alive[number]:
            del self.parcels[number], self.alive[number]
        elif self.alive[number] * 4 < len(parcel.fids) and len(parcel.fids) >= self.COMPACT_FROM:
            self._compact(number, parcel)

    def _compact(self, number, parcel):
        """The parcel rebuilt with its flows still parked alone: a few connections parked long must not keep
        their chunk's others' events."""
        index = np.flatnonzero(self.parcel_of[parcel.fids] == number)
        rows = np.sort(self._rows(parcel, index)[0])
        flow_of = np.empty(len(parcel.ev), np.int64)
        flow_of[parcel.order] = np.repeat(parcel.fids, parcel.hi - parcel.lo)
        ev, blocks = with_blocks(parcel.ev, parcel.blocks, rows)
        self.parcels[number] = self._parcel(ev, blocks, parcel.side[rows], flow_of[rows])

    def _rows(self, parcel, index):
        counts = parcel.hi[index] - parcel.lo[index]
        return parcel.order[F.expand_runs(parcel.lo[index], counts)], counts

    def replay(self, fids):
        """-> (events, blocks) of the parked flows `fids` (sorted ids), in capture order; they leave."""
        parts = []
        for number, parcel, _, index in self._groups(fids):
            rows, _ = self._rows(parcel, index)
            parts.append(with_blocks(parcel.ev, parcel.blocks, np.sort(rows)))
            self._leave(number, parcel, index)
        return joined_events(parts)

    def finish(self, fids, flows, end_ns, sndbuf, tables=False):
        """The parked flows `fids` (sorted ids) finished, q ending at end_ns (per flow; None: a flow with a
        direction that did not complete stays parked) -> [(flow ids, their rows)] a parcel at a time (EntrySpill.put_rows's,
        the flows without data left out); `tables`: [(flow ids, their rows, their (RtxQ, blocking) TablePieces)],
        a piece's entry 2 * k + side for flow ids[k] (EntrySpill.put_batch's). The others leave."""
        out = []
        for number, parcel, mask, index in self._groups(fids):
            rows, counts = self._rows(parcel, index)
            hi = np.cumsum(counts)
            picked = [flows[f] for f in parcel.fids[index].tolist()]
            made = A.short_tcp_rows(parcel.ev, parcel.blocks, rows, parcel.side[rows], hi - counts, hi, picked, sndbuf,
                                    None if end_ns is None else end_ns[mask], tables)
            summaries, pieces = made if tables else (made, None)
            done = np.array([rows is not None for rows in summaries], bool)
            spilled = [k for k, rows in enumerate(summaries) if rows]
            if spilled:
                batch = ([picked[k].id for k in spilled], [summaries[k] for k in spilled])
                if tables:  # the pieces' entries re-numbered on the spilled flows alone
                    slot = np.full(len(picked), -1, np.int64)
                    slot[spilled] = np.arange(len(spilled))
                    batch += (tuple(p._replace(entry=2 * slot[p.entry // 2] + (p.entry & 1)) for p in pieces),)
                out.append(batch)
            self._leave(number, parcel, index[done])
        return out

    def drop(self, fids):
        """The parked flows `fids` (sorted ids) leave unfinished (no data: nothing to finish)."""
        for number, parcel, _, index in self._groups(fids):
            self._leave(number, parcel, index)


def with_blocks(ev, blocks, rows):
    """-> (ev[rows], their blocks), the blocks' indices re-based on them."""
    ev = ev[rows]
    counts = ev["blk_count"].astype(np.int64)
    picked = blocks[F.expand_runs(ev["blk_start"], counts)]
    picked["event"] = np.repeat(np.arange(len(ev)), counts)
    ev["blk_start"] = np.cumsum(counts) - counts
    return ev, picked


def joined_events(parts):
    """[(events, blocks)] (with_blocks's) -> one (events, blocks), in the parts' order."""
    if len(parts) == 1:
        return parts[0]
    evs, blocks = zip(*parts)
    ev, joined = np.concatenate(evs), np.concatenate(blocks)
    ev_at = np.cumsum([0] + [len(e) for e in evs[:-1]])
    block_at = np.cumsum([0] + [len(b) for b in blocks[:-1]])
    ev["blk_start"] += np.repeat(block_at, [len(e) for e in evs])
    joined["event"] += np.repeat(ev_at, [len(b) for b in blocks])
    return ev, joined


class Pipeline:
    """Feeds chunks of a capture to the flow table and to every entry's DirectionAccumulator; -> entries."""

    def __init__(self, store, keep_serials=False, finish_ended=False, sndbuf=None, spill_folder=None, on_part=None,
                 max_open_flows=MAX_OPEN_FLOWS, workers=None, spill=None, table_sinks=None, keep_tables=None):
        """finish_ended: a flow is finished when it ends (or the budget cuts it) and its entries go to `spill`
        (put(flow id, entries), entries(): an EntrySpill unless given), with their tables to
        table_sinks(entry id) -> (rtxq, blocking) sinks when given (the dashboard's), else into the EntrySpill
        for the entries keep_tables(entry id) accepts (the streamed files': written in flow order by entries()),
        else not made."""
        self.table = F.FlowTable()
        self.workers = workers  # workers.Workers: each chunk's flows fed on several threads (--jobs)
        self.max_open_flows = max_open_flows
        self.peak_open = 0          # the most flows held open after a chunk (bounded by max_open_flows)
        self.cut = [0, 0]           # flows released early for the budget: without data, with data (_cut)
        self.cut_frame = None       # the last frame of the chunk where the budget first bound
        self.cut_end = {}           # flow id -> its last event's time, where q ends: a flow with data _cut
        self.store = store
        self.keep_serials = keep_serials
        self.senders = {}  # flow id -> {"main": [side 0, side 1], conn: [side 0, side 1] (paths, subflows)}
        self.end_ns = 0
        self.conns = []    # every conn seen so far (the reader's list, growing chunk by chunk)
        self.on_part = on_part  # the checker's hook: each level's rows of a chunk (DirectionAccumulator.on_part)
        self.on_chunk = None    # and after each chunk: on_chunk(cap, flow_of, side_of)
        # the on_part hook takes a FusedPart for a TCP connection's chunk without wire blocks (feed_fused)
        self.fuse_watched = False
        # the checker's new plain connections parked (_checker_parks), and those parked in the chunk being fed
        self.park_plain = False
        self.parked_now = np.zeros(0, np.int64)
        self.on_cut = None      # and on_cut(flow ids) of the flows without data _cut releases, before it does
        self.sndbuf = sndbuf
        self.spill = (spill or EntrySpill(spill_folder, keep_tables)) if finish_ended else None
        self.table_sinks = table_sinks
        # per flow id: released, has live state, time of its last analysed event
        self.released = np.zeros(0, bool)
        self.active = np.zeros(0, bool)
        self.last_ns = np.zeros(0, np.int64)
        self.conn_closed = np.zeros(0, bool)
        # per flow id: has DirectionAccumulators, is a TCP connection (not MPTCP), and per side the serial
        # after the sender's first SYN while it had none (_dormant; -1: none seen)
        self.fed = np.zeros(0, bool)
        self.data_seen = np.zeros(0, bool)  # per flow id: _cut found it has data (a flow's data never goes)
        self.plain_tcp = np.zeros(0, bool)
        self.syn_next = np.zeros((0, 2), np.int64)
        # per TCP conn (_native.tcp_fin_closes): the sequence number after each direction's FIN (-1: none
        # yet), whether the other side acked it
        self.fin_end = np.zeros((0, 2), np.int64)
        self.fin_acked = np.zeros((0, 2), bool)
        self.late = [0, None]  # events after their flow's end: how many, the first frame
        self.short_flows = 0   # flows finished by _finish_short
        self.parked = ParkedFlows()  # the connections _hold holds as their events
        # (flow ids, their last events' times, the last frame) of those parked in the last chunk: open from the
        # next chunk on, as they would be replayed there (_open_parked)
        self.pending = None
        self.replayed = 0      # rows of this chunk replayed from parked connections

    def feed(self, cap: E.Capture):
        """-> the flow and side of each event of the chunk (with the parked connections it shows again replayed
        at its head: _hold)."""
        cap = self._replay_parked(cap)
        self.parked_now = self.parked_now[:0]
        flow_of, side_of = self.table.assign(cap)
        self.conns = cap.conns
        if not len(cap.ev):
            if self.on_chunk is not None:
                self.on_chunk(cap, flow_of, side_of)
            self._flush_held()  # (as if replayed: a chunk of them alone)
            return flow_of, side_of
        self._grow(len(self.table.flows), len(cap.conns))
        scan = _native.chunk_scan(cap.ev)  # (least time, greatest time, greatest frame, marks)
        self.end_ns = max(self.end_ns, scan[1])
        live_flow = self._live(cap, flow_of, scan)
        # every flow's live events in capture order, from one stable sort instead of a scan per flow
        order, starts = live_groups(live_flow)
        sorted_flows = live_flow[order]
        stops = np.append(starts[1:], len(order))
        sorted_side = side_of[order]
        short = self._finish_short(cap, order, sorted_side, sorted_flows[starts], starts, stops)
        held = self._hold(cap, flow_of, live_flow, side_of, order, sorted_side, starts, stops, sorted_flows[starts], short)
        self.parked_now = held
        parked = set(held.tolist())
        dormant = self._dormant(cap, order, sorted_side, sorted_flows[starts], starts)
        work = []  # [(a flow's events, its DirectionAccumulators)]
        # the TCP connections with few rows here whose levels only their Boards read: fed in one compiled call
        fused, fused_lo, fused_hi = [], [], []
        watched = self.fuse_watched and self.on_part is not None and not self.keep_serials
        if watched:  # the connections with a wire block in the chunk: their hook reads the whole part
            blocked = np.zeros(len(self.table.flows), bool)
            blocked[live_flow[(live_flow >= 0) & (cap.ev["blk_count"] > 0)]] = True
        for fid, lo, hi in zip(sorted_flows[starts].tolist(), starts.tolist(), stops.tolist()):
            if fid in short or fid in parked or fid in dormant:
                continue
            flow = self.table.flows[fid]
            senders = self._senders(flow)
            if hi - lo <= A.FUSED_ROWS and flow.protocol == "tcp" and (
                    senders[0].fusable() or (watched and not blocked[fid] and len(flow.conns) == 1)):
                fused += senders
                fused_lo += [lo, lo]
                fused_hi += [hi, hi]
                continue
            rows = order[lo:hi]
            work.append((F.FlowEvents(cap, rows, sorted_side[lo:hi]), senders))
        if fused:  # (in this thread: other flows' feeding is the threads' share of a chunk)
            A.DirectionAccumulator.feed_fused(fused, cap, order, sorted_side, fused_lo, fused_hi, watched)
        if self.workers is not None and len(work) > 1:
            self.workers.feed(work)
        else:
            feed_share(work)
        # before the releases: the checker reads this chunk's levels as they fed it
        if self.on_chunk is not None:
            self.on_chunk(cap, flow_of, side_of)
        if len(order):
            last = np.append(starts[1:], len(order)) - 1
            self.last_ns[sorted_flows[last]] = cap.ev["time_ns"][order[last]]
            self.active[sorted_flows[starts]] = True
        self._open_parked()
        # parked: open from the next chunk on, as a connection held back into it was (for `check`: from this one, as
        # the general way has it, so the budget releases the same flows)
        if len(held) and not self._checker_parks():
            self.pending = (held, self.last_ns[held], scan[2])
            self.last_ns[held] = _NEVER
            self.active[held] = False
        if short:
            finished = np.fromiter(short, np.int64, len(short))
            self.released[finished] = True
            self.active[finished] = False
        self._settle(scan[2], short)
        return flow_of, side_of

    def _settle(self, frame, short):
        """After a chunk (its last frame; None: none): the idle flows released, then the budget applied."""
        idle = np.flatnonzero(self.active & (self.last_ns < self.end_ns - IDLE_NS))
        ending = np.array(sorted((set(self._ended) - short) | set(idle.tolist())), np.int64)
        parked = self.parked.parcel_of[ending] >= 0
        self._finish_parked(ending[parked], cut=False)
        ending = ending[~parked]
        self._release_bare(ending[~self.fed[ending]], cut=False)
        for fid in ending[self.fed[ending]].tolist():
            self._release(fid)
        open_flows = int(np.count_nonzero(self.active))
        if open_flows > self.max_open_flows:
            open_flows -= self._cut(frame, open_flows)
        self.peak_open = max(self.peak_open, open_flows)
        if hasattr(self.store, "flush"):  # (with workers, written in a thread while the next chunk is assigned)
            self.store.flush(None if self.workers is None else self.workers.pool)

    def _open_parked(self):
        """The connections parked in the chunk before and not replayed in this one open from now on (where a
        connection held back into this chunk would have been replayed and opened), for the idle bound and the budget."""
        if self.pending is None:
            return
        fids, last_ns, _ = self.pending
        self.pending = None
        still = self.parked.parcel_of[fids] >= 0
        self.last_ns[fids[still]] = last_ns[still]
        self.active[fids[still]] = True

    def _one_pass(self) -> bool:
        """Whether short connections may be finished in one pass: for the summary alone (finish_ended)
        and with nobody reading the levels (the checker's hooks)."""
        return self._may_park() and self.spill.keep_tables is None

    def _may_park(self) -> bool:
        """Whether connections may be parked (_hold): as _one_pass, or for the streamed files, whose tables the
        parked connections' compiled pass makes too (ParkedFlows.finish with tables)."""
        return (self.spill is not None and self.on_part is None and self.on_chunk is None and not self.keep_serials
                and self.table_sinks is None)

    def _dormant(self, cap, rows, side, group_flow, starts) -> set:
        """The TCP connections without a DirectionAccumulator yet whose events in this chunk feed no level
        (no payload, no ack: a SYN, a bare RST), left without one (a SYN flood's flows cost a few bytes, not
        two DirectionAccumulators). Such events leave a level nothing but its anchor, the sender's first
        SYN (flows.handshake_space): kept here (syn_next) for the level made when data or an ack comes.
        The checker reads that anchor through dormant_space. -> their flow ids."""
        candidates = self.plain_tcp[group_flow] & ~self.fed[group_flow]
        if not len(rows) or not candidates.any():  # (once fed, a flow is never dormant again)
            return set()
        ev = cap.ev
        feeds = (ev["len"][rows] > 0) | ((ev["flags"][rows] & E.ACK) != 0)
        quiet = (np.add.reduceat(feeds, starts) == 0) & candidates
        if not quiet.any():
            return set()
        in_quiet = np.repeat(quiet, np.diff(np.append(starts, len(rows))))
        syn = np.flatnonzero(in_quiet & ((ev["tcp_flags"][rows] & E.TCP_SYN) != 0))
        flow_side = np.repeat(group_flow, np.diff(np.append(starts, len(rows))))[syn] * 2 + side[syn]
        keys, first = np.unique(flow_side, return_index=True)  # rows are in capture order within a flow
        anchor = self.syn_next.reshape(-1)
        unset = anchor[keys] < 0
        anchor[keys[unset]] = (ev["seq"][rows[syn[first[unset]]]].astype(np.int64) + 1) & 0xFFFFFFFF
        return set(group_flow[quiet].tolist())

    def dormant_space(self, fid, side):
        """The serial space a _dormant flow's level on `side` would hold now (None: no SYN yet, or released)."""
        anchor = int(self.syn_next[fid, side])
        return F.anchored_space(anchor) if anchor >= 0 and not self.released[fid] else None

    def _hold(self, cap, flow_of, live_flow, side_of, order, sorted_side, starts, stops, group_flow, short) -> np.ndarray:
        """The TCP connections that begin in this chunk and do not end in it, parked as their events
        (ParkedFlows), not a DirectionAccumulator per direction (a connection cut by a chunk's end cost as
        much as ~40 short ones; a flood's never-closed one a Python finish of its own): replayed at the head of
        the chunk where they show again, where most end and take the one-pass way (_finish_short), and
        finished in one compiled pass when the idle bound or the budget ends them or the capture does
        (_finish_parked). -> their flow ids, sorted. Held once: replayed, a connection goes the general way;
        one with an event left out (late) is not held (its count would be made twice). For `check` alone
        (_checker_parks) only the quiet ones are held, and they stay open from this chunk on."""
        checker = self._checker_parks()
        if not checker and not self._may_park():
            return np.zeros(0, np.int64)
        first_row, group_size = order[starts], stops - starts
        fresh = (self.last_ns[group_flow] == _NEVER) & (first_row >= self.replayed) & (group_size <= HOLD_MAX_EVENTS)
        late = flow_of[(flow_of >= 0) & (live_flow < 0)]
        ended = list(self._ended)
        fresh &= ~np.isin(group_flow, ended) & ~np.isin(group_flow, late) & self.plain_tcp[group_flow]
        if short:
            fresh &= ~np.isin(group_flow, np.fromiter(short, np.int64, len(short)))
        has_data = None
        if checker and fresh.any():
            fresh, has_data = self._quiet_for_checker(cap, order, sorted_side, starts, stops, fresh)
        held = group_flow[fresh]
        if not len(held):
            return held
        rows = np.flatnonzero(np.isin(live_flow, held))
        ev, blocks = with_blocks(cap.ev, cap.blocks, rows)
        flows = self.table.flows
        self.parked.park(ev, blocks, side_of[rows], live_flow[rows],
                         None if has_data is not None else [flows[f] for f in held.tolist()], self.sndbuf,
                         has_data)
        # replayed, their FINs are followed again from the start (a TCP connection has one conn, its rows')
        self._clear_fins(np.unique(ev["conn"]))
        return held

    def _checker_parks(self) -> bool:
        """Whether `check` alone rides on the pipeline (park_plain, nothing kept for a table): its new plain
        connections whose chunk is quiet are parked (_hold), as no rule fires on them and nothing reads them
        unless they show again (docs/decisions.md 107)."""
        return (self.park_plain and self.spill is None and not self.keep_serials
                and not getattr(self.store, "keeps_rows", True))

    def _quiet_for_checker(self, cap, order, sorted_side, starts, stops, fresh):
        """fresh (per group of the chunk) narrowed to the connections whose rows the checker would take as a
        plain chunk (_native.plain_tcp_flows: no block, no far serial, nothing below a cum ack) and whose frames
        carry no reader finding (the checker reads those in their chunk) -> (that, has data per connection kept)."""
        groups = np.flatnonzero(fresh)
        lo, sizes = starts[groups], stops[groups] - starts[groups]
        verdict = np.frombuffer(_native.plain_tcp_flows(cap.ev, cap.blocks, order, sorted_side, lo, stops[groups]),
                                np.int8)
        quiet = (verdict & PLAIN_QUIET) != 0
        noted = [frame for frame, _ in cap.findings] + [frame for frame, _, _ in cap.rule_findings]
        if noted and quiet.any():
            frames = cap.ev["frame"]
            noted = np.asarray(noted, np.int64)
            noted = noted[(noted >= frames.min()) & (noted <= frames.max())]
            if len(noted):
                hit = np.isin(frames[order[F.expand_runs(lo, sizes)]], noted)
                quiet &= np.add.reduceat(hit, np.cumsum(sizes) - sizes) == 0  # no noted frame in the group's rows
        fresh = np.zeros(len(fresh), bool)
        fresh[groups[quiet]] = True
        return fresh, (verdict[quiet] & PLAIN_DATA) != 0

    def _replay_parked(self, cap):
        """cap with the events of the parked connections it shows again (an event on one of their conns) at its head."""
        self.replayed = 0
        if not self.parked.count or not len(cap.ev):
            return cap
        fids = self.table.flows_of_conns(np.unique(cap.ev["conn"]))
        fids = np.unique(fids[fids >= 0])
        fids = fids[(self.parked.parcel_of[fids] >= 0) & ~self.released[fids]]
        if not len(fids):
            return cap
        ev, blocks = self.parked.replay(fids)
        self.last_ns[fids] = _NEVER  # not analysed yet: as if not seen
        self.active[fids] = False
        self.replayed = len(ev)
        joined = np.concatenate((ev, cap.ev))
        joined["blk_start"][len(ev):] += len(blocks)
        joined_blocks = np.concatenate((blocks, cap.blocks))
        joined_blocks["event"][len(blocks):] += len(ev)
        # (the replayed events' capture-wide indices are not offset + row: nothing reads them on the one-pass way)
        return E.Capture(cap.path, cap.linktype, cap.frames, joined, joined_blocks, cap.conns, cap.findings,
                         cap.rule_findings, cap.offset - len(ev), cap.truncated)

    def _flush_held(self):
        """Once no chunk follows: the connections parked in the last chunk open, as if replayed in a chunk of
        their own (the idle bound and the budget apply to them as they would then)."""
        if self.pending is not None:
            frame = self.pending[2]
            self._open_parked()
            self._ended = {}
            self._settle(frame, set())

    def _finish_parked(self, fids, cut, end_ns=None):
        """The parked flows `fids` (sorted ids) end: with data, finished in one compiled pass and spilled, q
        ending at their last event (`cut`: the budget's), at end_ns (the capture's end: entries) or, where a
        direction did not complete and neither is given, left parked to the end of the capture (the idle
        bound's: an open flow's q runs on); without data, they leave."""
        if not len(fids):
            return
        self.released[fids] = True
        self.active[fids] = False
        if self.spill is None:  # `check`'s (_checker_parks): a quiet chunk nothing read, nothing to finish
            self.parked.drop(fids)
            return
        data = self.parked.has_data[fids]
        self.parked.drop(fids[~data])
        with_data = fids[data]
        ends = self.last_ns[with_data] if cut else None if end_ns is None else np.full(len(with_data), end_ns, np.int64)
        if self.spill.keep_tables is None:
            for spilled, rows in self.parked.finish(with_data, self.table.flows, ends, self.sndbuf):
                self.spill.put_rows(spilled, rows)
        else:  # the streamed files: the flows' table pieces, made in the same compiled pass, with their rows
            for spilled, rows, pieces in self.parked.finish(with_data, self.table.flows, ends, self.sndbuf, tables=True):
                self.spill.put_batch(spilled, rows, pieces)
        flows = self.table.flows
        for fid in fids[self.parked.parcel_of[fids] < 0].tolist():
            self.table.forget(flows[fid], self.conns)

    def _finish_short(self, cap, rows, side, group_flow, lo, hi) -> set:
        """The TCP connections that begin and end in this chunk, finished and spilled in one compiled pass
        (scoreboard.short_tcp_rows) instead of a DirectionAccumulator per direction: -> their flow ids (_one_pass)."""
        if not self._one_pass() or not self._ended:
            return set()
        ending = np.zeros(len(self.released), bool)
        ending[list(self._ended)] = True
        flows = self.table.flows
        # no earlier live event: no DirectionAccumulator yet, the whole connection is in this chunk
        groups = [k for k in np.flatnonzero(ending[group_flow] & (self.last_ns[group_flow] == _NEVER)).tolist()
                  if flows[group_flow[k]].protocol == "tcp"]
        if not groups:
            return set()
        picked = [flows[f] for f in group_flow[groups].tolist()]
        done, spilled, batch, finished_conns = set(), [], [], []
        for flow, summaries in zip(picked, A.short_tcp_rows(cap.ev, cap.blocks, rows, side, lo[groups], hi[groups], picked,
                                                            self.sndbuf)):
            if summaries is None:  # a transfer that did not complete: a DirectionAccumulator finishes it at the end
                continue
            if summaries:  # (no data either way: nothing to spill)
                spilled.append(flow.id)
                batch.append(summaries)
            finished_conns += flow.conns
            self.table.forget(flow, self.conns)
            done.add(flow.id)
        self._clear_fins(finished_conns)
        if spilled:
            self.spill.put_rows(spilled, batch)
        self.short_flows += len(done)
        return done

    def _grow(self, flows, conns):
        more = flows - len(self.released)
        if more > 0:
            self.released = np.concatenate((self.released, np.zeros(more, bool)))
            self.active = np.concatenate((self.active, np.zeros(more, bool)))
            self.last_ns = np.concatenate((self.last_ns, np.full(more, _NEVER, np.int64)))
            self.fed = np.concatenate((self.fed, np.zeros(more, bool)))
            self.data_seen = np.concatenate((self.data_seen, np.zeros(more, bool)))
            self.syn_next = np.concatenate((self.syn_next, np.full((more, 2), -1, np.int64)))
            self.plain_tcp = np.concatenate((self.plain_tcp, [f is not None and f.protocol == "tcp"
                                                              for f in self.table.flows[flows - more:flows]]))
            self.parked.grow(flows)
        more = conns - len(self.conn_closed)
        if more > 0:
            self.conn_closed = np.concatenate((self.conn_closed, np.zeros(more, bool)))
            self.fin_end = np.concatenate((self.fin_end, np.full((more, 2), -1, np.int64)))
            self.fin_acked = np.concatenate((self.fin_acked, np.zeros((more, 2), bool)))

    def _clear_fins(self, conns):
        """The conns' FIN state back to none (their flow finished, or is replayed)."""
        self.fin_end[conns] = -1
        self.fin_acked[conns] = False

    # -- where flows end

    def _live(self, cap, flow_of, scan):
        """-> the flow of each event, -1 for those after their flow's end (or none); sets self._ended
        to the flows that end in this chunk. scan: _native.chunk_scan's of the chunk."""
        ev = cap.ev
        n = len(flow_of)
        has_flow = flow_of >= 0
        fid = np.where(has_flow, flow_of, 0)
        dead = self._after_idle_gap(ev["time_ns"], fid, scan[0], scan[1])
        if self.released.any():  # (a gather per event otherwise, for nothing: long captures of few flows)
            dead |= self.released[fid]
        dead |= ~has_flow
        ends = self._ending_rows(cap, fid, ~dead, scan[3])
        if ends:
            limit = np.full(len(self.released), np.iinfo(np.int64).max)
            limit[list(ends)] = list(ends.values())
            dead |= np.arange(n) > limit[fid]
        self._ended = ends
        late = dead & has_flow
        if late.any():
            if self.late[1] is None:
                self.late[1] = int(ev["frame"][np.argmax(late)])
            self.late[0] += int(late.sum())
        return np.where(dead, -1, flow_of)

    def _after_idle_gap(self, times, fid, least, greatest) -> np.ndarray:
        """Per event: whether an idle gap in its flow (in this chunk or since the flow's last event before
        it) lies before it, so the flow was released before this event. least, greatest: the times' bounds."""
        n = len(fid)
        if not n:
            return np.zeros(0, bool)
        # the live flows' last events, whether or not they have events here: a lower floor than this chunk's
        # flows alone can have, so never a missed gap, and no gather per event
        lasts = self.last_ns[self.active]
        floor = min(least, int(lasts.min())) if len(lasts) else least
        if greatest - floor <= IDLE_NS:
            return np.zeros(n, bool)  # no two times of the chunk lie that far apart: no flow idled (the usual case)
        order = np.argsort(fid, kind="stable")
        f_sorted, t_sorted = fid[order], times[order]
        first = np.ones(n, bool)
        first[1:] = f_sorted[1:] != f_sorted[:-1]
        prev = np.empty(n, np.int64)
        prev[1:] = t_sorted[:-1]
        prev[first] = self.last_ns[f_sorted[first]]
        gap = (prev != _NEVER) & (t_sorted - prev > IDLE_NS)
        dead = np.empty(n, bool)
        dead[order] = _from_first(gap, first)
        return dead

    def _ending_rows(self, cap, fid, live, marks) -> dict:
        """flow id -> the chunk row at which it ends (SCTP SHUTDOWN-COMPLETE / ABORT, TCP FINs acked or
        RST, MPTCP: all its subflows so ended), for the flows ending in this chunk. marks: chunk_scan's (1: an
        SCTP end chunk among the events, 2: a TCP FIN or RST): the chunks of a long transfer have neither."""
        ev = cap.ev
        ends = {}
        open_before = (self.fin_end >= 0).any(axis=1)  # conns with a FIN seen and not yet closed
        if not marks and not open_before.any():
            return ends
        sctp_end = np.flatnonzero(live & (ev["proto"] == E.PROTO_SCTP)
                                  & np.isin(ev["chunk"], (SCTP_ABORT, SCTP_SHUTDOWN_COMPLETE))) if marks & 1 else ()
        if len(sctp_end):
            flows, first = np.unique(fid[sctp_end], return_index=True)
            ends.update(zip(flows.tolist(), sctp_end[first].tolist()))
        tcp = live & (ev["proto"] == E.PROTO_TCP)
        if not tcp.any():
            return ends
        conn, tf = ev["conn"], ev["tcp_flags"]
        closing = np.flatnonzero(tcp & ((tf & (E.TCP_FIN | E.TCP_RST)) != 0))
        # (the conns with a FIN seen and not yet closed: followed from this chunk's start)
        if not len(closing) and not open_before.any():
            return ends
        # the rows to follow one by one: a conn's from its first FIN or RST on (few per connection)
        start = np.full(len(self.conn_closed), np.iinfo(np.int64).max)
        conns, first = np.unique(conn[closing], return_index=True)
        start[conns] = closing[first]
        start[open_before] = -1
        follow = np.flatnonzero(tcp & (np.arange(len(ev)) >= start[conn]))
        closes = np.frombuffer(_native.tcp_fin_closes(ev, follow, self.fin_end, self.fin_acked, self.conn_closed),
                               np.int64)
        flows, closed = self.table.flows, self.conn_closed
        for r, f in zip(closes.tolist(), fid[closes].tolist()):
            flow = flows[f]
            if flow.protocol != "mptcp":
                ends.setdefault(f, r)
            elif closed[flow.conns].all():  # (closes come in order: the last of its subflows to close ends it)
                ends[f] = r
        return ends

    def _cut(self, frame, open_flows) -> int:
        """The budget of open flows bound: the flows without data released first (they make no rows), then
        those idle longest finished at their last event (incomplete), down to CUT_TO of the budget so it does
        not bind again at the next chunk. Counted for the note (budget_note), never dropped silently. -> how many."""
        if self.cut_frame is None:
            self.cut_frame = frame
        want = open_flows - int(self.max_open_flows * CUT_TO)
        ids = np.flatnonzero(self.active)
        ids = ids[np.argsort(self.last_ns[ids], kind="stable")]
        # (a flow without a DirectionAccumulator has none: _dormant); once seen, a flow's data stays: asked
        # only of those without it so far (each open flow's at every cut was O(budget) Python calls a chunk)
        ask = ids[self.fed[ids] & ~self.data_seen[ids]]
        self.data_seen[ask] = [self._has_data(fid) for fid in ask.tolist()]
        data = self.data_seen[ids].copy()
        parked = self.parked.parcel_of[ids] >= 0
        data[parked] = self.parked.has_data[ids[parked]]
        without = ids[~data][:want]
        with_data = ids[data][:want - len(without)]
        self.cut[0] += len(without)
        self.cut[1] += len(with_data)
        victims = np.sort(np.concatenate((without, with_data)))
        # judged and forgotten by the checker: the flows without data; with data too where no row is kept for
        # a table (`check` alone), so a flood of never-closed data flows does not stay in its memory either
        gone = without[:0] if self.on_cut is None else np.sort(without)
        if self.on_cut is not None and not getattr(self.store, "keeps_rows", True):
            gone = victims
        parked = self.parked.parcel_of[victims] >= 0
        if len(gone):  # judged while their levels (and the serials they left out as far) are still held; a parked
            # connection has none, and its quiet chunk was not read (_checker_parks)
            self.on_cut(gone[self.parked.parcel_of[gone] < 0])
        self._finish_parked(victims[parked], cut=True)
        held = victims[~parked]
        self._release_bare(held[~self.fed[held]], cut=True)
        fed = held[self.fed[held]]
        if len(gone) and self.spill is None:
            # judged and forgotten just below with nothing spilled: their levels are not read again, so what
            # _release adds to _release_bare (the Boards' send-buffer estimates, the plan) is skipped
            judged = np.isin(fed, gone)
            self._release_bare(fed[judged], cut=True)
            fed = fed[~judged]
        for fid in fed.tolist():
            if self._has_data(fid):
                self.cut_end[fid] = int(self.last_ns[fid])
            self._release(fid, cut=True)
        if len(gone):  # the checker judged their ends: nothing waits for them
            for flow in [self.table.flows[fid] for fid in gone.tolist()]:
                if flow is not None:
                    self._drop_senders(flow.id)
                    self.cut_end.pop(flow.id, None)
                    self.table.forget(flow, self.conns)
        return len(victims)

    def _has_data(self, fid) -> bool:
        mine = self.senders.get(fid)
        return mine is not None and any(sender.has_data for sender in mine["main"])

    def _release_bare(self, fids, cut):
        """_release of flows that never had a DirectionAccumulator (_dormant), all at once: nothing to finish,
        no rows to spill."""
        if not len(fids):
            return
        self.released[fids] = True
        self.active[fids] = False
        flows = [self.table.flows[fid] for fid in fids.tolist()]
        self._clear_fins([conn for flow in flows for conn in flow.conns])
        if self.spill is not None or (cut and self.on_chunk is None and not self.keep_serials):
            for flow in flows:
                self.table.forget(flow, self.conns)

    def _release(self, fid, cut=False):
        """The flow's state released at its end; `cut`: for the budget of open flows (_cut), finished now
        at its last event whether or not its transfer completed."""
        self.released[fid] = True
        self.active[fid] = False
        flow = self.table.flows[fid]
        self._clear_fins(flow.conns)
        mine = self.senders.get(fid, {})
        for pair in mine.values():
            for sender in pair:
                sender.release()
        items = self._plan_flow(flow)
        if cut and not items:  # no data either way: nothing to finish, its rows (if any) go
            self._drop_senders(fid)
            # (the checker judges every flow's end, and the in-memory Analysis lists every flow: they keep it)
            if self.spill is not None or (self.on_chunk is None and not self.keep_serials):
                self.table.forget(flow, self.conns)
            return
        if self.spill is None:
            return
        # an incomplete transfer's q runs to the end of the capture: finished with the others at the end
        if cut or all(s.done is not None for _, _, _, main, paths in items for s in (main, *(p[2] for p in paths))):
            self.spill.put(fid, [self._entry(item, self.sndbuf, self.table_sinks or self.spill.table_sinks)
                                 for item in items])
            self.cut_end.pop(fid, None)
            self._drop_senders(fid)
            self.table.forget(flow, self.conns)

    def _drop_senders(self, fid):
        for pair in self.senders.pop(fid, {}).values():
            for sender in pair:  # the rows of the directions that sent no data (not finished)
                self.store.discard(sender.key)

    # -- senders and entries

    def _senders(self, flow):
        mine = self.senders.setdefault(flow.id, {})
        if "main" not in mine:
            mine["main"] = [A.DirectionAccumulator((flow.id, side), self._level(flow, side), self.store, self.keep_serials)
                            for side in (0, 1)]
            self.fed[flow.id] = True
            for sender in mine["main"]:
                sender.on_part = self.on_part
        if flow.protocol == "mptcp":
            for conn in flow.conns:
                if conn not in mine:
                    mine[conn] = [A.DirectionAccumulator((flow.id, side, conn), F.TcpLevel(conn, side), self.store, self.keep_serials)
                                  for side in (0, 1)]
                    for sender in mine[conn]:
                        sender.on_part = self.on_part
        elif flow.protocol == "sctp" and len(flow.conns) > 1:
            for conn in flow.conns:
                if conn not in mine:
                    # until its second path showed up, an association's first path was all of it; a
                    # later path starts from the association's acks so far
                    mine[conn] = [main.fork((flow.id, side, conn), F.SctpPathLevel(main.level, conn),
                                            keep_data=conn == flow.conns[0]) for side, main in enumerate(mine["main"])]
        return [s for pair in mine.values() for s in pair]

    def _level(self, flow, side):
        if flow.protocol == "sctp":
            return F.SctpLevel(side)
        if flow.protocol == "tcp":
            level = F.TcpLevel(flow.conns[0], side, flow)
            if self.syn_next[flow.id, side] >= 0:  # its SYN came while the flow was _dormant
                level.space = F.anchored_space(int(self.syn_next[flow.id, side]))
            return level
        return F.MptcpLevel(side, flow)

    def plan(self):
        """-> [(flow, side, entry id, main DirectionAccumulator, [(path id, conn, DirectionAccumulator)])] of every direction that sent data
        (flows finished early into the spill are not in it)."""
        return [item for flow in self.table.flows if flow is not None for item in self._plan_flow(flow)]

    def _plan_flow(self, flow):
        out = []
        mine = self.senders.get(flow.id)
        if mine is None:
            return out
        for side in (0, 1):
            main = mine["main"][side]
            if not main.has_data:
                continue
            entry_id = f"{flow.id}{'ab'[side]}"
            paths = []
            if flow.protocol == "mptcp" or len(flow.conns) > 1:
                # (a conn that joined after the flow ended has no DirectionAccumulator)
                paths = [(f"{entry_id}.{k}", conn, mine[conn][side]) for k, conn in enumerate(flow.conns)
                         if conn in mine and mine[conn][side].has_data]
            out.append((flow, side, entry_id, main, paths))
        return out

    def entries(self, sndbuf, sinks=None):
        """Pass 2 of every DirectionAccumulator with data, in flow / side / path order; sinks(entry_id) -> (rtxq, blocking).
        With finish_ended: the spilled entries of every flow, the ones still open finished now."""
        if self.spill is None:
            self._flush_held()
            return [self._entry(item, sndbuf, sinks) for item in self.plan()]
        self._finish_every_parked()
        # in flow order: the tables of the flows spilled with theirs replayed between those finished now
        kept = self.spill.has_tables() if sinks is not None and hasattr(self.spill, "has_tables") else np.zeros(0, np.int64)
        still_open = [flow.id for flow in self.table.flows if flow is not None and flow.id in self.senders]
        # the kept flows before each open one (and at or after the one before: its own, if any, once finished)
        cuts = np.searchsorted(kept, still_open).tolist()
        for fid, lo, hi in zip(still_open + [None], [0] + cuts, cuts + [len(kept)]):
            if hi > lo:
                self.spill.replay_tables(kept[lo:hi], sinks)
            if fid is not None:
                flow = self.table.flows[fid]
                self.spill.put(fid, [self._entry(item, sndbuf, sinks) for item in self._plan_flow(flow)])
                del self.senders[fid]
        if hasattr(self.spill, "loaded"):
            self.spill.loaded = {}  # (the blobs replay_tables read: not read again)
        return self.spill.entries()

    def _finish_every_parked(self):
        """At the capture's end: the connections still parked finished, their q ending with the capture's, as an
        open flow's (entries() and entry_ids(), whichever comes first)."""
        self._flush_held()
        self._finish_parked(np.flatnonzero(self.parked.parcel_of >= 0), cut=False, end_ns=self.end_ns)

    def entry_ids(self):
        """-> (entry ids, the set of their protocols) of every entry that entries() will give, in its order (each
        entry's paths after it), a batch at a time (a million of them as a list of pairs took ~150 MB): the spilled
        flows' read back from the spill, merged with the open ones'."""
        still_open = self.plan()
        if self.spill is not None:
            self._finish_every_parked()  # (parked connections have no DirectionAccumulator: not in still_open)
        if self.spill is not None and not still_open:  # (a flood's: every flow spilled, read as it lies)
            for batch in self.spill.entries().rows():
                if any(paths for _, _, paths in batch):
                    batch = [row for keys, values, paths in batch for row in ((keys, values), *paths)]
                # (summary_row's values begin with the id and the protocol)
                yield [row[1][0] for row in batch], {row[1][1] for row in batch}
            return
        ids, protocols = [], set()
        for entry_id, protocol in self._merged_ids(still_open):
            ids.append(entry_id)
            protocols.add(protocol)
            if len(ids) == SpilledEntries.ROWS_AT_ONCE:
                yield ids, protocols
                ids, protocols = [], set()
        yield ids, protocols

    def _merged_ids(self, still_open):
        """-> (entry id, protocol) of the spilled entries merged with those of still_open (plan()'s), one at a time."""

        def open_ids(item):
            flow, _, entry_id, _, paths = item
            yield entry_id, flow.protocol
            yield from ((path_id, flow.protocol) for path_id, _, _ in paths)

        k = 0
        if self.spill is not None:
            rows = (row for batch in self.spill.entries().rows() for row in batch)
            fids = self.spill.spilled()
            for fid, count in zip(fids.tolist(), self.spill.count[fids].tolist()):
                while k < len(still_open) and still_open[k][0].id < fid:
                    yield from open_ids(still_open[k])
                    k += 1
                for _ in range(count):
                    _, values, paths = next(rows)
                    yield values[0], values[1]
                    yield from ((path_values[0], path_values[1]) for _, path_values in paths)
        for item in still_open[k:]:
            yield from open_ids(item)

    def _entry(self, item, sndbuf, sinks):
        flow, side, entry_id, main, paths = item
        base = A.entry_base(flow, side)
        never_renege = flow.never_renege[1 - side]
        nr_sack = flow.negotiated_nr or main.level.nr_seen or never_renege
        # data scheduled over several paths: a path alone does not see the buffer they share, and the
        # association's waits are read by its stack's accounting (metrics.md, Data over several paths)
        if len(paths) > 1:
            for _, _, sender in paths:
                sender.paths = A.A_PATH_OF_SEVERAL
            if flow.protocol == "sctp":
                main.paths = A.CMT_ASSOCIATION
        end_ns = self.cut_end.get(flow.id, self.end_ns)
        entry = main.finish(entry_id, base, nr_sack, sndbuf, end_ns, *(sinks(entry_id) if sinks else ()))
        for path_id, conn, sender in paths:
            c = self.conns[conn]
            path_side = side ^ self.table.flip(conn)
            path_base = dict(base, src=c.endpoint(path_side), dst=c.endpoint(1 - path_side),
                             level="path" if flow.protocol == "sctp" else "subflow", parent=entry_id)
            path_nr = nr_sack if flow.protocol == "sctp" else sender.level.nr_seen or never_renege
            entry.paths.append(sender.finish(path_id, path_base, path_nr, sndbuf, end_ns,
                                             *(sinks(path_id) if sinks else ())))
        return entry

    def budget_note(self):
        """[(frame, "GEN-01.note", reason)] when the budget of open flows bound (else [])."""
        without, with_data = self.cut
        if not without + with_data:
            return []
        return [(self.cut_frame, "GEN-01.note",
                 f"{without + with_data} flows were released before their end, more than {self.max_open_flows} "
                 f"being open at once (--max-open-flows): {without} without data, {with_data} with data finished "
                 f"at their last event (incomplete, q ends there); their later events are not analysed")]

    def late_note(self):
        """[(frame, "GEN-01.note", reason)] when events came after their flow ended, and the budget's note (else [])."""
        self._flush_held()
        count, frame = self.late
        if not count:
            return self.budget_note()
        return self.budget_note() + [(frame, "GEN-01.note", f"{count} events came after their flow ended (SHUTDOWN-COMPLETE, ABORT, "
                                       f"FINs acked, RST or {IDLE_NS // 1_000_000_000} s idle): not analysed")]


def live_groups(live_flow):
    """-> (the rows of live_flow >= 0 grouped by flow, in capture order within a flow; where each flow's rows
    start among them): _native.flow_groups, or grouped_order's sort where the flow ids span too many values."""
    grouped = _native.flow_groups(live_flow)
    if grouped is not None:
        return np.frombuffer(grouped[0], np.int64), np.frombuffer(grouped[1], np.int64)
    order = grouped_order(live_flow)
    order = order[live_flow[order] >= 0]
    return order, np.flatnonzero(np.diff(live_flow[order], prepend=-1))


def grouped_order(keys) -> np.ndarray:
    """np.argsort(keys, kind="stable"). A chunk's flow ids usually span fewer than 2^16 values: shifted
    into uint16, numpy sorts them by radix, ~4x faster than its merge sort of int64 keys."""
    if len(keys):
        low = int(keys.min())
        if int(keys.max()) - low < 1 << 16:
            return np.argsort((keys - low).astype(np.uint16), kind="stable")
    return np.argsort(keys, kind="stable")


def _from_first(marks, group_start) -> np.ndarray:
    """Per element of runs that begin where group_start holds: whether a mark came at or before it in its run."""
    count = np.cumsum(marks)
    before_run = (count - marks)[group_start]
    return count - np.repeat(before_run, np.diff(np.append(np.flatnonzero(group_start), len(marks)))) > 0
