"""`--jobs N`: one capture's analysis on N threads (docs/decisions.md 5X).

The capture is read once, one chunk ahead of the pipeline, in a thread of its own (read_ahead); each
chunk's flows are fed (DirectionAccumulator.feed, the bulk of the work) in N shares at once (Workers.feed),
the pipeline waiting for all of them before it goes on. Everything else, in the caller's thread, runs as
with one job: the flow table, where flows end, the releases, the store's flushes, pass 2. A flow's rows
never meet another flow's state, so the figures are those of --jobs 1, byte for byte; the compiled
per-flow work (the levels and the Board) releases the GIL, which is where the threads run at once.
"""

import sys

# Python's default GIL switch interval (5 ms) is longer than a flow's compiled work in a chunk: a thread
# coming back from it with the GIL held elsewhere would wait that long for every flow it feeds
SWITCH_INTERVAL_S = 0.0002


class Workers:
    """jobs - 1 threads beside the caller's. feed(work): [(FlowEvents, [DirectionAccumulator])] of one chunk,
    each flow's accumulators fed by one thread, the flows split into `jobs` shares of about equal rows."""

    def __init__(self, jobs):
        from concurrent.futures import ThreadPoolExecutor  # (here: a command with one job starts without it)

        self.jobs = jobs
        self.pool = ThreadPoolExecutor(jobs - 1, thread_name_prefix="nrsack-flows")
        self.switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_S)

    def feed(self, work):
        shares = [[] for _ in range(self.jobs)]
        load = [0] * self.jobs
        # the largest flows first, each to the share with the fewest rows so far (the shares finish together);
        # which thread feeds a flow does not change what it computes
        for item in sorted(work, key=lambda item: len(item[0].rows), reverse=True):
            least = load.index(min(load))
            shares[least].append(item)
            load[least] += len(item[0].rows)
        pending = [self.pool.submit(feed_share, share) for share in shares[1:] if share]
        feed_share(shares[0])
        for done in pending:
            done.result()  # (raises the worker's exception here)

    def close(self):
        self.pool.shutdown()
        sys.setswitchinterval(self.switch_interval)


def feed_share(share):
    for events, senders in share:
        for sender in senders:
            sender.feed(events)


def read_ahead(chunks, depth=1):
    """The chunks of an iterator, read `depth` ahead in a thread of their own (the reader's compiled loop
    runs while the pipeline works on the chunk before); its exceptions are raised here, in order."""
    import queue  # (here: a command with one job starts without them)
    import threading

    ready = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def read():
        try:
            for chunk in chunks:
                ready.put((chunk, None))
                if stop.is_set():
                    return
            ready.put((end, None))
        except BaseException as error:  # (handed over: the caller's thread raises it)
            ready.put((None, error))
        finally:
            if hasattr(chunks, "close"):  # the reader's file closed in the thread that read it
                chunks.close()

    reader = threading.Thread(target=read, name="nrsack-reader", daemon=True)
    reader.start()
    try:
        while True:
            chunk, error = ready.get()
            if error is not None:
                raise error
            if chunk is end:
                return
            yield chunk
    finally:
        stop.set()
        while reader.is_alive():  # a reader blocked on a full queue is let go
            try:
                ready.get(timeout=0.05)
            except queue.Empty:
                pass
        reader.join()
