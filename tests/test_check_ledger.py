"""The checker's NR ledger (analyzer/rules/_ledger.c NrLedger): the NR-acked pieces of one direction, each with
the frame that first NR-acked it, and the per-row facts the revocation and retransmission rules read."""

import numpy as np

from nrsack.analyzer import _native

DATA, ACK, START = 0, 1, 2


def feed(ledger, rows, never_renege=False, in_span=False):
    """rows: (kind, lo, hi, cum, frame, [(lo, hi, nr), ...]) -> per row (count, lo, hi, frame, r_and_nr)."""
    blocks = [b for row in rows for b in row[5]]
    counts = np.array([len(row[5]) for row in rows], np.int64)
    column = lambda k, dtype: np.array([row[k] for row in rows], dtype)
    facts = np.empty((len(rows), 5), np.int64)
    ledger.feed(column(0, np.int8), column(1, np.int64), column(2, np.int64), column(3, np.int64),
                column(4, np.int64), np.cumsum(counts) - counts, counts,
                np.array([b[0] for b in blocks], np.int64), np.array([b[1] for b in blocks], np.int64),
                np.array([b[2] for b in blocks], np.int8), facts, never_renege, in_span)
    return [tuple(f) for f in facts.tolist()]


def test_pieces_keep_their_frame_and_touching_blocks_stay_apart():
    ledger = _native.NrLedger()
    facts = feed(ledger, [(DATA, 100, 110, 0, 1, []),
                          (ACK, 0, 0, 100, 5, [(102, 104, 1), (104, 106, 1)]),
                          (ACK, 0, 0, 100, 6, [(103, 108, 1)])])
    assert facts[1][0] == 0  # nothing was NR-acked before the first NR-SACK
    # the second leaves 102 and 105 out (SCTP: every NR-acked TSN above the cum must be repeated)
    assert facts[2][:4] == (1, 102, 103, 5)
    assert ledger.pieces() == [(102, 104, 5), (104, 106, 5), (106, 108, 6)]


def test_revocation_counts_ranges_and_data_names_the_nr_ack():
    ledger = _native.NrLedger()
    feed(ledger, [(DATA, 100, 110, 0, 1, []), (ACK, 0, 0, 100, 5, [(102, 104, 1), (104, 106, 1)])])
    facts = feed(ledger, [(ACK, 0, 0, 100, 7, [(103, 105, 1)]), (DATA, 105, 107, 0, 8, []),
                          (ACK, 0, 0, 105, 9, [(105, 106, 1)]), (DATA, 103, 104, 0, 10, [])])
    assert facts[0][:4] == (2, 102, 103, 5)   # 102 and 105 left out: two ranges, the first named
    assert facts[1][:4] == (1, 105, 106, 5)   # resent over NR-acked 105, NR-acked in frame 5
    assert facts[2][0] == 0                   # cum 105 and 105 repeated: nothing left out
    assert facts[3][0] == 0                   # 103 lies below the cum ack now: no longer a piece
    assert ledger.pieces() == [(105, 106, 5)]


def test_blocks_are_clipped_to_what_was_sent_and_to_the_cum_ack():
    ledger = _native.NrLedger()
    feed(ledger, [(START, 100, 100, 100, 1, []), (DATA, 100, 110, 0, 2, []),
                  (ACK, 0, 0, 103, 3, [(101, 105, 1), (108, 120, 1)])])
    assert ledger.pieces() == [(103, 105, 3), (108, 110, 3)]


def test_before_the_handshake_or_data_blocks_are_not_clipped_above():
    ledger = _native.NrLedger()
    feed(ledger, [(ACK, 0, 0, 100, 3, [(102, 104, 1)])])
    assert ledger.pieces() == [(102, 104, 3)]
    started = _native.NrLedger()
    feed(started, [(START, 100, 100, 100, 1, []), (ACK, 0, 0, 100, 3, [(102, 104, 1)])])
    assert started.pieces() == []  # the handshake says nothing was sent yet


def test_in_span_reading_leaves_out_only_units_inside_the_nr_span_or_reported_renegable():
    ledger = _native.NrLedger()
    feed(ledger, [(DATA, 100, 200, 0, 1, []), (ACK, 0, 0, 100, 2, [(110, 120, 1), (150, 160, 1)])], in_span=True)
    # NR span 105-130 covers 110-120 without repeating it; 150-160 lies outside the span: not revoked
    facts = feed(ledger, [(ACK, 0, 0, 100, 3, [(105, 108, 1), (125, 130, 1)])], in_span=True)
    assert facts[0][:4] == (1, 110, 120, 2)
    # reported renegable (a SACK block over NR-acked units) is revocation too
    facts = feed(ledger, [(ACK, 0, 0, 100, 4, [(150, 155, 0)])], in_span=True)
    assert facts[0][:4] == (1, 150, 155, 2)
    # a never-renege receiver's SACK blocks are NR: repeating them is no revocation
    facts = feed(ledger, [(ACK, 0, 0, 100, 5, [(150, 160, 0), (105, 130, 0)])], never_renege=True, in_span=True)
    assert facts[0][0] == 0
    assert ledger.pieces() == [(105, 108, 3), (108, 110, 5), (110, 120, 2), (120, 125, 5), (125, 130, 3), (150, 160, 2)]


