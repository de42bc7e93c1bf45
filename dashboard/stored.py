"""The dashboard's analyses, streamed (issue 29): a capture goes once through the analyzer's pipeline in
chunks, its open-flow budget applying, and what the views read later waits on disk, not in memory.

- The entries (each sender direction's summary and its paths') are pickled one direction at a time into a
  temporary file; in memory, three numbers a direction.
- Each entry's RtxQ and blocking rows, as pass 2 hands them to its sinks, go to temporary files and are
  read back per entry into the DataFrames the in-memory analysis makes (DirectionResult.rtxq / blocking).
- The reader's events and blocks go to temporary files; in memory, the flow and side of each event
  (5 bytes). The ladder reads one flow's events, analysed again on their own with the serials it needs
  (flow_view): a flow's analysis reads its events alone.
Memory is then the pipeline's (a chunk, the open flows: MAX_OPEN_FLOWS) plus the entries the views hold,
whatever number of flows the capture has. The files are unlinked at once: they go with the analysis.
"""

import bisect
import os
import pickle
import re
import tempfile
import threading
from array import array
from collections import OrderedDict
from functools import cached_property

import numpy as np

from nrsack.analyzer.read import events as E
from nrsack.analyzer.results import Analysis, assembled
from nrsack.analyzer.state import flows as F, scoreboard as A
from nrsack.analyzer.state.pipeline import MAX_OPEN_FLOWS, Pipeline
from nrsack.analyzer.state.run import Run, few_collections
from nrsack.analyzer.state.stores import DiskStore, MemoryStore

ENTRY_ID = re.compile(r"(\d+)([ab])(?:\.\d+)?")  # pipeline.plan's ids: flow, side, path / subflow
ENTRIES_HELD = 64      # entries made from the file, kept for the views' caches (figures.series, ladder)
FLOW_VIEWS_HELD = 4    # flows analysed again for the ladder


def _temporary():
    return tempfile.TemporaryFile(prefix="nrsack-dashboard-")


class ColumnFile:
    """Column dicts of numbered entries (pass 2's sink batches, each entry's in a row) in one temporary
    file as packed records; per piece four numbers in arrays."""

    def __init__(self):
        self.file = _temporary()
        self.end = 0
        self.ordinal, self.offset, self.count, self.layout = array("q"), array("q"), array("q"), array("q")
        self.layouts, self._layout_ids = [], {}

    def put(self, ordinal, columns):
        names = list(columns)
        values = [np.asarray(columns[name]) for name in names]
        dtype = np.dtype([(name, v.dtype) for name, v in zip(names, values)])
        record = np.empty(len(values[0]) if values else 0, dtype)
        for name, v in zip(names, values):
            record[name] = v
        layout = self._layout_ids.setdefault(dtype, len(self.layouts))
        if layout == len(self.layouts):
            self.layouts.append(dtype)
        self.file.write(record.tobytes())
        for column, value in ((self.ordinal, ordinal), (self.offset, self.end), (self.count, len(record)),
                              (self.layout, layout)):
            column.append(value)
        self.end += record.nbytes

    def get(self, ordinal) -> list:
        """The entry's column dicts in the order written (once flushed: StoredAnalysis.seal)."""
        parts = []
        for k in range(bisect.bisect_left(self.ordinal, ordinal), bisect.bisect_right(self.ordinal, ordinal)):
            dtype = self.layouts[self.layout[k]]
            record = np.frombuffer(os.pread(self.file.fileno(), self.count[k] * dtype.itemsize, self.offset[k]), dtype)
            parts.append({name: record[name].copy() for name in dtype.names})
        return parts


class StoredEntry:
    """A DirectionResult whose tables are on disk: made when a view reads them (no serials: flow_view's
    entries have them)."""

    serials = None

    def __init__(self, stored, summary, ordinal, paths=()):
        self.summary, self.paths = summary, list(paths)
        self._stored, self._ordinal = stored, ordinal

    @property
    def rtxq_columns(self):
        return A.join_columns(self._stored.rtxq_file.get(self._ordinal))

    @property
    def blocking_columns(self):
        return A.join_columns(self._stored.blocking_file.get(self._ordinal), A.NO_INTERVALS)

    # each table from its own file (DirectionResult's frames read only their columns)
    @property
    def rtxq(self):
        return A.rtxq_frame([self])

    @property
    def blocking(self):
        return A.blocking_frame([self])


