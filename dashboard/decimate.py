"""Server-side decimation for zoom levels: what the browser draws stays near a few points per pixel.

A million-event RtxQ step function cannot go to the browser whole and stay fast, so every zoom
level sends, per pixel-wide time bucket, the first, the lowest, the highest and the last point of
the visible window (in time order). The drawn envelope is then the same as the full series': no
spike, dip or step edge wider than a pixel disappears. Everything here is vectorised numpy.
"""

import numpy as np

# fewer points than this many per bucket are sent as they are (decimating would not save anything)
POINTS_PER_BUCKET = 4


def visible_slice(t, x0, x1) -> slice:
    """Indices of the sorted times t within [x0, x1], plus one point either side so that a step
    function drawn from them reaches both edges of the window."""
    start = max(int(np.searchsorted(t, x0, side="right")) - 1, 0)
    stop = min(int(np.searchsorted(t, x1, side="left")) + 1, len(t))
    return slice(start, stop)


def minmax_indices(t, y, buckets: int) -> np.ndarray:
    """Sorted indices into (t, y) keeping the first, min, max and last point of each of `buckets`
    equal-width time buckets. t must be sorted; returns all indices when there are few points."""
    n = len(t)
    if n <= POINTS_PER_BUCKET * buckets or n < 2 or t[-1] <= t[0]:
        return np.arange(n)
    width = (t[-1] - t[0]) / buckets
    bucket = np.minimum(((t - t[0]) / width).astype(np.int64), buckets - 1)
    # t is sorted, so each non-empty bucket is one run of indices
    starts = np.flatnonzero(np.diff(bucket, prepend=-1))
    counts = np.diff(np.append(starts, n))
    ends = starts + counts - 1
    run = np.repeat(np.arange(len(starts)), counts)
    lowest = np.repeat(np.minimum.reduceat(y, starts), counts)
    highest = np.repeat(np.maximum.reduceat(y, starts), counts)
    return np.unique(np.concatenate((starts, ends, _first_per_run(y == lowest, run),
                                     _first_per_run(y == highest, run))))


def _first_per_run(hit, run) -> np.ndarray:
    """Index of the first True of `hit` in each run (every run has at least one)."""
    where = np.flatnonzero(hit)
    runs = run[where]
    return where[np.concatenate(([True], runs[1:] != runs[:-1]))]


def decimate(t, y, x0, x1, buckets: int):
    """(t, y) of the window [x0, x1] decimated to about `buckets` pixel buckets."""
    window = visible_slice(t, x0, x1)
    tw, yw = t[window], y[window]
    keep = minmax_indices(tw, yw, buckets)
    return tw[keep], yw[keep]


def merge_intervals(starts, ends, x0, x1, min_gap, limit: int):
    """Intervals overlapping [x0, x1]; when more than `limit` remain, neighbours closer than
    `min_gap` (a pixel's time, or more until at most `limit` are left) are drawn as one.
    Returns (starts, ends, how many were visible)."""
    starts = np.asarray(starts, dtype=float)
    ends = np.asarray(ends, dtype=float)
    visible = (ends >= x0) & (starts <= x1)
    starts, ends = starts[visible], ends[visible]
    count = len(starts)
    if count <= limit:
        return starts, ends, count
    gaps = starts[1:] - ends[:-1]
    # merge below a pixel; if that still leaves too many, widen the merge until it does not
    while True:
        first = np.flatnonzero(np.concatenate(([True], gaps > min_gap)))
        if len(first) <= limit:
            return starts[first], np.maximum.reduceat(ends, first), count
        min_gap = max(min_gap * 2, np.partition(gaps, len(gaps) - limit)[len(gaps) - limit])
