"""The run driver: one capture through the pipeline (pipeline.py), the same way for every analysis.

read_chunks -> Pipeline.feed per chunk -> at the input's end the pipeline's notes (late events, the
budget of open flows) among the reader's findings -> the error for a capture without SCTP or TCP flows
-> the entries (pass 2). What differs between analyses is an argument: the store of pass 1's rows
(stores.py: memory, disk, kept, none) and the observers riding on the pipeline (the checker). The
in-memory API (results.py), the streamed files and the live table (views/) and the checker
(rules/checker.py) all drive their pipeline through a Run.
"""

from contextlib import contextmanager
import gc

from nrsack.analyzer.read import events as E
from nrsack.analyzer.state.pipeline import Pipeline
from nrsack.analyzer.state.workers import Workers, read_ahead


class Run:
    """One capture at `path` through a Pipeline over `store` (options: Pipeline's keywords). Iterate
    chunks() (or call read()), then end(), then entries(); observers: callables given the pipeline before
    its first chunk (Checker.attach). chunk_frames, progress, wait_s, name: events.read_chunks's. jobs > 1: the
    capture read a chunk ahead and each chunk's flows fed on `jobs` threads (workers.py; the same figures)."""

    def __init__(self, path, store, chunk_frames=E.CHUNK_FRAMES, progress=None, observers=(), wait_s=None,
                 name=None, jobs=1, **options):
        self.path, self.name = path, path if name is None else name
        self.reading = dict(frames=chunk_frames, progress=progress, wait_s=wait_s, name=name)
        self.store = store
        self.jobs = jobs
        # the flows on several threads (workers.py); not under observers, whose hooks run inside the feeding
        workers = Workers(jobs) if jobs > 1 and not observers else None
        self.pipeline = Pipeline(store, workers=workers, **options)
        for observe in observers:
            observe(self.pipeline)
        self.header = None  # the last chunk's header (path, frames, findings: they accumulate), without its events

    def chunks(self):
        """Feeds the capture chunk by chunk; yields (chunk, flow of each event, side of each event) after each."""
        chunks = E.read_chunks(self.path, **self.reading)
        for cap in chunks if self.jobs == 1 else read_ahead(chunks):
            yield (cap, *self.feed(cap))

    def feed(self, cap: E.Capture):
        """Feeds one chunk read elsewhere (chunks() reads them); -> the flow and the side of each of its events."""
        flow_of, side_of = self.pipeline.feed(cap)
        self.header = E.Capture(cap.path, cap.linktype, cap.frames, cap.ev[:0], cap.blocks[:0], cap.conns,
                                cap.findings, cap.rule_findings, cap.offset + len(cap.ev), cap.truncated)
        return flow_of, side_of

    def read(self) -> E.Capture:
        """Feeds the whole capture; -> end()."""
        for _ in self.chunks():
            pass
        return self.end()

    def end(self) -> E.Capture:
        """Once the input ended (or was cut short): the header, the pipeline's notes among its findings.
        Raises CaptureError when no SCTP or TCP flow came."""
        notes = self.pipeline.late_note()
        self._stop_workers()  # (nothing is fed after the notes)
        if self.header is not None:
            self.header.rule_findings = sorted(self.header.rule_findings + notes, key=lambda f: f[0])
        if not self.pipeline.table.flows:
            raise E.no_flows(self.name, self.header)
        return self.header

    def entries(self, sndbuf, sinks=None):
        """Pass 2 (Pipeline.entries): sinks(entry_id) -> (rtxq, blocking) callables, None: the tables kept."""
        return self.pipeline.entries(sndbuf, sinks)

    def keep_entries_only(self):
        """After pass 2, where no observer reads the flows again: the pipeline (its arrays of every flow seen, its flow
        table: ~90 bytes a flow) let go; the spilled entries, which entries() gave, stay readable."""
        self._stop_workers()
        self.pipeline = None

    def _stop_workers(self):
        if self.pipeline is not None and self.pipeline.workers is not None:
            self.pipeline.workers.close()
            self.pipeline.workers = None

    def close(self):
        """The store's temporary file, where it has one; the threads of --jobs."""
        self._stop_workers()
        if hasattr(self.store, "close"):
            self.store.close()


# the cyclic collector's first generation is collected every this many allocations while a capture is analysed
YOUNG_COLLECTION = 50_000


@contextmanager
def few_collections():
    """The cyclic garbage collector run rarely while a capture is analysed: flows, summaries and their dicts
    are made by the hundred thousand and seldom form cycles, and at the default pace (a young collection
    every 700 new objects) its passes over the flows held open took half of `check`'s time on a flood
    (100,000 never-closed data flows: 41.6 s CPU, 21.9 s with these; 804 objects collected) and a fifth of
    a streamed run on short flows."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)
