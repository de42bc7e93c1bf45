"""Streaming analysis: a capture of any length to its summary (and summary, rtxq and blocking
files), holding one chunk of the capture at a time.

Pass 1 (pipeline.Pipeline) reads the capture in chunks; every entry's per-row figures spill to one
temporary file (DiskStore). Pass 2 reads them back entry by entry, in batches of at most a chunk,
and appends the RtxQ and blocking tables to the output files. A flow is finished when it ends or the
budget of open flows cuts it: its summary row and its table pieces go to a second temporary file
(pipeline.EntrySpill), from which they are written in flow order at the end, between the flows still
open. Memory: a chunk, the open flows' state and the window of each direction's scoreboard, and an
index of the spilled pieces; without files (the summary alone) the tables are never made. The files
hold exactly what `analyze(...)` and formats.write_tables would write.
"""

from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter
from pathlib import Path

import numpy as np

from nrsack.analyzer import _native
from nrsack.analyzer.state import scoreboard as A
from nrsack.analyzer.read import events as E
from nrsack.analyzer.views import formats
from nrsack.analyzer.state.pipeline import KEEP_ALL, MAX_OPEN_FLOWS
from nrsack.analyzer.state.run import Run, few_collections
from nrsack.analyzer.state.stores import DiskStore
from nrsack.analyzer.state.stores import SummaryStore


