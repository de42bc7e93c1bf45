"""Where pass 1 of the pipeline (pipeline.py) keeps each entry's per-row figures until pass 2 reads them
back (store.append / fork / discard / batches, and flush at the end of each chunk where a store has it; append
takes a dict of columns or ROW_DTYPE records, Board.feed_level's):
in memory (MemoryStore: the in-memory API), in a temporary file (DiskStore: the streamed tables; SummaryStore: the streamed summary alone), in memory and readable again (KeptStore: the live table), or nowhere (NullStore: the checker
alone). The run (run.py) takes one; the views only choose."""

import os
import tempfile

import numpy as np

from nrsack.analyzer import _native
from nrsack.analyzer.state import scoreboard as A

ROW_DTYPE = A.ROW_DTYPE


class MemoryStore:
    """Pass-1 rows kept in memory: pass 2 gets each sender's rows as one batch."""

    def __init__(self):
        self._parts = {}

    def append(self, key, columns):
        if isinstance(columns, np.ndarray):  # (records: join_columns joins dicts)
            columns = {name: columns[name] for name in ROW_DTYPE.names}
        self._parts.setdefault(key, []).append(columns)

    def fork(self, key, twin):
        self._parts[twin] = list(self._parts.get(key, []))

    def discard(self, key):
        self._parts.pop(key, None)

    def batches(self, key):
        parts = self._parts.pop(key, [])
        if parts:
            yield A.join_columns(parts)

    def rows(self) -> int:
        """The rows held (a forked entry's counted again): at least the RtxQ rows pass 2 will make of them."""
        return sum(len(part["time_ns"]) for parts in self._parts.values() for part in parts)


class KeptStore(MemoryStore):
    """MemoryStore whose rows a refresh can read without taking them (pass 2 runs again later)."""

    keep = False

    def batches(self, key):
        if not self.keep:
            yield from super().batches(key)
            return
        parts = self._parts.get(key, [])
        if parts:
            joined = A.join_columns(parts)
            self._parts[key] = [joined]  # joined once, not on every refresh
            yield joined


class FileStore:
    """Pass-1 rows in one temporary file: per entry, its pieces there. The pieces of the chunk being fed
    wait in memory until flush() (end of the chunk): a short flow that ends in it is finished from there
    and never touches the file."""

    def __init__(self, folder=None):
        self.file = tempfile.TemporaryFile(dir=folder, prefix="nrsack-rows-")
        self.pieces = {}
        self.waiting = {}  # key -> [column dicts] of the current chunk
        self.end = 0
        self.writing = None  # the chunk written in a thread (flush with a pool), not yet in pieces

    def append(self, key, columns):
        self.waiting.setdefault(key, []).append(columns)

    def flush(self, pool=None):
        """The chunk's pieces written; with `pool` (--jobs) in one of its threads while the pipeline goes on to
        the next chunk: the pieces and the file are touched again only after it is done (settle)."""
        self.settle()
        waiting, self.waiting = self.waiting, {}
        if pool is None:
            self._write(waiting)
        else:
            self.writing = pool.submit(self._write, waiting)

    def settle(self):
        """Waits for the chunk being written in a thread (its error raised here)."""
        if self.writing is not None:
            writing, self.writing = self.writing, None
            writing.result()

    def fork(self, key, twin):
        self.settle()
        self.pieces[twin] = list(self.pieces.get(key, []))
        self.waiting[twin] = list(self.waiting.get(key, []))

    def discard(self, key):
        """A finished flow's rows nobody reads (a direction without data): never written."""
        self.settle()
        self.pieces.pop(key, None)
        self.waiting.pop(key, None)

    def close(self):
        try:
            self.settle()
        finally:
            self.file.close()


