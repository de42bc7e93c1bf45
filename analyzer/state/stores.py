"""Where pass 1 of the pipeline (pipeline.py) keeps each entry's per-row figures until pass 2 reads them
back (store.append / fork / discard / batches, and flush at the end of each chunk where a store has it):
in memory (MemoryStore: the in-memory API), in a temporary file (DiskStore: the streamed summary and
tables), in memory and readable again (KeptStore: the live table), or nowhere (NullStore: the checker
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


class DiskStore:
    """Pass-1 rows in one temporary file: per entry, the (offset, count) of each chunk's piece. The
    pieces of the chunk being fed wait in memory until flush() (end of the chunk): a short flow that
    ends in it is finished from there and never touches the file."""

    def __init__(self, folder=None):
        self.file = tempfile.TemporaryFile(dir=folder, prefix="nrsack-rows-")
        self.pieces = {}
        self.waiting = {}  # key -> [column dicts] of the current chunk
        self.end = 0

    def append(self, key, columns: dict):
        self.waiting.setdefault(key, []).append(columns)

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

    def fork(self, key, twin):
        self.pieces[twin] = list(self.pieces.get(key, []))
        self.waiting[twin] = list(self.waiting.get(key, []))

    def discard(self, key):
        """A finished flow's rows nobody reads (a direction without data): never written."""
        self.pieces.pop(key, None)
        self.waiting.pop(key, None)

    def batches(self, key):
        for offset, count in self.pieces.pop(key, []):
            self.file.seek(offset)
            record = np.frombuffer(self.file.read(count * ROW_DTYPE.itemsize), ROW_DTYPE)
            yield {name: record[name] for name in ROW_DTYPE.names}
        for columns in self.waiting.pop(key, []):
            yield {name: columns[name] for name in ROW_DTYPE.names}

    def close(self):
        self.file.close()


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