class TableWriter:
    """One table written in pieces: CSV (header once) or Parquet (a row group per ROWS_PER_WRITE rows or
    ENTRIES_PER_WRITE entries, however many batches that takes: few large writes are the fast ones).
    Pieces come one at a time (write: an entry's column dict) or as runs of consecutive entries' pieces in
    column arrays (write_many: a parcel's flows replayed from the spill); a write makes one DataFrame of them,
    as the in-memory table is made (analysis.rtxq_frame / blocking_frame); a Parquet file's later writes make
    the same Arrow table straight from them (arrow_table). The `flow` column's Parquet dictionary: every entry
    id in the first row group, the ids present in each later one (decisions.md 108: a reader of the whole file
    gets every id as the categories, as the in-memory file gives them)."""

    ROWS_PER_WRITE = 1 << 18
    # and at most this many entries: a flood's entries have a row or two each, and 2^18 of them pending (their
    # column dicts and the frame made of them) took 1.3 GB at 100,000 never-closed data flows, 0.77 GB at 2^14
    ENTRIES_PER_WRITE = 1 << 13

    def __init__(self, path, fmt, table, ids, nullable_tsns, pool=None):
        self.path, self.fmt, self.table, self.ids, self.nullable = Path(path), fmt, table, ids, nullable_tsns
        self.writer = None
        # [([entry id a piece], A.TablePieces)]: the pieces written since the last write, a batch of them a part
        self.pending, self.pending_rows, self.pending_entries = [], 0, 0
        # --jobs: each write made in `pool` (one thread: in order) while pass 2 goes on, one at a time
        self.pool, self.writing = pool, None

    def write(self, entry_id, columns):
        """One piece: the columns of an entry's rows."""
        rows = len(columns["start_ns" if self.table == "blocking" else "time_ns"])
        self.write_many([entry_id], A.TablePieces(None, np.array([rows], np.int64), columns))

    def write_many(self, ids, pieces):
        """Pieces of consecutive entries (ids: each piece's entry id), as write() would take them one at a time:
        written where write() would have flushed, so the files are cut into the same row groups."""
        lengths = pieces.length
        new = np.ones(len(ids), bool)  # a piece whose entry is not the one before's
        new[1:] = [a != b for a, b in zip(ids[1:], ids[:-1])]
        if self.pending and self.pending[-1][0][-1] == ids[0]:
            new[0] = False
        first, row = 0, 0
        while first < len(ids):
            entries = self.pending_entries + np.cumsum(new[first:])
            rows = self.pending_rows + np.cumsum(lengths[first:])
            full = np.flatnonzero((rows >= self.ROWS_PER_WRITE) | (entries >= self.ENTRIES_PER_WRITE))
            stop = first + (int(full[0]) + 1 if len(full) else len(ids) - first)
            taken = int(rows[stop - first - 1]) - self.pending_rows
            self.pending.append((ids[first:stop], A.TablePieces(
                None, lengths[first:stop], {k: v[row:row + taken] for k, v in pieces.columns.items()})))
            self.pending_rows += taken
            self.pending_entries = int(entries[stop - first - 1])
            first, row = stop, row + taken
            if len(full):
                self._flush()
                if first < len(ids):
                    new[first] = True  # (after a write, an entry's next piece starts it again)

    def _frame(self, pending):
        """The frame of the pending pieces, as rtxq_frame / blocking_frame make it of their entries."""
        ids = [entry_id for part_ids, _ in pending for entry_id in part_ids]
        parts = [pieces for _, pieces in pending]
        names = {tuple(sorted(p.columns)) for p in parts}
        if len(names) == 1:  # every piece has the same columns: stacked at once, as _stack would join them
            lengths = np.concatenate([p.length for p in parts])
            starts = np.flatnonzero([True] + [a != b for a, b in zip(ids[1:], ids[:-1])])
            cols = {name: np.concatenate([p.columns[name] for p in parts]) for name in parts[0].columns}
            cols["flow"] = A.flow_codes([ids[k] for k in starts.tolist()], np.add.reduceat(lengths, starts))
            frame = A.rtxq_table(cols, self.nullable) if self.table == "rtxq" else A.blocking_table(cols)
        else:  # (a column some entries lack: _stack fills it with NA)
            entries = []
            for part_ids, pieces in pending:
                at = np.append(0, np.cumsum(pieces.length)).tolist()
                for k, entry_id in enumerate(part_ids):
                    columns = {name: v[at[k]:at[k + 1]] for name, v in pieces.columns.items()}
                    if entries and entries[-1][0] == entry_id:
                        entries[-1][1].append(columns)
                    else:
                        entries.append((entry_id, [columns]))
            frame = self._entries_frame(entries)
        if self.fmt == "parquet" and self.writer is None:
            # (the first row group's dictionary; the categories are a Parquet file's alone, not CSV's)
            frame["flow"] = frame["flow"].cat.set_categories(self.ids)
        return frame

    def _entries_frame(self, entries):
        """[(entry id, [column dicts])] -> the table's frame."""
        results = [A.DirectionResult({"id": entry_id}, *(2 * (A.join_columns(parts),))) for entry_id, parts in entries]
        return A.rtxq_frame(results, self.nullable) if self.table == "rtxq" else A.blocking_frame(results)

    def _flush(self):
        if not self.pending:
            return
        pending = self.pending
        self.pending, self.pending_rows, self.pending_entries = [], 0, 0
        if self.pool is None:
            self._write(pending)
            return
        self._settle()
        self.writing = self.pool.submit(self._write, pending)

    def _settle(self):
        if self.writing is not None:
            writing, self.writing = self.writing, None
            writing.result()  # (its error raised here)

    def _write(self, pending):
        if self.writer is not None and self.fmt == "parquet":
            # the first write's schema (pandas's, its metadata in the file) fixes every column's type: the
            # later ones are made straight from the entries' arrays, not through a DataFrame (a third of the writing)
            import pyarrow as pa

            # the ids present, in their order (a flow's pieces come together), as the row group's dictionary
            present = {}
            codes = [present.setdefault(entry_id, len(present)) for ids, _ in pending for entry_id in ids]
            table = arrow_table(codes, np.concatenate([pieces.length for _, pieces in pending]),
                                [pieces.columns for _, pieces in pending], self.table, self.writer.schema,
                                pa.array(list(present), pa.string()))
            if table is not None:
                self.writer.write_table(table)
                return
        frame = self._frame(pending)
        if self.fmt == "csv":
            frame.to_csv(self.path, index=False, mode="w" if self.writer is None else "a", header=self.writer is None)
            self.writer = True
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False, nthreads=1)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.path, table.schema,
                                           use_dictionary=formats.dictionary_columns(table.column_names))
        self.writer.write_table(table.cast(self.writer.schema))

    def close(self):
        self._flush()
        self._settle()
        if self.writer is None:  # nothing written: the empty table, with its columns
            formats.write_table(self._frame([]), self.path, self.fmt)
        elif self.fmt == "parquet":
            self.writer.close()


