"""What several rule families share: overlapping blocks of two lists, resending acked data."""

from bisect import bisect_left
from itertools import accumulate

from nrsack.analyzer.rules import Verdict, frames
from nrsack.analyzer.rules import inputs as I
from nrsack.analyzer.rules import state as S


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
        hit = S.first_hit(d.nr, e.lo, e.hi)
        if hit is None:
            return []
        (lo, hi), ack_frame, how = (hit[0], hit[1]), hit[2], "NR-acked"
    vantage = ctx.vantage[e.sender]
    why = "" if vantage == "sender" else f"; capture vantage {vantage}: the ack may have crossed it"
    return [Verdict(frames(ack_frame, e.frame), f"{units(lo, hi)} sent again after frame {ack_frame} {how} it{why}",
                    note=vantage != "sender")]


def omitted_in_span(e, before):
    """docs/decisions.md 16: the NR-acked units above the ack that a later, non-stale ack leaves out although
    they lie inside the span of its own NR blocks, or that it reports renegable (SACK block, no NR block).
    Omission outside the span is not revocation: 4 NR-SACK blocks (3 MPTCP NR blocks) fit a header."""
    d = before.direction(e)
    if d.cum is not None and e.cum < d.cum or e.older:
        return []  # a reordered, older ack is not a revocation (decisions.md 46)
    reported = e.nr + (e.r if e.never_renege else ())
    claimed = list(e.r) if not e.never_renege else []
    if reported:
        claimed.append((min(lo for lo, _ in reported), max(hi for _, hi in reported)))
    return S.minus(S.within(S.trim(d.nr, e.cum), claimed), reported)


def revocation_in_room(e, before, units, blocks, ack):
    """TN-03 / MN-03: [a Verdict naming the first revoked range (omitted_in_span)], or []."""
    lost = omitted_in_span(e, before)
    return [Verdict(frames(frame, e.frame), f"{units} {I.display(lo)}-{I.display(hi)}, NR-acked in frame {frame}, are "
                                            f"reported renegable or left out of {blocks} ({ack} {I.display(e.cum)})")
            for lo, hi, frame in lost[:1]]
