"""The analyzer's Python API: `analyze(path, sndbuf=None) -> Analysis`, the pipeline's results
(pipeline.py) with every event kept, as DataFrames; streaming (stream.py) keeps one chunk at a time.
"""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from nrsack.analyzer import _native
from nrsack.analyzer.state import scoreboard as A
from nrsack.analyzer.read import events as E
from nrsack.analyzer.state.pipeline import MAX_OPEN_FLOWS
from nrsack.analyzer.state.run import Run
from nrsack.analyzer.state.stores import MemoryStore

CHUNK_NAMES = {0: "DATA", 1: "INIT", 2: "INIT-ACK", 3: "SACK", 4: "HEARTBEAT", 5: "HEARTBEAT-ACK", 6: "ABORT",
               7: "SHUTDOWN", 8: "SHUTDOWN-ACK", 9: "ERROR", 10: "COOKIE-ECHO", 11: "COOKIE-ACK",
               14: "SHUTDOWN-COMPLETE", 16: "NR-SACK", 0xA0: "FSACK-INIT", 0xA1: "FSACK-ACK",
               0xA2: "FSACK-COMPLETE", 255: "TCP"}


@dataclass
class Analysis:
    """Results of one capture. DataFrames: flows, events, blocks, rtxq, blocking, summary, findings."""

    capture: E.Capture
    flow_list: list
    flow_of: np.ndarray
    side_of: np.ndarray
    entries: list               # scoreboard.DirectionResult per sender direction (paths / subflows nested)
    sndbuf: int = None
    serials: dict = field(default_factory=dict)  # entry id -> scoreboard.Serials of the transport levels
    rtxq_columns: dict = None   # the entries' RtxQ columns as analyze() wrote them stacked (None: stacked when read)
    blocking_columns: dict = None  # and their blocking columns

    def all_entries(self):
        for entry in self.entries:
            yield entry
            yield from entry.paths

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row per sender direction, then its paths / subflows (`level`, `parent`)."""
        return A.summary_frame(self.all_entries())

    @cached_property
    def rtxq(self) -> pd.DataFrame:
        """The RtxQ step function: one row per scoreboard-changing event of each entry."""
        if self.rtxq_columns is not None:
            return A.rtxq_table(self.rtxq_columns)
        return A.rtxq_frame(list(self.all_entries()))

    @cached_property
    def blocking(self) -> pd.DataFrame:
        if self.blocking_columns is not None:
            return A.blocking_table(self.blocking_columns)
        return A.blocking_frame(list(self.all_entries()))

    @cached_property
    def flows(self) -> pd.DataFrame:
        cap = self.capture
        rows = []
        for f in self.flow_list:
            rows.append({
                "flow": f.id, "protocol": f.protocol, "endpoint_0": f.endpoints[0], "endpoint_1": f.endpoints[1],
                "addresses_0": " ".join(f.addresses[0]), "addresses_1": " ".join(f.addresses[1]),
                "paths": len(f.conns), "conns": ",".join(map(str, f.conns)),
                "nr_sack_negotiated": f.negotiated_nr,
                "tag_0": f.tags[0], "tag_1": f.tags[1],
                "key_0": f.keys[0], "key_1": f.keys[1], "token_0": f.tokens[0], "token_1": f.tokens[1],
                "subflows": ";".join(f"{cap.conns[c].endpoint(0)}-{cap.conns[c].endpoint(1)}" for c in f.conns),
            })
        frame = pd.DataFrame(rows, columns=["flow", "protocol", "endpoint_0", "endpoint_1", "addresses_0", "addresses_1",
                                            "paths", "conns", "nr_sack_negotiated", "tag_0", "tag_1", "key_0", "key_1", "token_0",
                                            "token_1", "subflows"])
        frame["flow"] = frame["flow"].astype("Int64")
        frame["protocol"] = frame["protocol"].astype(pd.CategoricalDtype(["sctp", "tcp", "mptcp"]))
        for col in ("tag_0", "tag_1", "key_0", "key_1", "token_0", "token_1"):
            frame[col] = frame[col].astype("UInt64")
        return frame

    @cached_property
    def events(self) -> pd.DataFrame:
        """One row per SCTP chunk / TCP segment; NA where a field does not apply to the protocol."""
        ev = self.capture.ev
        conns = self.capture.conns
        sctp = ev["proto"] == E.PROTO_SCTP
        tcp = ~sctp
        fl = ev["flags"]

        def masked(values, valid, dtype):
            return pd.arrays.IntegerArray(values.astype(dtype.numpy_dtype), ~valid) if len(values) else pd.array([], dtype=dtype)

        # categoricals from codes: per-row strings would cost seconds on a million events
        names = [c.endpoint(0) for c in conns] + [c.endpoint(1) for c in conns]
        endpoints, endpoint_code = np.unique(np.array(names, dtype=object), return_inverse=True) if names else ([], [])
        endpoint_code = np.asarray(endpoint_code, np.int64)
        n_conns = len(conns)
        src_i = ev["conn"] + n_conns * ev["dir"].astype(np.int64)
        dst_i = ev["conn"] + n_conns * (1 - ev["dir"].astype(np.int64))
        chunk_types = np.unique(ev["chunk"])
        chunk_code = np.zeros(256, np.int64)
        chunk_code[chunk_types] = np.arange(len(chunk_types))
        flows = np.unique(self.flow_of)
        is_data_chunk = sctp & (ev["chunk"] == 0)
        is_ack_chunk = sctp & ((fl & E.ACK) != 0)  # SACK and NR-SACK, unless their counts failed (decisions.md 40)
        frame = pd.DataFrame({
            "frame": ev["frame"].astype(np.int64),
            "time_s": ev["time_ns"] / 1e9,
            "flow": pd.Categorical.from_codes(np.searchsorted(flows, self.flow_of), flows),
            "side": self.side_of,
            "path": ev["conn"].astype(np.int32),
            "protocol": pd.Categorical.from_codes(np.where(sctp, 0, 1), ["sctp", "tcp"]),
            "kind": pd.Categorical.from_codes(chunk_code[ev["chunk"]],
                                              [CHUNK_NAMES.get(int(k), f"chunk-{k}") for k in chunk_types]),
            "src": pd.Categorical.from_codes(endpoint_code[src_i], list(endpoints)),
            "dst": pd.Categorical.from_codes(endpoint_code[dst_i], list(endpoints)),
            "data": (fl & E.DATA) != 0,
            "ack": (fl & E.ACK) != 0,
            "tsn": masked(ev["seq"], is_data_chunk, pd.UInt32Dtype()),
            "cum_ack": masked(ev["ack"], is_ack_chunk, pd.UInt32Dtype()),
            "seq": masked(ev["seq"], tcp, pd.UInt32Dtype()),
            "tcp_ack": masked(ev["ack"], tcp & ((fl & E.ACK) != 0), pd.UInt32Dtype()),
            "length": ev["len"].astype(np.int64),
            "stream": masked(ev["stream"], is_data_chunk, pd.UInt16Dtype()),
            "ssn": masked(ev["ssn"], is_data_chunk, pd.UInt16Dtype()),
            "unordered": (fl & E.UNORDERED) != 0,
            "window": ev["wnd"].astype(np.int64),
            "vtag": masked(ev["tag"], sctp, pd.UInt32Dtype()),
            "dsn": masked(ev["dsn"], (fl & E.DSS_MAP) != 0, pd.UInt64Dtype()),
            "dss_length": masked(ev["dss_len"], (fl & E.DSS_MAP) != 0, pd.UInt16Dtype()),
            "data_ack": masked(ev["data_ack"], (fl & E.DATA_ACK) != 0, pd.UInt64Dtype()),
            "mptcp_key": masked(ev["key"], (fl & E.MP_CAPABLE) != 0, pd.UInt64Dtype()),
            "mptcp_token": masked(ev["aux"], ((fl & E.MP_JOIN) != 0) & ((ev["tcp_flags"] & 0x12) == 0x02), pd.UInt32Dtype()),
            "fsack_timestamp": masked(ev["aux"], sctp & ((ev["chunk"] == 0xA0) | (ev["chunk"] == 0xA1)), pd.UInt32Dtype()),
            "tcp_flags": masked(ev["tcp_flags"], tcp, pd.UInt8Dtype()),
            # negotiation as the handshake carries it (SYN / SYN-ACK options, INIT / INIT-ACK parameters)
            "sack_permitted": (fl & E.SACK_PERM) != 0,
            "nr_sack_permitted": (fl & E.NR_PERM) != 0,
            "never_renege": (fl & E.NEVER_RENEGE) != 0,
            "mptcp_nr_capable": (fl & E.MPTCP_NR_CAP) != 0,
            "supports_nr_sack": (fl & E.EXT_NRSACK) != 0,
            "supports_fsack": (fl & E.EXT_FSACK) != 0,
            "mp_capable": (fl & E.MP_CAPABLE) != 0,
            "mp_join": (fl & E.MP_JOIN) != 0,
            "flags": ev["flags"].astype(np.uint32),
            "blocks": ev["blk_count"].astype(np.int32),
            "blk_start": ev["blk_start"],
        })
        # serial numbers unwrapped to 64 bit at ingestion: seq64 = TSN / TCP seq of data, ack64 = cum
        # TSN / TCP ack of acks (a TCP segment may be both); MPTCP: the subflow's
        for name, want_data in (("seq64", True), ("ack64", False)):
            values, missing = np.zeros(len(ev), np.int64), np.ones(len(ev), bool)
            for kept in self.serials.values():
                pick = kept.is_data == want_data
                values[kept.rows[pick]] = kept.serial[pick]
                missing[kept.rows[pick]] = False
            frame[name] = pd.arrays.IntegerArray(values, missing)
        return frame

    @cached_property
    def blocks(self) -> pd.DataFrame:
        """The side table: gap / NR blocks, dup TSNs, addresses, as on the wire (SCTP: offsets)."""
        b = self.capture.blocks
        kinds = [E.BLOCK_KIND_NAMES[k] for k in sorted(E.BLOCK_KIND_NAMES)]
        return pd.DataFrame({
            "event": b["event"],
            "frame": self.capture.ev["frame"][b["event"]].astype(np.int64) if len(b) else np.empty(0, np.int64),
            "kind": pd.Categorical.from_codes(b["kind"].astype(np.int64) - 1, kinds),
            "lo": b["lo"], "hi": b["hi"],
        })

    @cached_property
    def findings(self) -> pd.DataFrame:
        return pd.DataFrame({"rule": "GEN-01", "severity": "error", "frame": [f for f, _ in self.capture.findings],
                             "message": [f"GEN-01 {m}" for _, m in self.capture.findings]},
                            columns=["rule", "severity", "frame", "message"])


def analyze(path, sndbuf=None, progress=None, chunk_frames=None, max_open_flows=MAX_OPEN_FLOWS, jobs=1) -> Analysis:
    """Reads a pcap / pcapng and computes the figures of metrics.md for every sender direction.

    sndbuf: the send buffer B in payload bytes; None estimates it from the capture (metrics.md,
    "Estimating B"), or leaves it null with a reason.
    progress: optional callable(bytes_read) called after each chunk of frames.
    chunk_frames: frames per chunk fed through the pipeline (None: the whole capture at once); the
    results do not depend on it.
    max_open_flows: the flows held open at once; past it the flows without data are released and those
    idle longest finished at their last event, with a GEN-01 note (docs/decisions.md 67).
    jobs: threads feeding the flows (state/workers.py; the same Analysis for any number; with chunk_frames None
    the capture is one chunk, read before the feeding starts).
    Raises CaptureError (one line) for unusable input.
    """
    store = MemoryStore()
    run = Run(path, store, chunk_frames, progress, keep_serials=True, max_open_flows=max_open_flows, jobs=jobs)
    chunks, flow_parts, side_parts = [], [], []
    for cap, flow_of, side_of in run.chunks():
        chunks.append(cap)
        flow_parts.append(flow_of)
        side_parts.append(side_of)
    header = run.end()
    cap = E.join_chunks(chunks)
    cap.rule_findings = header.rule_findings
    stacked = StackedTables(store.rows())
    entries = run.entries(sndbuf, stacked.sinks)
    return assembled(cap, run.pipeline.table.flows, np.concatenate(flow_parts) if len(flow_parts) > 1 else flow_parts[0],
                     np.concatenate(side_parts) if len(side_parts) > 1 else side_parts[0], entries, sndbuf,
                     *stacked.close(entries))


class StackedColumns:
    """One table's rows of pass 2 written straight into capture-wide columns (a sink of Run.entries per entry), so
    the table is not made by joining every entry's columns while they are all held. capacity: the rows it is
    expected to hold (it grows past them). empty: the columns of an entry without rows (finish()'s), None: none."""

    def __init__(self, capacity, empty=None):
        self.capacity, self.used, self.empty = capacity, 0, empty
        self.columns = {}   # name -> its capture-wide array
        self.spans = {}     # entry id -> [first row, end row, the names of its columns (None: no rows)]
        self.regular = True  # every batch with its entry's names and the first batch's dtypes

    def sink(self, entry_id):
        span = self.spans[entry_id] = [self.used, self.used, None]
        return lambda columns: self._write(span, columns)

    def _write(self, span, columns):
        n = len(next(iter(columns.values())))
        if self.used + n > self.capacity:
            self._grow(max(2 * self.capacity, self.used + n))
        names = tuple(columns)
        if span[2] is None:
            span[2] = names
        self.regular &= span[2] == names
        at = self.used
        for name, values in columns.items():
            target = self.columns.get(name)
            if target is None:  # (empty, not zeros: calloc would write every page of reused heap at once)
                target = self.columns[name] = np.empty(self.capacity, values.dtype)
            self.regular &= target.dtype == values.dtype
            target[at:at + n] = values
        self.used += n
        span[1] = self.used

    def _grow(self, capacity):
        for name, old in self.columns.items():
            self.columns[name] = np.empty(capacity, old.dtype)
            self.columns[name][:self.used] = old[:self.used]
        self.capacity = capacity

    def entry_columns(self, entry_id) -> dict:
        """An entry's columns as finish() would have kept them: views of its rows."""
        first, end, names = self.spans.get(entry_id, (0, 0, None))
        if names is None:
            return A.join_columns([], self.empty)
        return {name: self.columns[name][first:end] for name in names}

    def stacked(self, ids) -> "dict | None":
        """The columns of the entries `ids` (the order they were written in) as _stack makes them, or None where
        it would make them otherwise (an entry without rows and no `empty`, a dtype changing)."""
        if not ids or not self.regular or list(self.spans) != ids:
            return None
        spans = list(self.spans.values())  # (ids' order, just checked)
        every = [names if names is not None else tuple(self.empty or ()) for _, _, names in spans]
        if self.empty is None and any(names is None for _, _, names in spans):
            return None
        used = self.used
        out = {"flow": A.flow_codes(ids, [end - first for first, end, _ in spans])}
        for name, dtype in (self.empty or {}).items():  # (no entry has a row: the columns finish() gives)
            if name not in self.columns:
                self.columns[name] = np.empty(0, dtype.dtype)
        for name, values in self.columns.items():
            values = values[:used]
            having = [name in names for names in every]
            if all(having):
                out[name] = values
                continue
            mask = np.ones(used, bool)
            for (first, end, _), has in zip(spans, having):
                if has:
                    mask[first:end] = False
                else:  # the rows of entries without the column (TCP's in a TSN column) read 0, as _stack's
                    values[first:end] = 0
            out[name] = pd.arrays.IntegerArray(values.astype(np.int64, copy=False), mask)
        return out


class StackedTables:
    """The sinks of the in-memory analysis's pass 2 (Run.entries): the RtxQ and blocking rows written stacked
    (StackedColumns), and the rows of pass 1, freed entry by entry on the way, handed back to the kernel (the
    stacked columns cannot reuse the heap's holes they leave: a million packets, ~100 bytes a packet less at
    the peak). capacity: at least the RtxQ rows pass 2 makes (MemoryStore.rows)."""

    RELEASE_ROWS = 1 << 18  # rows written between two hand-backs of freed memory (each costs page faults again)

    def __init__(self, capacity):
        self.rtxq = StackedColumns(capacity)
        self.blocking = StackedColumns(capacity // 4 + 1024, A.NO_INTERVALS)
        self.released_at = 0

    def sinks(self, entry_id):
        if self.rtxq.used - self.released_at >= self.RELEASE_ROWS:  # the entries before's rows of pass 1 are free
            _native.release_freed_memory()
            self.released_at = self.rtxq.used
        return self.rtxq.sink(entry_id), self.blocking.sink(entry_id)

    def close(self, entries) -> tuple:
        """Sets each entry's rtxq and blocking columns (views); -> the stacked columns of both tables (None where
        Analysis stacks the entries' when read)."""
        _native.release_freed_memory()
        ids = []
        for entry in (part for entry in entries for part in (entry, *entry.paths)):
            entry_id = entry.summary["id"]
            ids.append(entry_id)
            entry.rtxq_columns = self.rtxq.entry_columns(entry_id)
            entry.blocking_columns = self.blocking.entry_columns(entry_id)
        return self.rtxq.stacked(ids), self.blocking.stacked(ids)


def assembled(cap, flow_list, flow_of, side_of, entries, sndbuf, rtxq_columns=None, blocking_columns=None) -> Analysis:
    """The Analysis of a capture's events and the entries a pipeline kept their serials for (keep_serials)."""
    serials = {}
    for entry in entries:
        for part in (entry, *entry.paths):
            # `serial` is the transport level's: TSN / cum TSN, TCP seq / ack (MPTCP: of the subflow)
            level = part.summary.get("level")
            if level == "path" or (part.summary["protocol"] == "mptcp" and level != "subflow"):
                continue
            if part.serials is not None:
                serials[part.summary["id"]] = part.serials
    return Analysis(cap, flow_list, flow_of, side_of, entries, sndbuf, serials, rtxq_columns, blocking_columns)