class EventFile:
    """The reader's events and blocks (capture-wide indices) in temporary files, their flow and side in memory."""

    def __init__(self):
        self.ev_file, self.block_file = _temporary(), _temporary()
        self.events = self.blocks = 0
        self._flows, self._sides = [], []
        self.flow_of = self.side_of = None

    def add(self, cap, flow_of, side_of):
        assert cap.offset == self.events, "a chunk replayed (the one-pass way) or skipped"
        ev = cap.ev.copy()
        ev["blk_start"] += self.blocks
        blocks = cap.blocks.copy()
        blocks["event"] += cap.offset
        self.ev_file.write(ev.tobytes())
        self.block_file.write(blocks.tobytes())
        self.events += len(ev)
        self.blocks += len(blocks)
        self._flows.append(np.asarray(flow_of, np.int32))
        self._sides.append(np.asarray(side_of, np.int8))

    def done(self):
        self.flow_of = np.concatenate(self._flows) if self._flows else np.empty(0, np.int32)
        self.side_of = np.concatenate(self._sides) if self._sides else np.empty(0, np.int8)
        self._flows = self._sides = None
        for file in (self.ev_file, self.block_file):
            file.flush()

    @cached_property
    def ev(self):
        return self._mapped(self.ev_file, E.EVENT_DTYPE, self.events)

    @cached_property
    def block_table(self):
        return self._mapped(self.block_file, E.BLOCK_DTYPE, self.blocks)

    @staticmethod
    def _mapped(file, dtype, count):
        return np.memmap(file, dtype, "r", shape=(count,)) if count else np.empty(0, dtype)

    def of_flow(self, flow):
        """(events, blocks) of one flow, as a chunk holds them (block indices its own)."""
        rows = np.flatnonzero(self.flow_of == flow)
        ev = np.array(self.ev[rows])
        counts = ev["blk_count"].astype(np.int64)
        blocks = np.array(self.block_table[F.expand_runs(ev["blk_start"], counts)])
        blocks["event"] = np.repeat(np.arange(len(ev)), counts)
        ev["blk_start"] = np.cumsum(counts) - counts
        return ev, blocks


class StoredEntries:
    """The entries in pipeline order, read from their file (a re-iterable sequence)."""

    def __init__(self, stored):
        self.stored = stored

    def __len__(self):
        return len(self.stored.order)

    def __iter__(self):
        for k in range(len(self)):
            yield self.stored.entry_at(k)

    def __getitem__(self, k):
        if not -len(self) <= k < len(self):
            raise IndexError(k)
        return self.stored.entry_at(k % len(self))


class StoredAnalysis:
    """What the views read of one capture's analysis (the in-memory Analysis's names where they read them):
    capture (the header: path, frames, findings, truncated), entries, all_entries(), entry(id), findings,
    frame_time(frame), flow_view(entry)."""

    findings = Analysis.findings  # (reads the header alone)

    def __init__(self, events, sndbuf):
        self.capture, self.events, self.sndbuf = None, events, sndbuf  # capture: the run's header, at its end
        self.entry_file = _temporary()
        self.end = 0
        # per entry as finished: flow * 2 + side, where its record is; `order`: them in flow order (entries())
        self.key, self.offset, self.length = array("q"), array("q"), array("q")
        self.order = self.sorted_keys = np.empty(0, np.int64)
        self.rtxq_file, self.blocking_file = ColumnFile(), ColumnFile()
        self.entry_count = 0  # entries with their paths and subflows
        self._ordinals, self._sinks_made = {}, 0
        self._held, self._views = OrderedDict(), OrderedDict()
        self._lock = threading.Lock()  # the caches above: requests read an analysis from several threads

    # ---- made by analyze_stored ----
    def sinks(self, entry_id):
        ordinal = self._ordinals[entry_id] = self._sinks_made
        self._sinks_made += 1
        return (lambda columns: self.rtxq_file.put(ordinal, columns),
                lambda columns: self.blocking_file.put(ordinal, columns))

    def keep(self, entry):
        """An entry with its paths, finished when its flow ended or at the end of the capture."""
        record = (entry.summary, self._ordinals.pop(entry.summary["id"]),
                  [(p.summary, self._ordinals.pop(p.summary["id"])) for p in entry.paths])
        blob = pickle.dumps(record, pickle.HIGHEST_PROTOCOL)
        self.entry_file.write(blob)
        self.key.append(self._key(entry.summary["id"]))
        self.offset.append(self.end)
        self.length.append(len(blob))
        self.end += len(blob)
        self.entry_count += 1 + len(entry.paths)

    @staticmethod
    def _key(entry_id):
        match = ENTRY_ID.fullmatch(entry_id)
        if match is None:
            raise KeyError(entry_id)
        return int(match.group(1)) * 2 + "ab".index(match.group(2))

    def seal(self):
        """Once every flow is in: the entries put in flow order (the in-memory analysis's)."""
        for file in (self.entry_file, self.rtxq_file.file, self.blocking_file.file):
            file.flush()
        keys = np.frombuffer(self.key, np.int64) if self.key else np.empty(0, np.int64)
        self.order = np.argsort(keys, kind="stable")
        self.sorted_keys = keys[self.order]

    # ---- read by the views ----
    @property
    def entries(self):
        return StoredEntries(self)

    def all_entries(self):
        for entry in self.entries:
            yield entry
            yield from entry.paths

    def entry_at(self, k) -> StoredEntry:
        with self._lock:
            held = self._held.get(k)
            if held is not None:
                self._held.move_to_end(k)
                return held
        at = int(self.order[k])
        summary, ordinal, paths = pickle.loads(os.pread(self.entry_file.fileno(), self.length[at], self.offset[at]))
        made = StoredEntry(self, summary, ordinal, [StoredEntry(self, *path) for path in paths])
        return _held(self._lock, self._held, k, made, ENTRIES_HELD)

    def entry(self, entry_id) -> StoredEntry:
        """The entry (or path / subflow) of that id; KeyError for none."""
        key = self._key(str(entry_id))
        k = int(np.searchsorted(self.sorted_keys, key))
        if k == len(self.sorted_keys) or self.sorted_keys[k] != key:
            raise KeyError(entry_id)
        main = self.entry_at(k)
        found = next((e for e in (main, *main.paths) if e.summary["id"] == entry_id), None)
        if found is None:
            raise KeyError(entry_id)
        return found

    def frame_time(self, frame):
        """Capture time (s) of the frame's first event; None when no event came from it."""
        frames = self.events.ev["frame"]
        k = int(np.searchsorted(frames, frame))
        return float(self.events.ev[k]["time_ns"]) / 1e9 if k < len(frames) and frames[k] == frame else None

    def flow_view(self, entry):
        """(Analysis, its entry like `entry`): the entry's flow analysed again from its own events, in
        memory, as analyze() would (events, blocks, serials: what the ladder reads)."""
        flow = int(entry.summary["flow"])
        with self._lock:
            view = self._views.get(flow)
            if view is not None:
                self._views.move_to_end(flow)
        if view is None:
            ev, blocks = self.events.of_flow(flow)
            header = self.capture
            cap = E.Capture(header.path, header.linktype, header.frames, ev, blocks, header.conns, [], [], 0,
                            header.truncated)
            pipeline = Pipeline(MemoryStore(), keep_serials=True, sndbuf=self.sndbuf)
            flow_of, side_of = pipeline.feed(cap)
            view = assembled(cap, pipeline.table.flows, flow_of, side_of, pipeline.entries(self.sndbuf), self.sndbuf)
            first, stop = np.searchsorted(self.sorted_keys, (2 * flow, 2 * flow + 2))
            _named_as_stored(view, [e for k in range(first, stop) for top in (self.entry_at(k),) for e in (top, *top.paths)])
            view = _held(self._lock, self._views, flow, view, FLOW_VIEWS_HELD)
        return view, _same_entry(view, entry)


