"""What several rule families share: overlapping blocks of two lists, resending acked data, revocation."""

from bisect import bisect_left
from itertools import accumulate

from nrsack.analyzer.rules import Verdict, frames
from nrsack.analyzer.rules import inputs as I


def first_overlap(blocks_a, blocks_b):
    """The first unit range in a block of each list: ((lo, hi), block a, block b), or None; the first
    block of list a (in its order) that any block of list b overlaps, with the first such block of b.
    n log n: b sorted by start with the running maximum of its ends answers "does any overlap a"."""
    b_sorted = sorted(b for b in blocks_b if b[1] > b[0])
    starts = [b[0] for b in b_sorted]
    reach = list(accumulate((b[1] for b in b_sorted), max))
    for a in blocks_a:
        k = bisect_left(starts, a[1])  # blocks of b starting before a ends
        if a[1] > a[0] and k and reach[k - 1] > a[0]:
            for b in blocks_b:
                lo, hi = max(a[0], b[0]), min(a[1], b[1])
                if lo < hi:
                    return (lo, hi), a, b
    return None


def retransmission(e, before, ctx, units, cum_words):
    """NR-04 / TN-04 / MN-04 for data event e: [a Verdict] when it resends units an earlier ack cum-acked or
    NR-acked, else []. Strict (the rule's severity) only on captures taken at the data sender
    (docs/decisions.md 17). units(lo, hi) and cum_words(cum) phrase the protocol's numbers."""
    d = before.direction(e)
    if d.cum is not None and e.lo < d.cum:
        (lo, hi), ack_frame, how = (e.lo, min(e.hi, d.cum)), d.acked_by(e.lo), cum_words(d.cum)
    else:
        hit = e.nr_hit  # the NR ledger's fact: the first NR-acked range it overlaps
        if not hit:
            return []
        (lo, hi), ack_frame, how = (hit[0], hit[1]), hit[2], "NR-acked"
    vantage = ctx.vantage[e.sender]
    why = "" if vantage == "sender" else f"; capture vantage {vantage}: the ack may have crossed it"
    return [Verdict(frames(ack_frame, e.frame), f"{units(lo, hi)} sent again after frame {ack_frame} {how} it{why}",
                    note=vantage != "sender")]


def revoked(e, before):
    """(count, first (lo, hi, frame)) of the NR-acked ranges above the ack that it leaves out (the NR ledger's
    fact: SCTP every one, TCP / MPTCP those inside the span of its NR blocks or reported renegable,
    docs/decisions.md 16; omission outside the span is not revocation: 4 NR-SACK blocks, 3 MPTCP NR blocks,
    fit a header), or None for a stale or older ack: a reordered ack is not a revocation (decisions.md 46)."""
    d = before.direction(e)
    if d.cum is not None and e.cum < d.cum or e.older or not e.lost_count:
        return None
    return e.lost_count, e.lost


def revocation_in_room(e, before, units, blocks, ack):
    """TN-03 / MN-03: [a Verdict naming the first revoked range], or []."""
    lost = revoked(e, before)
    if lost is None:
        return []
    lo, hi, frame = lost[1]
    return [Verdict(frames(frame, e.frame), f"{units} {I.display(lo)}-{I.display(hi)}, NR-acked in frame {frame}, are "
                                            f"reported renegable or left out of {blocks} ({ack} {I.display(e.cum)})")]
