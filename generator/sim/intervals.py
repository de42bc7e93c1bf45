"""A set of integers kept as sorted disjoint half-open intervals [start, end).

Used for every scoreboard of the simulator: the receiver's out-of-order data, the sender's
gap-acked and NR-acked data. Reported blocks are re-reported on every ack, so `add` returns only
what is new and costs O(log n + blocks touched).
"""

from bisect import bisect_left, bisect_right


class IntervalSet:
    __slots__ = ("starts", "ends")

    def __init__(self):
        self.starts = []
        self.ends = []

    def __len__(self):
        return len(self.starts)

    def __bool__(self):
        return bool(self.starts)

    def add(self, start, end):
        """Insert [start, end); return the sub-ranges that were not in the set before."""
        if start >= end:
            return ()
        starts, ends = self.starts, self.ends
        i = bisect_left(ends, start)  # first interval touching or right of start
        j = i
        n = len(starts)
        if i < n and starts[i] <= start and ends[i] >= end:
            return ()  # already covered: the common case of a re-reported block
        new = []
        cursor = start
        lo, hi = start, end
        while j < n and starts[j] <= end:
            s, e = starts[j], ends[j]
            if s > cursor:
                new.append((cursor, s))
            if e > cursor:
                cursor = e
            if s < lo:
                lo = s
            if e > hi:
                hi = e
            j += 1
        if cursor < end:
            new.append((cursor, end))
        starts[i:j] = (lo,)
        ends[i:j] = (hi,)
        return new

    def contains(self, x):
        i = bisect_right(self.starts, x) - 1
        return i >= 0 and self.ends[i] > x

    def pop_prefix(self, x):
        """Remove everything below x; return the removed ranges."""
        starts, ends = self.starts, self.ends
        removed = []
        while starts and starts[0] < x:
            s, e = starts[0], ends[0]
            if e <= x:
                removed.append((s, e))
                del starts[0], ends[0]
            else:
                removed.append((s, x))
                starts[0] = x
                break
        return removed

    def first(self):
        return (self.starts[0], self.ends[0]) if self.starts else None

    def pop_first(self):
        s, e = self.starts[0], self.ends[0]
        del self.starts[0], self.ends[0]
        return s, e

    def blocks(self):
        return tuple(zip(self.starts, self.ends))

    def block_of(self, x):
        i = bisect_right(self.starts, x) - 1
        if i >= 0 and self.ends[i] > x:
            return self.starts[i], self.ends[i]
        return None