class DiskStore(FileStore):
    """Every row pass 1 makes (the tables read them all): the (offset, count, columnar) of each chunk's piece.
    A piece is ROW_DTYPE records as Board.feed_level wrote them, or (columnar) a column dict's columns one
    after another in ROW_DTYPE's order and types: not copied field by field into records, and read back as
    contiguous columns, not strided views of records, for pass 2's arithmetic."""

    def _write(self, waiting):
        self.file.seek(self.end)  # (batches() reads move it; the writes here follow one another)
        for key, parts in waiting.items():
            for columns in parts:
                columnar = not isinstance(columns, np.ndarray)
                if columnar:
                    count = len(columns["time_ns"])
                    piece, at = np.empty(count * ROW_DTYPE.itemsize, np.uint8), 0
                    for name in ROW_DTYPE.names:
                        size = count * ROW_DTYPE[name].itemsize
                        piece[at:at + size].view(ROW_DTYPE[name])[:] = columns[name]
                        at += size
                    self.file.write(piece)  # one write a piece
                else:
                    count = len(columns)
                    self.file.write(columns)  # its buffer, not a copy of it
                self.pieces.setdefault(key, []).append((self.end, count, columnar))
                self.end += count * ROW_DTYPE.itemsize

    def batches(self, key):
        self.settle()
        for offset, count, columnar in self.pieces.pop(key, []):
            self.file.seek(offset)
            data = self.file.read(count * ROW_DTYPE.itemsize)
            if not columnar:
                record = np.frombuffer(data, ROW_DTYPE)
                yield {name: record[name] for name in ROW_DTYPE.names}
                continue
            columns, at = {}, 0
            for name in ROW_DTYPE.names:
                columns[name] = np.frombuffer(data, ROW_DTYPE[name], count, at)
                at += count * ROW_DTYPE[name].itemsize
            yield columns
        for columns in self.waiting.pop(key, []):
            yield {name: columns[name] for name in ROW_DTYPE.names}


class NullStore:
    """The pipeline's row store when nobody reads the analyzer's tables (`nrsack check` alone)."""

    keeps_rows = False  # (Pipeline._cut: a flow finished early need not wait for the end)

    def append(self, key, columns):
        pass

    def fork(self, key, twin):
        pass

    def discard(self, key):
        pass

    def batches(self, key):
        return iter(())