def arrow_table(codes, lengths, parts, table, schema, flow_dictionary):
    """The Arrow table of the pending pieces whose columns are those pa.Table.from_pandas(A.rtxq_frame /
    A.blocking_frame of them).cast(schema) holds: the same values, types and nulls, so the same Parquet bytes;
    None when the pieces' columns and `schema`'s differ (the frame's path says how). codes, lengths: each piece's
    entry's place in flow_dictionary (the ids present, as Arrow strings) and its rows, in order; parts:
    column dicts whose rows, one after another, are the pieces' (a piece each, or several pieces' joined)."""
    import pyarrow as pa

    length_of = "start_ns" if table == "blocking" else "time_ns"
    part_rows = [len(columns[length_of]) for columns in parts]
    rows = sum(part_rows)

    def joined(name):  # -> (values, missing rows or None), or None where no entry has the column
        present = [columns.get(name) for columns in parts]
        if all(values is not None for values in present):
            return (present[0] if len(present) == 1 else np.concatenate(present)), None
        if any(values is not None for values in present):
            return A.fill_missing(present, part_rows)
        return None

    if table == "rtxq":
        time_ns, is_data = joined("time_ns")[0], joined("is_data")[0]
        columns = {"time_s": (time_ns / 1e9, None)}
        for name in ("rtxq_sack_bytes", "rtxq_nr_bytes", "rtxq_whatif_bytes", "sacked_bytes", "nr_acked_bytes",
                     "blocked", "gap_open", "frame", "rtxq_bytes"):
            columns[name] = joined(name)
        columns["event"] = ((~is_data).astype(np.int8), ("data", "ack"))  # (A.rtxq_table's categorical)
        columns["freed_bytes"] = (joined("freed_bytes")[0], is_data.astype(bool))
        columns["time_ns"] = (time_ns, None)
        for name in A.TSN_COLUMNS:  # (in the schema and no entry has them: all NA, as _tsn_column makes them)
            tsns = joined(name)
            if tsns is not None or name in schema.names:
                columns[name] = tsns or (np.zeros(rows, np.int64), np.ones(rows, bool))
    else:
        start_ns, end_ns, end_frame = (joined(name)[0] for name in ("start_ns", "end_ns", "end_frame"))
        columns = {
            "start_s": (start_ns / 1e9, None), "end_s": (end_ns / 1e9, None),
            "duration_s": ((end_ns - start_ns) / 1e9, None),
            "rtxq_bytes_at_start": joined("rtxq_bytes_at_start"), "gap_open": joined("gap_open"),
            "start_frame": joined("start_frame"), "end_frame": (np.maximum(end_frame, 0), end_frame < 0),
            "start_ns": (start_ns, None), "end_ns": (end_ns, None),
        }
    # each piece's entry's code in the writer's categories, over its rows
    columns["flow"] = (np.repeat(np.asarray(codes, np.int64), lengths), flow_dictionary)
    if set(columns) != set(schema.names):
        return None
    arrays = []
    for field in schema:
        values, extra = columns[field.name]
        if pa.types.is_dictionary(field.type):  # extra: the categories
            categories = extra if isinstance(extra, pa.Array) else pa.array(extra, field.type.value_type)
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(values, field.type.index_type), categories))
        else:  # extra: the missing rows (NA)
            arrays.append(pa.array(values, field.type, mask=extra))
    return pa.Table.from_arrays(arrays, schema=schema)


