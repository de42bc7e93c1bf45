"""`nrsack analyze CAPTURE --follow`: a live table of every sender direction (RtxQ, blocking, p/q),
refreshed while the capture is read (a pipe from `tcpdump -w -` runs for as long as tcpdump does)
and final at its end, like `top`.

The capture is read in small chunks, each ending after at most a refresh's wait, so that a slow
live input still moves the table; each refresh runs pass 2 over the rows so far without consuming
them (figures as if the capture ended there: p/q against the send buffer estimated so far), the
final table is the usual one. A regular file is followed as it grows, like `tail -f`: until it has
not grown for `idle_s` seconds (its writer stopped) or Ctrl-C, which end the input where it is.
"""

import os
import stat
import threading
import time

from nrsack.analyzer.state import scoreboard as A
from nrsack.analyzer.state.run import Run
from nrsack.analyzer.state.stores import KeptStore
from nrsack.analyzer.views.stream import StreamedAnalysis

FOLLOW_FRAMES = 64      # frames per chunk at most; a chunk also ends after REFRESH_S of waiting
REFRESH_S = 1.0         # at most one redraw a second, as top
IDLE_S = 10.0           # a growing file whose size has not changed this long is finished
POLL_S = 0.1            # how often a growing file is looked at


def feed_growing_file(path, fd, idle_s, stop, poll_s=POLL_S):
    """Copies the file at `path` into the pipe `fd` from its first byte as it grows, until it has not
    grown for `idle_s` or `stop` is set; then closes `fd` (the reader sees the end of its input)."""
    try:
        with open(path, "rb") as source:
            quiet_since = time.monotonic()
            while not stop.is_set():
                data = source.read(1 << 20)
                if data:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(fd, view):]
                    quiet_since = time.monotonic()
                elif time.monotonic() - quiet_since >= idle_s:
                    break
                else:
                    stop.wait(poll_s)
    except OSError:  # the reader went away (a broken pipe) or the file did
        pass
    finally:
        os.close(fd)


def follow(path, sndbuf, draw, frames=FOLLOW_FRAMES, refresh_s=REFRESH_S, idle_s=IDLE_S):
    """Reads the capture at `path` ("-": standard input; a regular file is followed as it grows),
    calling draw(analysis, final) at most every `refresh_s` while it runs and once at its end (Ctrl-C
    ends it too); -> the final StreamedAnalysis. Raises CaptureError."""
    store = KeptStore()
    drawn = 0.0
    source, stop, feeder = path, threading.Event(), None
    if path != "-" and os.path.exists(path) and stat.S_ISREG(os.stat(path).st_mode):
        read_end, write_end = os.pipe()
        feeder = threading.Thread(target=feed_growing_file, args=(path, write_end, idle_s, stop), daemon=True)
        feeder.start()
        source = f"/dev/fd/{read_end}"
    run = Run(source, store, frames, wait_s=refresh_s, name=path)
    try:
        for _ in run.chunks():
            if run.pipeline.table.flows and time.monotonic() - drawn >= refresh_s:
                drawn = time.monotonic()  # before drawing: the next chunk ends refresh_s after its first frame
                store.keep = True
                try:
                    draw(StreamedAnalysis(run.header, run.entries(sndbuf, lambda entry_id: (A.IGNORE, A.IGNORE)),
                                          []), False)
                finally:
                    store.keep = False
    except KeyboardInterrupt:
        pass  # Ctrl-C: the input ends here, the final table is what was read
    finally:
        stop.set()
        if feeder is not None:
            os.close(read_end)
            feeder.join()
    header = run.end()
    final = StreamedAnalysis(header, run.entries(sndbuf, lambda entry_id: (A.IGNORE, A.IGNORE)), [])
    draw(final, True)
    return final
