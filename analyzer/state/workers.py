"""`--jobs N`: one capture's analysis on N threads (docs/decisions.md 90).

The capture is read once, one chunk ahead of the pipeline, in a thread of its own (read_ahead); each
chunk's flows are fed (DirectionAccumulator.feed, the bulk of the work) by N threads at once, each taking
the next flow as it is done with one (Workers.feed), the pipeline waiting for all of them before it goes
on; the store writes the chunk's rows in a pool thread while the next chunk is assigned (FileStore.flush).
The short TCP flows whose levels only their Boards read are fed together in one compiled call
(DirectionAccumulator.feed_fused) in the caller's thread before the others are shared out.
Everything else runs in the caller's thread as with one job: the flow table, where flows end, the
releases, pass 2. A flow's rows never meet another flow's state, so the figures are those of --jobs 1,
byte for byte; the compiled work (the reader, the levels and the Board) releases the GIL, which is where
the threads run at once.
"""


class Workers:
    """jobs - 1 threads beside the caller's. feed(work): [(FlowEvents, [DirectionAccumulator])] of one chunk,
    each flow's accumulators fed by one thread."""

    def __init__(self, jobs):
        from concurrent.futures import ThreadPoolExecutor  # (here: a command with one job starts without it)

        self.jobs = jobs
        self.pool = ThreadPoolExecutor(jobs - 1, thread_name_prefix="nrsack-flows")

    def feed(self, work):
        # the largest flows first, each thread taking the next flow as it is done with one (one iterator, whose
        # next() the GIL makes atomic): the threads finish together whatever a flow costs on which. Which thread
        # feeds a flow does not change what it computes
        flows = iter(sorted(work, key=lambda item: len(item[0].rows), reverse=True))
        pending = [self.pool.submit(feed_share, flows) for _ in range(self.jobs - 1)]
        feed_share(flows)
        for done in pending:
            done.result()  # (raises the worker's exception here)

    def close(self):
        self.pool.shutdown()


def feed_share(share):
    """Feeds the flows of `share` (an iterable of Workers.feed's work items)."""
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
