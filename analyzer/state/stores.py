"""Where pass 1 of the pipeline (pipeline.py) keeps each entry's per-row figures until pass 2 reads them
back (store.append / fork / discard / batches, and flush at the end of each chunk where a store has it):
in memory (MemoryStore: the in-memory API), in a temporary file (DiskStore: the streamed tables; SummaryStore: the streamed summary alone), in memory and readable again (KeptStore: the live table), or nowhere (NullStore: the checker
alone). The run (run.py) takes one; the views only choose."""

import tempfile

import numpy as np

from nrsack.analyzer.state import scoreboard as A

ROW_DTYPE = np.dtype([(name, "<i8") for name in A.BOARD_OUTPUTS]
                     + [("time_ns", "<i8"), ("frame", "<u4"), ("flags", "<i4"), ("is_data", "?")])


class MemoryStore:
    """Pass-1 rows kept in memory: pass 2 gets each sender's rows as one batch."""

    def __init__(self):
        self._parts = {}

    def append(self, key, columns: dict):
        self._parts.setdefault(key, []).append(columns)

    def fork(self, key, twin):
        self._parts[twin] = list(self._parts.get(key, []))

    def discard(self, key):
        self._parts.pop(key, None)

    def batches(self, key):
        parts = self._parts.pop(key, [])
        if parts:
            yield A.join_columns(parts)


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

    def append(self, key, columns: dict):
        self.waiting.setdefault(key, []).append(columns)

    def fork(self, key, twin):
        self.pieces[twin] = list(self.pieces.get(key, []))
        self.waiting[twin] = list(self.waiting.get(key, []))

    def discard(self, key):
        """A finished flow's rows nobody reads (a direction without data): never written."""
        self.pieces.pop(key, None)
        self.waiting.pop(key, None)

    def close(self):
        self.file.close()


class DiskStore(FileStore):
    """Every row pass 1 makes (the tables read them all): the (offset, count) of each chunk's piece."""

    def flush(self):
        self.file.seek(self.end)  # (batches() reads move it; the writes here follow one another)
        for key, parts in self.waiting.items():
            for columns in parts:
                record = np.empty(len(columns["time_ns"]), ROW_DTYPE)
                for name in ROW_DTYPE.names:
                    record[name] = columns[name]
                self.file.write(record)  # its buffer, not a copy of it
                self.pieces.setdefault(key, []).append((self.end, len(record)))
                self.end += record.nbytes
        self.waiting = {}

    def batches(self, key):
        for offset, count in self.pieces.pop(key, []):
            self.file.seek(offset)
            record = np.frombuffer(self.file.read(count * ROW_DTYPE.itemsize), ROW_DTYPE)
            yield {name: record[name] for name in ROW_DTYPE.names}
        for columns in self.waiting.pop(key, []):
            yield {name: columns[name] for name in ROW_DTYPE.names}


class NullStore:
    """The pipeline's row store when nobody reads the analyzer's tables (`nrsack check` alone)."""

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
    four bits (new data, gap open, data, SACKed bytes held). A chunk's pieces are written together, each
    column in the narrowest of uint32 above a base or int64 that holds the chunk's values: 17 bytes a
    row where all 81 of DiskStore's took a quarter of a long transfer's summary, most of it the kernel
    copying them into the file and back; and a few numpy calls a chunk, not a piece, so a thousand flows
    pay little more than one. Its pieces: key -> [(offset, rows, layout)]; layout: (base, dtype) per
    column, then the bits'."""

    COLUMNS = ("time_ns", "sack", "nr", "acked")
    KEPT = COLUMNS + ("flags", "is_data", "sacked")
    NEW, GAP, DATA, SACKED = 1, 2, 4, 8  # the bits; NEW and GAP are Board.feed's flags 1 and 2
    BATCH_ROWS = 1 << 14  # (larger batches only made larger temporaries)

    def append(self, key, columns: dict):
        super().append(key, {name: columns[name] for name in self.KEPT})

    @classmethod
    def _bits(cls, columns):
        bits = (columns["flags"] & (cls.NEW | cls.GAP)).astype(np.uint8)
        bits |= columns["is_data"].view(np.uint8) << 2
        bits |= (columns["sacked"] > 0).view(np.uint8) << 3
        return bits

    @staticmethod
    def _narrow(values):
        """-> (base, the values less base in the narrowest dtype that holds them)."""
        if not len(values):
            return 0, values
        base = int(values.min())
        if int(values.max()) - base < 1 << 32:
            return base, (values - base).astype(np.uint32)
        return 0, values

    def flush(self):
        keys = [key for key, parts in self.waiting.items() for _ in parts]
        parts = [part for parts in self.waiting.values() for part in parts]
        self.waiting = {}
        if not parts:
            return
        whole = {name: np.concatenate([part[name] for part in parts]) for name in self.KEPT}
        narrowed = [self._narrow(whole[name]) for name in self.COLUMNS] + [(0, self._bits(whole))]
        layout = tuple((base, values.dtype) for base, values in narrowed)
        row_bytes = sum(values.itemsize for _, values in narrowed)
        views, start = [], 0
        self.file.seek(self.end)  # (batches() reads move it; the writes here follow one another)
        for key, part in zip(keys, parts):
            n = len(part["time_ns"])
            views += [memoryview(values[start:start + n]) for _, values in narrowed]
            self.pieces.setdefault(key, []).append((self.end, n, layout))
            self.end += n * row_bytes
            start += n
        self.file.write(b"".join(views))

    def _rows(self, columns, bits):
        """The column dict finish() reads; "sacked" says only whether any bytes were SACKed."""
        return dict(columns, flags=bits & (self.NEW | self.GAP), is_data=(bits & self.DATA) != 0,
                    sacked=bits & self.SACKED)

    def _read(self, offset, n, layout):
        self.file.seek(offset)
        data = self.file.read(n * sum(dtype.itemsize for _, dtype in layout))
        columns, at = {}, 0
        for name, (base, dtype) in zip(self.COLUMNS, layout):
            values = np.frombuffer(data, dtype, n, at)
            columns[name] = values.astype(np.int64) + base if dtype != np.int64 else values
            at += n * dtype.itemsize
        columns["bits"] = np.frombuffer(data, np.uint8, n, at)
        return columns

    def batches(self, key):
        """The key's rows in order, pieces joined up to BATCH_ROWS: pass 2 costs a few numpy calls a batch,
        and a flow among a thousand has a piece of tens of rows in each chunk."""
        pieces, waiting = self.pieces.pop(key, []), self.waiting.pop(key, [])
        parts = [*(lambda piece=piece: self._read(*piece) for piece in pieces),  # read when their turn comes
                 *(lambda part=part: dict(part, bits=self._bits(part)) for part in waiting)]
        batch, rows = [], 0
        for k, part in enumerate(parts):
            batch.append(part())
            rows += len(batch[-1]["bits"])
            if rows >= self.BATCH_ROWS or k == len(parts) - 1:
                joined = {name: np.concatenate([p[name] for p in batch]) if len(batch) > 1 else batch[0][name]
                          for name in self.COLUMNS + ("bits",)}
                yield self._rows({name: joined[name] for name in self.COLUMNS}, joined["bits"])
                batch, rows = [], 0