class SummaryColumns:
    """scoreboard.summary_frame's frame (the same dtypes and values) of summary rows added a batch at a time.
    summary_frame makes a dict of each entry and pandas an object matrix of them: 3.7 GB at a million
    entries. Here each column of a batch is kept typed (ints, floats and bools as arrays, strings joined into
    one, Nones counted; a column of several types split by type) and, at the end, turned back into the
    Python values it held one column at a time, for pandas's own inference of its dtype (the records path
    of pd.DataFrame, which the dicts' takes too)."""

    def __init__(self):
        self.parts = {name: [] for name in A.SUMMARY_COLUMNS}
        self.rows = 0
        self._places = {}  # a row's keys -> where each column's value is in its values (-1: missing)

    def add(self, rows):
        """rows: [(keys, values)] (scoreboard.summary_row's)."""
        # runs of rows with one keys tuple, in order (rows of one spilled batch share one: not compared again;
        # the compiled pass's and finish()'s rows have different ones and alternate)
        runs, last = [], None
        for keys, values in rows:
            if keys is not last and keys != last:
                group, last = [], keys
                runs.append((keys, group))
            group.append(values)
        for keys, group in runs:
            places = self._places.get(keys)
            if places is None:
                where = {key: k for k, key in enumerate(keys)}
                places = self._places[keys] = [where.get(name, -1) for name in A.SUMMARY_COLUMNS]
            for name, k in zip(A.SUMMARY_COLUMNS, places):
                # (a missing key is NaN in pandas's frame of dicts)
                column = [float("nan")] * len(group) if k < 0 else list(map(itemgetter(k), group))
                self.parts[name].append(_pack(column))
            self.rows += len(group)

    def frame(self):
        import pandas as pd

        if not self.rows:
            return A.summary_frame([])
        columns = {}
        for name in A.SUMMARY_COLUMNS:
            columns[name] = _summary_column(name, self.parts.pop(name))
            # (the packed parts and a string column's Python values freed: holes between the other columns' parts,
            # which the next columns' whole arrays cannot reuse; handed back, not held beside the frame)
            _native.release_freed_memory()
        # (copy=False: pandas would copy the columns into one block per dtype, a second summary at the run's peak)
        return A.typed_summary(pd.DataFrame(columns, copy=False))


_NUMPY_KINDS = {bool: np.bool_, int: np.int64, float: np.float64}


def _pack(values):
    """A column's values (a list) -> a compact form _unpack turns back into the same values, of the same types."""
    types = list(map(type, values))
    kinds = set(types)
    if len(kinds) > 1:  # -> (types, [their positions], [each type's values packed])
        kinds = sorted(kinds, key=str)
        places = [[k for k, t in enumerate(types) if t is kind] for kind in kinds]
        return "mixed", len(values), places, [_pack([values[k] for k in place]) for place in places]
    kind = kinds.pop() if kinds else type(None)
    if kind is type(None):
        return "none", len(values)
    if kind in (bool, int, float):
        try:
            return kind, np.array(values, _NUMPY_KINDS[kind])
        except OverflowError:  # (an int beyond 64 bits: kept as it is)
            return "objects", values
    if kind is str:
        distinct = dict.fromkeys(values)
        if 2 * len(distinct) <= len(values):  # (a verdict, a reason: each value one object, not one a row)
            codes = {value: code for code, value in enumerate(distinct)}
            return str, list(distinct), np.array([codes[value] for value in values], np.int32)
        return str, "".join(values), np.fromiter(map(len, values), np.int64, len(values))
    return "objects", values