def test_a_unit_in_an_r_and_an_nr_block():
    ledger = _native.NrLedger()
    facts = feed(ledger, [(DATA, 100, 110, 0, 1, []), (ACK, 0, 0, 100, 2, [(102, 104, 0), (103, 105, 1)]),
                          (ACK, 0, 0, 100, 3, [(102, 104, 0), (104, 105, 1)])])
    assert facts[1][4] == 1 and facts[2][4] == 0


def test_bad_block_indices_raise():
    ledger = _native.NrLedger()
    facts = np.empty((1, 5), np.int64)
    one = lambda v, t=np.int64: np.array([v], t)
    try:
        ledger.feed(one(1, np.int8), one(0), one(0), one(100), one(1), one(0), one(3), one(1), one(2), one(1, np.int8),
                    facts, False, False)
    except ValueError as error:
        assert "block index out of range" in str(error)
    else:
        raise AssertionError("no error")


class UnitModel:
    """The ledger unit by unit: each NR-acked unit above the cum ack tagged with (frame, block) of the ack block
    that first NR-acked it; a piece is a run of consecutive units of one tag."""

    def __init__(self):
        self.cum = self.snd_max = None
        self.tag = {}
        self.blocks = 0

    @staticmethod
    def runs(units, tag):
        out = []
        for u in sorted(units):
            if out and out[-1][1] == u and tag[u] == tag[u - 1]:
                out[-1][1] = u + 1
            else:
                out.append([u, u + 1])
        return [(lo, hi, tag[lo][0]) for lo, hi in out]

    def pieces(self):
        return self.runs(self.tag, self.tag)

    def ack(self, cum, blocks, frame, never_renege, in_span):
        covered = lambda u, spans: any(lo <= u < hi for lo, hi in spans)
        r = [(lo, hi) for lo, hi, nr in blocks if not nr]
        nr = [(lo, hi) for lo, hi, nr in blocks if nr]
        reported = nr + (r if never_renege else [])
        alive = [u for u in self.tag if u >= cum]
        if in_span:
            claimed = ([] if never_renege else r) + ([(min(lo for lo, _ in reported), max(hi for _, hi in reported))]
                                                      if reported else [])
            left = [u for u in alive if covered(u, claimed) and not covered(u, reported)]
        else:
            left = [u for u in alive if not covered(u, reported)]
        lost = self.runs(left, self.tag)
        both = any(covered(u, nr) for lo, hi in r for u in range(lo, hi))
        facts = (len(lost),) + (lost[0] if lost else (0, 0, -1)) + (int(both),)
        if self.cum is None or cum > self.cum:
            self.cum = cum
            self.tag = {u: t for u, t in self.tag.items() if u >= cum}
        clipped = sorted((max(lo, self.cum), hi if self.snd_max is None else min(hi, self.snd_max)) for lo, hi in reported)
        joined = []
        for lo, hi in clipped:
            if hi <= lo:
                continue
            if joined and lo < joined[-1][1]:
                joined[-1][1] = max(joined[-1][1], hi)
            else:
                joined.append([lo, hi])
        for lo, hi in joined:
            self.blocks += 1
            for u in range(lo, hi):
                self.tag.setdefault(u, (frame, self.blocks))
        return facts

    def data(self, lo, hi):
        hit = [u for u in range(lo, hi) if u in self.tag]
        facts = (0, 0, 0, -1, 0)
        if hit:
            piece = next(p for p in self.pieces() if p[0] <= hit[0] < p[1])
            facts = (1, max(piece[0], lo), min(piece[1], hi), piece[2], 0)
        self.snd_max = hi if self.snd_max is None else max(self.snd_max, hi)
        return facts


def test_the_ledger_equals_a_unit_by_unit_model_on_random_rows():
    import random

    rng = random.Random(7)
    for case in range(300):
        never_renege, in_span = rng.random() < 0.3, rng.random() < 0.5
        ledger, model = _native.NrLedger(), UnitModel()
        if rng.random() < 0.3:
            feed(ledger, [(START, 100, 100, 100, 1, [])])
            model.snd_max, model.cum = 100, 100
        cum = 100
        for chunk in range(3):
            rows, want = [], []
            for k in range(rng.randint(1, 12)):
                frame = 10 + 100 * chunk + k
                if rng.random() < 0.4:
                    lo = rng.randint(95, 140)
                    hi = lo + rng.randint(1, 6)
                    rows.append((DATA, lo, hi, 0, frame, []))
                    want.append(model.data(lo, hi))
                else:
                    cum = max(95, cum + rng.randint(-3, 5))
                    blocks = []
                    for _ in range(rng.randint(0, 5)):
                        lo = rng.randint(cum - 3, cum + 30)
                        blocks.append((lo, lo + rng.randint(-2, 8), int(rng.random() < 0.6)))
                    rows.append((ACK, 0, 0, cum, frame, blocks))
                    want.append(model.ack(cum, blocks, frame, never_renege, in_span))
            assert feed(ledger, rows, never_renege, in_span) == want, (case, chunk, rows)
            assert ledger.pieces() == model.pieces(), (case, chunk)
