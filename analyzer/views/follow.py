"""`nrsack analyze CAPTURE --follow`: a live table of every sender direction (RtxQ, blocking, p/q),
refreshed while the capture is read (a pipe from `tcpdump -w -` runs for as long as tcpdump does)
and final at its end, like `top`.

The capture is read in small chunks so that a slow live input still moves the table; each refresh
runs pass 2 over the rows so far without consuming them (figures as if the capture ended there:
p/q against the send buffer estimated so far), the final table is the usual one.
"""

import time

from nrsack.analyzer.state import scoreboard as A
from nrsack.analyzer.read import events as E
from nrsack.analyzer.state.pipeline import Pipeline
from nrsack.analyzer.views.stream import StreamedAnalysis

FOLLOW_FRAMES = 64      # frames per chunk: a live transfer of a few packets a second still refreshes
REFRESH_S = 1.0         # at most one redraw a second, as top


class KeptStore(A.MemoryStore):
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


def follow(path, sndbuf, draw, frames=FOLLOW_FRAMES, refresh_s=REFRESH_S):
    """Reads the capture at `path` ("-": standard input), calling draw(analysis, final) at most every
    `refresh_s` while it runs and once at its end; -> the final StreamedAnalysis. Raises CaptureError."""
    store = KeptStore()
    pipeline = Pipeline(store)
    drawn, header = 0.0, None
    for cap in E.read_chunks(path, frames):
        pipeline.feed(cap)
        header = E.Capture(cap.path, cap.linktype, cap.frames, cap.ev[:0], cap.blocks[:0], cap.conns,
                           cap.findings, cap.rule_findings, truncated=cap.truncated)
        if pipeline.table.flows and time.monotonic() - drawn >= refresh_s:
            store.keep = True
            try:
                draw(StreamedAnalysis(header, pipeline.entries(sndbuf, lambda entry_id: (A.IGNORE, A.IGNORE)), []),
                     False)
            finally:
                store.keep = False
            drawn = time.monotonic()
    if not pipeline.table.flows:
        raise E.no_flows(path, header)
    final = StreamedAnalysis(header, pipeline.entries(sndbuf, lambda entry_id: (A.IGNORE, A.IGNORE)), [])
    draw(final, True)
    return final