def _summary_column(name, parts):
    """One summary column made of its packed parts (_pack), as pandas makes it from the entries' dicts; the parts are
    let go as soon as they are read."""
    import pandas as pd

    if len({part[0] for part in parts}) == 1 and parts[0][0] in _NUMPY_KINDS:
        # ints, floats or bools alone: pandas makes them an int64, float64 or bool array
        return pd.Series(np.concatenate([part[1] for part in parts]), name=name, copy=False)
    if all(part[0] == "none" for part in parts):  # (a figure no entry has: object Nones, as pandas makes them)
        return pd.Series([None] * sum(part[1] for part in parts), dtype=object, name=name)
    strings = all(part[0] is str for part in parts)
    # strings alone: the string dtype pandas infers for any of them
    kind = pd.DataFrame([(_unpack(parts[0])[0],)], columns=[name])[name].dtype if strings else None
    if isinstance(kind, pd.StringDtype) and kind.storage == "pyarrow":
        # the Arrow-held string dtype: its array made of the packed parts, without a Python string a row (two
        # columns of a million ids: ~150 MB at the peak)
        from pandas.arrays import ArrowStringArray

        return pd.Series(ArrowStringArray(_arrow_strings(parts), dtype=kind), name=name, copy=False)
    values = [value for part in parts for value in _unpack(part)]
    del parts
    if strings and kind != object:  # made without a row tuple each
        return pd.Series(pd.array(values, dtype=kind), name=name)
    return pd.DataFrame(list(zip(values)), columns=[name])[name]


def _arrow_strings(parts):
    """The values of _pack's string parts as one Arrow large_string array (pd.array's of the values, as Python strings)."""
    import pyarrow as pa

    arrays = []
    for _, held, numbers in parts:
        if isinstance(held, list):  # the distinct values, each row's code
            distinct = pa.array(held, pa.large_string())
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(numbers), distinct).cast(pa.large_string()))
        elif held.isascii():  # the values joined, each one's length (in characters: here bytes too)
            offsets = np.zeros(len(numbers) + 1, np.int64)
            np.cumsum(numbers, out=offsets[1:])
            arrays.append(pa.LargeStringArray.from_buffers(len(numbers), pa.py_buffer(offsets),
                                                           pa.py_buffer(held.encode())))
        else:
            arrays.append(pa.array(_unpack((str, held, numbers)), pa.large_string()))
    return pa.concat_arrays(arrays)


def _unpack(packed) -> list:
    kind = packed[0]
    if kind == "none":
        return [None] * packed[1]
    if kind in (bool, int, float):
        return packed[1].tolist()  # (Python bools, ints and floats)
    if kind is str and isinstance(packed[1], list):
        return list(map(packed[1].__getitem__, packed[2].tolist()))
    if kind is str:
        joined, ends = packed[1], np.cumsum(packed[2]).tolist()
        return [joined[start:end] for start, end in zip([0] + ends[:-1], ends)]
    if kind == "mixed":
        values = [None] * packed[1]
        for place, part in zip(packed[2], packed[3]):
            for k, value in zip(place, _unpack(part)):
                values[k] = value
        return values
    return packed[1]


@dataclass
class StreamedAnalysis:
    """What a streaming run keeps: every entry's summary (not its tables) and the capture's header
    (path, frames, findings) as the last chunk carries it; the views of a summary accept it."""

    capture: E.Capture
    entries: list
    files: list

    def all_entries(self):
        for entry in self.entries:
            yield entry
            yield from entry.paths

    @cached_property
    def summary(self):
        columns, self._far = SummaryColumns(), []
        for rows in formats.summary_rows(self.entries):
            formats.far_notes(rows, self._far)
            columns.add([row for keys, values, paths in rows for row in ((keys, values), *paths)])
        return columns.frame()

    def far_notes(self) -> list:
        """formats.summary_findings's far notes of the entries: noted while the summary was made (a million spilled
        entries read once, not twice), else read here."""
        if "summary" in self.__dict__:
            return self._far
        far = []
        for rows in formats.summary_rows(self.entries):
            formats.far_notes(rows, far)
        return far


