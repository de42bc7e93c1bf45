"""The scoreboard core (core/*.c) through the analyzer's Board, against a small pure-Python reading of
docs/scoreboard.md written here (sets of units, no intervals, no running totals), and the serial
unwrapping rule (core/serial.c) through _native.unwrap.

Random event sequences (hypothesis) check every figure and fact per row; named cases pin the
situations the issue names: a TSN below the first one seen, wrap, far values, revocation modes,
stale acks and a 16,000-block NR-SACK.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from nrsack.analyzer import _native
from nrsack.analyzer.state.scoreboard import BOARD_OUTPUTS, BOARD_RECEIVED, REVOKE_ALL, REVOKE_IN_SPAN, REVOKE_NONE

CHANGED, GAP_OPEN, RETRANSMISSION, STALE, BEYOND_SENT = 1, 2, 4, 8, 16
BELOW_CUM, WAS_NRACKED, R_AND_NR, OUT_OF_WINDOW, REVOKED = 32, 64, 128, 256, 512
OLDER = 1024
BASE = (1 << 32) + 1000  # where an anchored space starts: 2^32 + the first 32-bit value
TSN_WINDOW = 1 << 20
FAR = 1 << 30


# ---- the reference: docs/scoreboard.md read literally ----

class Reference:
    def __init__(self, units):
        self.units = units
        self.cum = None
        self.sent, self.sacked, self.nracked = set(), set(), set()
        self.size = {}
        self.gap_open = False
        self.have_data = False
        self.lowest = self.snd_max = None
        self.data_bytes = self.acked_bytes = 0

    def weight(self, units):
        return sum(self.size[u] for u in units) if self.units else len(units)

    def data(self, lo, hi, size):
        if self.units:
            low = self.cum if self.cum is not None else min(lo, self.lowest if self.have_data else lo)
            high = max(hi, self.snd_max if self.have_data else hi)
            if (lo >= self.cum and hi - self.cum > TSN_WINDOW) if self.cum is not None else high - low > TSN_WINDOW:
                return OUT_OF_WINDOW, 0
        span = set(range(lo, hi))
        flags = 0
        if self.cum is not None and lo < self.cum:
            flags |= BELOW_CUM
        if span & self.nracked:
            flags |= WAS_NRACKED
        new = {u for u in span if (self.cum is None or u >= self.cum) and u not in self.sent}
        for u in new:
            self.size[u] = size
        self.sent |= new
        self.data_bytes += self.weight(new)
        flags |= CHANGED if new else RETRANSMISSION
        self.lowest = lo if not self.have_data else min(self.lowest, lo)
        self.snd_max = hi if not self.have_data else max(self.snd_max, hi)
        self.have_data = True
        return flags, 0

    def ack(self, cum, blocks, revoke):
        received = bool(revoke & BOARD_RECEIVED)
        mode = revoke & 3
        r = set().union(*(range(lo, hi) for lo, hi, nr in blocks if not nr))
        n = set().union(*(range(lo, hi) for lo, hi, nr in blocks if nr))
        flags = CHANGED if self.have_data else 0
        ends = [hi for lo, hi, nr in blocks if hi > lo and (nr or not received)]
        if self.have_data and (cum > self.snd_max or any(e > self.snd_max for e in ends)):
            flags |= BEYOND_SENT
        if not received and r & n:
            flags |= R_AND_NR
        revoked = set()
        if self.cum is not None and cum < self.cum:
            flags |= STALE
        else:
            if self.cum is None or cum > self.cum:
                gone = {u for u in self.sent if u < cum}
                self.acked_bytes += self.weight(gone)
                self.sent -= gone
                self.sacked = {u for u in self.sacked if u >= cum}
                self.nracked = {u for u in self.nracked if u >= cum}
                self.cum = cum
            self.gap_open = any(e > cum for e in ends)
            if mode == REVOKE_ALL:
                claimed = {u for u in self.nracked}
            elif mode == REVOKE_IN_SPAN:
                claimed = (r if not received else set()) | (set(range(min(n), max(n) + 1)) if n else set())
            else:
                claimed = set()
            revoked = (self.nracked & claimed) - n
            if revoked:
                flags |= REVOKED
        self.sacked |= (r | n) & self.sent
        fresh = (n & self.sent) - self.nracked
        self.nracked |= fresh
        return flags, self.weight(fresh), revoked

    def outputs(self):
        return [self.weight(self.sent), self.weight(self.sacked), self.weight(self.nracked), None, self.acked_bytes,
                len(self.sent), len(self.sacked), len(self.nracked)]


# ---- feeding the Board ----

def feed(board, rows, paths=None):
    """rows: ("data", lo, hi, size) | ("ack", cum, [(lo, hi, nr)], revoke) -> (outputs dict, flags); paths: the
    path of each row (none: all on path 0)."""
    kind, lo, hi, size, bstart, bcount, revoke, blocks = [], [], [], [], [], [], [], []
    for row in rows:
        if row[0] == "data":
            kind.append(0); lo.append(row[1]); hi.append(row[2]); size.append(row[3])
            bstart.append(len(blocks)); bcount.append(0); revoke.append(0)
        else:
            kind.append(1); lo.append(row[1]); hi.append(row[1]); size.append(0)
            bstart.append(len(blocks)); bcount.append(len(row[2])); revoke.append(row[3])
            blocks += row[2]
    n = len(rows)
    out = {name: np.empty(n, np.int64) for name in BOARD_OUTPUTS}
    flags = np.empty(n, np.int32)
    board.feed(np.array(kind, np.int8), np.array(lo, np.int64), np.array(hi, np.int64), np.array(size, np.int64),
               np.array(bstart, np.int64), np.array(bcount, np.int32),
               np.array([b[0] for b in blocks], np.int64), np.array([b[1] for b in blocks], np.int64),
               np.array([b[2] for b in blocks], np.int8), np.array(revoke, np.int8), *out.values(), flags,
               *([] if paths is None else [np.array(paths, np.int64)]))
    return out, flags


def revoked_units(board):
    """{row: set of revoked units} of the last feed."""
    triples = np.asarray(board.revoked()).reshape(-1, 3)
    got = {}
    for row, lo, hi in triples.tolist():
        got.setdefault(row, set()).update(range(lo, hi))
    return got


def check_against_reference(units, rows):
    board, ref = _native.Board(units=units), Reference(units)
    out, flags = feed(board, rows)
    revoked = revoked_units(board)
    for i, row in enumerate(rows):
        if row[0] == "data":
            want_flags, freed = ref.data(*row[1:])
            want_revoked = set()
        else:
            want_flags, freed, want_revoked = ref.ack(*row[1:])
        if ref.gap_open:
            want_flags |= GAP_OPEN
        want = ref.outputs()
        want[3] = freed
        got = [int(out[name][i]) for name in BOARD_OUTPUTS]
        assert got == want, (i, row, dict(zip(BOARD_OUTPUTS, got)), dict(zip(BOARD_OUTPUTS, want)))
        assert int(flags[i]) == want_flags, (i, row, int(flags[i]), want_flags)
        assert revoked.get(i, set()) == want_revoked, (i, row)
    assert board.data_bytes == ref.data_bytes
    return board, out, flags


@st.composite
def event_sequences(draw):
    units = draw(st.booleans())
    received = not units and draw(st.booleans())  # the MPTCP data level: renegable blocks are received units
    start = BASE + draw(st.integers(0, 40))
    rows = []
    for _ in range(draw(st.integers(1, 40))):
        if draw(st.integers(0, 2)) == 0:
            lo = start + draw(st.integers(0, 24))
            hi = lo + 1 if units else lo + draw(st.integers(1, 8))
            rows.append(("data", lo, hi, draw(st.integers(0, 1500))))
        else:
            cum = start + draw(st.integers(-3, 26))
            blocks = []
            for _ in range(draw(st.integers(0, 5))):
                lo = cum + draw(st.integers(-3, 12))
                blocks.append((lo, lo + draw(st.integers(-1, 6)), draw(st.integers(0, 1))))
            modes = [REVOKE_IN_SPAN | BOARD_RECEIVED] if received else [REVOKE_NONE, REVOKE_ALL, REVOKE_IN_SPAN]
            rows.append(("ack", cum, blocks, draw(st.sampled_from(modes))))
    return units, rows


@pytest.mark.slow  # seconds: not in the inner loop (make test-fast)
@settings(max_examples=300, deadline=None)
@given(event_sequences())
def test_core_matches_the_reference(case):
    units, rows = case
    check_against_reference(units, rows)


@settings(max_examples=60, deadline=None)
@given(event_sequences(), st.integers(0, 40), st.booleans())
def test_fork_and_chunking_change_nothing(case, cut, keep_data):
    """Feeding in two calls equals one; a fork with keep_data goes on exactly as the original."""
    units, rows = case
    cut = min(cut, len(rows))
    whole, whole_flags = feed(_native.Board(units=units), rows)
    board = _native.Board(units=units)
    first, first_flags = feed(board, rows[:cut])
    twin = board.fork(True)
    for b in (board, twin):
        second, second_flags = feed(b, rows[cut:])
        for name in BOARD_OUTPUTS:
            assert np.concatenate((first[name], second[name])).tolist() == whole[name].tolist(), name
        assert np.concatenate((first_flags, second_flags)).tolist() == whole_flags.tolist()
    if not keep_data:
        fresh = board.fork(False)
        assert fresh.data_bytes == 0


# ---- named cases ----

def test_tsn_below_the_first_one_seen():
    """A receiver-side capture whose first DATA was lost: lower TSNs arrive after higher ones. They are
    first transmissions, in window, and the cum ack that covers them all empties the RtxQ."""
    rows = [("data", BASE + t, BASE + t + 1, 100) for t in range(5, 10)]
    rows += [("data", BASE + t, BASE + t + 1, 10) for t in range(5)]
    rows += [("ack", BASE + 10, [], REVOKE_ALL)]
    board, out, flags = check_against_reference(True, rows)
    assert out["sack"][9] == 5 * 100 + 5 * 10 and out["units_sack"][9] == 10
    assert not (flags[:10] & (OUT_OF_WINDOW | RETRANSMISSION)).any()
    assert out["sack"][10] == 0 and out["acked"][10] == 550 and board.data_bytes == 550


def test_tsn_window():
    """A TSN more than 2^20 above the cum ack (or, before any ack, making the span wider) is fed nothing."""
    rows = [("data", BASE + TSN_WINDOW, BASE + TSN_WINDOW + 1, 7), ("data", BASE, BASE + 1, 5),
            ("data", BASE + TSN_WINDOW - 1, BASE + TSN_WINDOW, 3), ("ack", BASE + 1, [], REVOKE_NONE),
            ("data", BASE + TSN_WINDOW + 2, BASE + TSN_WINDOW + 3, 9)]
    board, out, flags = check_against_reference(True, rows)
    assert flags.tolist()[:3] == [CHANGED, OUT_OF_WINDOW, CHANGED]
    assert flags[4] & OUT_OF_WINDOW and out["sack"][4] == 10


def test_stale_ack_joins_blocks_only():
    rows = [("data", BASE + t, BASE + t + 1, 10) for t in range(10)]
    rows += [("ack", BASE + 6, [(BASE + 8, BASE + 9, 0)], REVOKE_NONE),
             ("ack", BASE + 3, [(BASE + 7, BASE + 8, 1)], REVOKE_ALL)]
    board, out, flags = check_against_reference(True, rows)
    assert flags[11] & STALE and flags[11] & GAP_OPEN
    assert out["sack"][11] == 40 and out["nr"][11] == 10 and out["freed"][11] == 10


def test_revocation_modes():
    nr_then = [("data", BASE + t, BASE + t + 1, 10) for t in range(10)]
    nr_then.append(("ack", BASE, [(BASE + 2, BASE + 4, 1), (BASE + 6, BASE + 7, 1)], REVOKE_ALL))
    cases = [  # (cum, mode, blocks, revoked)
        # SCTP NR-SACK: every NR-acked TSN at or above the cum ack must be reported again
        (BASE, REVOKE_ALL, [(BASE + 2, BASE + 4, 1)], {BASE + 6}),
        (BASE, REVOKE_ALL, [(BASE + 3, BASE + 4, 0), (BASE + 6, BASE + 7, 1)], {BASE + 2, BASE + 3}),
        (BASE + 3, REVOKE_ALL, [(BASE + 6, BASE + 7, 1)], {BASE + 3}),
        (BASE + 4, REVOKE_ALL, [(BASE + 6, BASE + 7, 1)], set()),
        # SCTP SACK says nothing about NR data
        (BASE, REVOKE_NONE, [], set()),
        # TCP: only inside its R blocks or the span of its NR blocks
        (BASE, REVOKE_IN_SPAN, [(BASE + 2, BASE + 3, 1)], set()),
        (BASE, REVOKE_IN_SPAN, [(BASE + 2, BASE + 3, 1), (BASE + 6, BASE + 7, 1)], {BASE + 3}),
        (BASE, REVOKE_IN_SPAN, [(BASE + 5, BASE + 7, 0)], {BASE + 6}),
        # MPTCP: subflow-acked units are not SACK blocks, so they claim nothing
        (BASE, REVOKE_IN_SPAN | BOARD_RECEIVED, [(BASE + 5, BASE + 7, 0)], set()),
    ]
    for cum, mode, blocks, want in cases:
        rows = nr_then + [("ack", cum, blocks, mode)]
        board, out, flags = check_against_reference(False, rows)
        assert revoked_units(board).get(len(rows) - 1, set()) == want, (cum, mode, blocks)
        assert bool(flags[-1] & REVOKED) == bool(want)
        assert out["units_nr"][-1] == len({2, 3, 6} & set(range(cum - BASE, 10))), "revoked units stay NR-acked"


def test_sixteen_thousand_blocks():
    """One NR-SACK with 8,000 R and 8,000 NR blocks, unsorted, over 32,000 outstanding TSNs."""
    n = 8000
    rows = [("data", BASE + t, BASE + t + 1, 100) for t in range(4 * n)]
    r = [(BASE + 4 * i + 1, BASE + 4 * i + 2, 0) for i in range(n)]
    nr = [(BASE + 4 * i + 3, BASE + 4 * i + 4, 1) for i in range(n)]
    rows.append(("ack", BASE, r[::-1] + nr, REVOKE_ALL))
    rows.append(("ack", BASE, r + nr[1:], REVOKE_ALL))
    board = _native.Board(units=True)
    out, flags = feed(board, rows)  # the reference's per-row totals would be quadratic here
    assert out["units_sacked"][-2] == 2 * n and out["units_nr"][-2] == n and out["freed"][-2] == 100 * n
    assert out["sack"][-1] == 400 * n and out["sacked"][-1] == 200 * n and out["freed"][-1] == 0
    assert flags[-2] == CHANGED | GAP_OPEN and flags[-1] == CHANGED | GAP_OPEN | REVOKED
    assert revoked_units(board) == {len(rows) - 1: {BASE + 3}}


def test_an_ack_telling_nothing_new_on_another_path_is_older():
    """decisions.md 46: an ack of the same cum that adds nothing to what was reported, on another path than
    the last ack that did, may have been sent before it: no revocation. On the same path, or telling news, it
    revokes what it leaves out."""
    data = [("data", BASE + t, BASE + t + 1, 100) for t in range(6)]
    first = ("ack", BASE, [(BASE + 2, BASE + 4, 1)], REVOKE_ALL)  # NR-acks TSNs 2-3
    subset = ("ack", BASE, [(BASE + 2, BASE + 3, 1)], REVOKE_ALL)  # leaves 3 out, tells nothing new
    news = ("ack", BASE, [(BASE + 2, BASE + 3, 1), (BASE + 5, BASE + 6, 1)], REVOKE_ALL)  # leaves 3 out, tells 5
    for path, second, older in [(1, subset, True), (0, subset, False), (1, news, False)]:
        board = _native.Board(units=True)
        rows = data + [first, second]
        out, flags = feed(board, rows, [0] * (len(rows) - 1) + [path])
        assert bool(flags[-1] & OLDER) == older, (path, second)
        assert revoked_units(board).get(len(rows) - 1, set()) == (set() if older else {BASE + 3}), (path, second)
        assert out["units_nr"][-1] == (3 if second is news else 2), "the figures do not depend on it"


# ---- serial numbers ----

def reference_unwrap(values, state=None):
    """core/serial.c's rule: nearest to the highest seen; a far value waits for the next far one; never
    below 0."""
    highest, candidate = state if state else (None, None)
    out, kept = [], []

    def near(ref, v):
        return ref + ((v - ref + (1 << 31)) % (1 << 32)) - (1 << 31)

    for v in values:
        if highest is None:
            highest = (1 << 32) + v
            out.append(highest); kept.append(True)
            continue
        x = near(highest, v)
        if x < 0 or abs(x - highest) > FAR:
            y = near(candidate, v) if candidate is not None else -1
            if y < 0 or abs(y - candidate) > FAR:
                candidate = x if x >= 0 else None
                out.append(x); kept.append(False)
                continue
            x = highest = y
        else:
            highest = max(highest, x)
        candidate = None
        out.append(x); kept.append(True)
    return out, kept, (highest, candidate)


def unwrap(values, state=None):
    serials, kept, state, far = _native.unwrap(np.array(values, np.uint64), state)
    return np.frombuffer(serials, np.int64).tolist(), np.frombuffer(kept, np.bool_).tolist(), state, far


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, (1 << 32) - 1),
                          st.integers(-5000, 5000).map(lambda d: (0xFFFFF000 + d) % (1 << 32)),
                          st.integers(0, 3).map(lambda k: (k << 30) + 17)), max_size=30),
       st.integers(0, 30))
def test_unwrap_matches_the_rule_across_chunks(values, cut):
    want, want_kept, want_state = reference_unwrap(values)
    first = unwrap(values[:cut])
    second = unwrap(values[cut:], first[2])
    assert first[0] + second[0] == want and first[1] + second[1] == want_kept
    if values:
        assert second[2] == want_state or (not values[cut:] and first[2] == want_state)


def test_unwrap_wrap_far_and_jump():
    top = (1 << 32) - 10
    serials, kept, state, (far, first) = unwrap([top, 5, top + 3, 20])
    assert serials == [(1 << 32) + top, (1 << 33) + 5, (1 << 32) + top + 3, (1 << 33) + 20] and all(kept)
    # a stale ack well behind the highest does not drag the reference back: the previous-value rule
    # left the last value out, 1.8 * 2^30 from the stale one
    step = 966367641  # 0.9 * 2^30
    serials, kept, state, _ = unwrap([100, 100 + step, 100, 100 + 2 * step])
    assert all(kept) and serials[3] == (1 << 32) + 100 + 2 * step
    # one far value is left out; a second one near it confirms a real jump
    serials, kept, state, (far, first) = unwrap([1000, 1000 + (3 << 29), 2000, 1000 + (3 << 29), 1001 + (3 << 29)])
    assert kept == [True, False, True, False, True] and (far, first) == (2, 1)
    assert serials[4] == (1 << 32) + 1001 + (3 << 29) and state == (serials[4], None)


def test_a_block_start_near_the_int64_limit_raises_not_reads():
    """bstart + bcount must not wrap: a start far past the blocks is refused, not read from."""
    out = {name: np.empty(1, np.int64) for name in BOARD_OUTPUTS}
    one = lambda v, t=np.int64: np.array([v], t)
    with pytest.raises(ValueError, match="block index out of range"):
        _native.Board().feed(one(1, np.int8), one(0), one(0), one(0), one(np.iinfo(np.int64).max), one(1, np.int32),
                             one(5), one(6), one(0, np.int8), one(0, np.int8), *out.values(), np.empty(1, np.int32))