def _held(lock, cache, key, made, limit):
    """`made` kept in the LRU `cache` under `key`, unless another thread kept one first: -> the one kept."""
    with lock:
        kept = cache.setdefault(key, made)
        cache.move_to_end(key)
        if len(cache) > limit:
            cache.popitem(last=False)
    return kept


class _Spill:
    """The pipeline's spill (pipeline.EntrySpill's put and entries) writing into a StoredAnalysis."""

    def __init__(self, stored):
        self.stored = stored

    def put(self, fid, entries):
        for entry in entries:
            self.stored.keep(entry)

    def entries(self):
        self.stored.seal()
        return self.stored.entries


def _sender_key(summary):
    return summary.get("level"), summary["side"], summary["src"], summary["dst"]


def _named_as_stored(view, stored):
    """The flow analysed alone numbers its flow from 0: its entries take the ids (and parents) of the
    stored entries they are (the ladder names paths by them)."""
    names = {_sender_key(e.summary): e.summary for e in stored}
    for entry in view.all_entries():
        known = names.get(_sender_key(entry.summary))
        if known is not None:
            entry.summary["id"] = known["id"]
            if "parent" in entry.summary:
                entry.summary["parent"] = known["parent"]


def _same_entry(view, entry):
    found = next((e for e in view.all_entries() if e.summary["id"] == entry.summary["id"]), None)
    if found is None:
        raise KeyError(f"{entry.summary['id']}: not found again among its flow's events")
    return found


def analyze_stored(path, sndbuf=None, max_open_flows=MAX_OPEN_FLOWS) -> StoredAnalysis:
    """The capture at `path` analysed in chunks (the streamed path: bounded by the open-flow budget) into a
    StoredAnalysis. Raises CaptureError for unusable input."""
    events = EventFile()
    stored = StoredAnalysis(events, sndbuf)
    # finish_ended: a flow is finished (its tables written) when it ends or the budget cuts it, and its
    # state goes: memory follows the open flows, not the flows seen
    run = Run(path, DiskStore(), sndbuf=sndbuf, max_open_flows=max_open_flows, finish_ended=True,
              spill=_Spill(stored), table_sinks=stored.sinks)
    try:
        with few_collections():
            for cap, flow_of, side_of in run.chunks():
                events.add(cap, flow_of, side_of)
            stored.capture = run.end()
            events.done()
            run.entries(sndbuf, stored.sinks)
    finally:
        run.close()
    return stored