def analyze_to_files(path, out_dir=None, fmt="csv", sndbuf=None, keep=None, chunk_frames=E.CHUNK_FRAMES,
                     progress=None, observe=None, max_open_flows=MAX_OPEN_FLOWS, jobs=1) -> StreamedAnalysis:
    """Streams the capture at `path` into summary / rtxq / blocking files (`fmt`: csv or parquet) in
    `out_dir`, for every entry or those whose id `keep(entry_id)` accepts (the returned summary has
    them all). Without out_dir, no file: only the summary, and the tables are never made.
    observe(pipeline), when given, attaches to the pipeline before the first chunk (analyze --check).
    max_open_flows: the flows held open at once (pipeline.MAX_OPEN_FLOWS; past it some finish early, noted).
    jobs: threads (state/workers.py; the same files and summary for any number).
    Raises CaptureError for unusable input."""
    out = None if out_dir is None else Path(out_dir)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    # a flow is finished when it ends (or the budget cuts it) and its entries spilled, with the pieces of
    # its tables when files are written (pipeline.EntrySpill), so memory follows the open flows, not the
    # flows seen; not under an observer (the checker), which judges a flow's end rules at the end of the
    # capture. The summary alone reads a fifth of what the tables do from pass 1's rows (state/stores.py)
    store = DiskStore(out) if out is not None else SummaryStore()
    keep_tables = None if out is None else keep or KEEP_ALL
    run = Run(path, store, chunk_frames, progress, observers=() if observe is None else (observe,),
              finish_ended=observe is None, keep_tables=keep_tables, sndbuf=sndbuf, max_open_flows=max_open_flows,
              jobs=jobs)
    table_pool = None
    with few_collections():
        try:
            header = run.read()
            _native.release_freed_memory()
            if out is None:
                return StreamedAnalysis(header, run.entries(sndbuf, lambda entry_id: (A.IGNORE, A.IGNORE)), [])
            import pandas as pd  # (here: the summary alone starts without pandas, a quarter second)

            ids, protocols = [], set()
            for batch_ids, batch_protocols in run.pipeline.entry_ids():
                ids += batch_ids
                protocols |= batch_protocols
            # one index of the ids for every write's categories: a list set each time was made an index again
            # (a million strings, a hash table of them)
            ids = pd.Index(ids)
            # SCTP and TCP together: the TSN columns (SCTP's levels count TSNs) are NA for TCP
            nullable = "sctp" in protocols and len(protocols) > 1
            if jobs > 1:  # the tables' writes made in a thread while pass 2 goes on (one thread: each table in order)
                from concurrent.futures import ThreadPoolExecutor

                table_pool = ThreadPoolExecutor(1, thread_name_prefix="nrsack-tables")
            writers = {name: TableWriter(out / f"{name}.{fmt}", fmt, name, ids, nullable, table_pool)
                       for name in ("rtxq", "blocking")}

            def sinks(entry_id):
                if keep is not None and not keep(entry_id):
                    return A.IGNORE, A.IGNORE
                return (lambda columns: writers["rtxq"].write(entry_id, columns),
                        lambda columns: writers["blocking"].write(entry_id, columns))

            def many(table, ids, pieces):  # (EntrySpill.replay_tables: the pieces of flows finished together)
                if keep is not None:
                    wanted = np.flatnonzero([keep(entry_id) for entry_id in ids])
                    ids, pieces = [ids[k] for k in wanted.tolist()], pieces.take(wanted)
                if ids:
                    writers[("rtxq", "blocking")[table]].write_many(ids, pieces)

            sinks.many = many

            result = StreamedAnalysis(header, run.entries(sndbuf, sinks), [])
            # the tables finished before the summary is made: their writers and the entry ids (a million of them
            # ~200 MB) are gone by then
            tables = []
            for writer in writers.values():
                writer.close()
                tables.append(writer.path)
            writers = writer = ids = None
            if observe is None:  # (the summary reads the spilled entries alone: a million flows' state let go)
                run.keep_entries_only()
            if fmt == "parquet":  # (Arrow's pool keeps what the writes freed, for writes that do not come)
                import pyarrow as pa

                pa.default_memory_pool().release_unused()
            _native.release_freed_memory()
            summary = result.summary
            if keep is not None:
                summary = summary[summary["id"].map(keep).astype(bool)]
            written = out / f"summary.{fmt}"
            formats.write_table(summary, written, fmt)
            result.files += [written, *tables]
            return result
        finally:
            if table_pool is not None:
                table_pool.shutdown()
            run.close()