class SummaryStore(FileStore):
    """Pass-1 rows in a temporary file, only what a summary's pass 2 reads (finish with IGNORE sinks: no
    table, so no frame, freed or unit counts): time, the RtxQ's sack and nr sizes, the acked bytes and
    four bits (new data, gap open, data, SACKed bytes held). A chunk's rows are written together, one packed
    record a row, each column in the narrowest of uint32 above a base or int64 that holds the chunk's values:
    17 bytes a row where all 81 of DiskStore's took a quarter of a long transfer's summary, most of it the
    kernel copying them into the file and back; and a few numpy calls a chunk, not a piece, so a thousand
    flows pay little more than one. Its pieces: key -> [(offset, rows, layout)]; layout: (the columns' bases,
    the packed record's dtype)."""

    COLUMNS = ("time_ns", "sack", "nr", "acked")
    KEPT = COLUMNS + ("flags", "is_data", "sacked")
    board_outputs = ("sack", "sacked", "nr", "acked")  # the Board.feed outputs KEPT holds: the others are not made
    NEW, GAP, DATA, SACKED = 1, 2, 4, 8  # the bits; NEW and GAP are Board.feed's flags 1 and 2
    BATCH_ROWS = 1 << 14  # (larger batches only made larger temporaries)

    def append(self, key, columns):
        """columns: ROW_DTYPE records (Board.feed_level's) or a dict of at least KEPT's columns."""
        if not isinstance(columns, np.ndarray):
            columns = {name: columns[name] for name in self.KEPT}
        self.waiting.setdefault(key, []).append(columns)

    @classmethod
    def _bits(cls, columns):
        bits = (columns["flags"] & (cls.NEW | cls.GAP)).astype(np.uint8)
        bits |= columns["is_data"].view(np.uint8) << 2
        bits |= (columns["sacked"] > 0).view(np.uint8) << 3
        return bits

    # (column dtypes as summary_pack reads them: KEPT's order)
    KEPT_DTYPES = (np.int64,) * 4 + (np.int32, np.bool_, np.int64)

    def _write(self, waiting):
        # the records first, then the dicts, packed in one compiled pass (_stores.c summary_pack): each column
        # in the narrowest of uint32 above the chunk's least value, or int64, that holds the chunk's values
        records, dicts = [], []
        for key, parts in waiting.items():
            for part in parts:
                (records if isinstance(part, np.ndarray) else dicts).append((key, part))
        if not records and not dicts:
            return
        pieces = [part for _, part in records] + [
            tuple(np.ascontiguousarray(part[name], dtype) for name, dtype in zip(self.KEPT, self.KEPT_DTYPES))
            for _, part in dicts]
        packed, bases, wide = _native.summary_pack(pieces)
        dtype = np.dtype([(name, np.int64 if whole else np.uint32) for name, whole in zip(self.COLUMNS, wide)]
                         + [("bits", np.uint8)])
        layout = (bases, dtype)
        self.file.seek(self.end)  # (batches() reads move it; the writes here follow one another)
        self.file.write(packed)
        row_bytes = dtype.itemsize
        counts = [len(part) for _, part in records] + [len(part["time_ns"]) for _, part in dicts]
        ends = np.cumsum(counts) * row_bytes + self.end
        pieces = self.pieces
        for (key, _), at, n in zip(records + dicts, (ends - np.multiply(counts, row_bytes)).tolist(), counts):
            # each piece a run of the chunk's packed rows
            pieces.setdefault(key, []).append((at, n, layout))
        self.end += len(packed)

    def _rows(self, columns, bits):
        """The column dict finish() reads; "sacked" says only whether any bytes were SACKed."""
        return dict(columns, flags=bits & (self.NEW | self.GAP), is_data=(bits & self.DATA) != 0,
                    sacked=bits & self.SACKED)

    def _joined(self, pieces):
        """Pieces written with one layout, read and joined: -> finish()'s column dict."""
        self.file.flush()
        fd = self.file.fileno()
        dtype = pieces[0][2][1]
        data = b"".join([os.pread(fd, n * dtype.itemsize, offset) for offset, n, _ in pieces])
        wide = tuple(int(dtype[name] == np.int64) for name in self.COLUMNS)
        bases = np.array([layout[0] for _, _, layout in pieces], np.int64)
        counts = np.array([n for _, n, _ in pieces], np.int64)
        columns, bits = _native.summary_unpack(data, wide, bases, counts)
        columns = np.frombuffer(columns, np.int64).reshape(len(self.COLUMNS), -1)
        return self._rows(dict(zip(self.COLUMNS, columns)), np.frombuffer(bits, np.uint8))

    def _waiting_rows(self, parts):
        columns = {name: np.concatenate([part[name] for part in parts]) for name in self.KEPT}
        return self._rows({name: columns[name].astype(np.int64, copy=False) for name in self.COLUMNS},
                          self._bits(columns))

    def batches(self, key):
        """The key's rows in order, pieces joined up to BATCH_ROWS: pass 2 costs a few numpy calls a batch,
        and a flow among a thousand has a piece of tens of rows in each chunk."""
        self.settle()
        pieces, waiting = self.pieces.pop(key, []), self.waiting.pop(key, [])
        batches, batch, rows = [], [], 0
        for piece in pieces:
            if batch and (rows >= self.BATCH_ROWS or batch[-1][2][1] != piece[2][1]):  # full, or another dtype
                batches.append(batch)
                batch, rows = [], 0
            batch.append(piece)
            rows += piece[1]
        if batch:
            batches.append(batch)
        last = None
        for batch in batches:
            if last is not None:
                yield last
            last = self._joined(batch)
        if waiting:  # the rows of the chunk being fed: joined to the last batch while it has room
            rows = self._waiting_rows(waiting)
            if last is not None and len(last["sack"]) < self.BATCH_ROWS:
                rows = A.join_columns([last, rows])
            elif last is not None:
                yield last
            last = rows
        if last is not None:
            yield last
