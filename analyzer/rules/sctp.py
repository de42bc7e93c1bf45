"""SCTP NR-SACK rules NR-01 .. NR-09 (rules.md; wire-formats.md section 1)."""

from nrsack.analyzer.read.events import EXT_NRSACK
from nrsack.analyzer.rules import Verdict, frames, rule
from nrsack.analyzer.rules import inputs as I
from nrsack.analyzer.rules.common import first_overlap, retransmission, revoked

NR_SACK, SACK = 0x10, 0x03


def tsns(lo, hi):
    """Units [lo, hi) as the papers write TSNs: '15' or '15-17'."""
    return f"{I.display(lo)}" if hi - lo == 1 else f"{I.display(lo)}-{I.display(hi - 1)}"


_LAST_NEGOTIATED = [None, None, None]  # (handshake mapping, ext, answer): states never change their mapping


def negotiated(state, ext):
    """(both INIT and INIT-ACK listed the extension, both were captured, their frames). The last answer is
    kept: an NR-SACK in a flow without a captured handshake asks it on every ack."""
    if _LAST_NEGOTIATED[0] is state.handshake and _LAST_NEGOTIATED[1] == ext:
        return _LAST_NEGOTIATED[2]
    init, init_ack = state.first_handshake(I.INIT), state.first_handshake(I.INIT_ACK)
    listed = bool(init and init_ack and init.flags & ext and init_ack.flags & ext)
    answer = listed, bool(init and init_ack), (init.frame if init else None, init_ack.frame if init_ack else None)
    _LAST_NEGOTIATED[:] = state.handshake, ext, answer
    return answer


def against_handshake(chunk, state):
    """NR-01 / NR-06, which read nothing but the ack's chunk type and cum and the handshake: (rule ID, the
    handshake's frames, the message around the cum, note) when an ack of this chunk type breaks its rule in
    `state`, else None. checker.py applies it to runs of acks at once (NoteRun)."""
    listed, captured, hs = negotiated(state, EXT_NRSACK)
    if chunk == NR_SACK and not listed:
        why = "INIT and INIT-ACK did not both list 0x10" if captured else "the INIT / INIT-ACK exchange was not captured"
        return "NR-01", hs, ("NR-SACK (cum ", f") although {why}"), not captured
    if chunk == SACK and listed:
        return "NR-06", hs, ("SACK (cum ", ") although INIT and INIT-ACK both listed 0x10"), False
    return None


def _negotiation_verdicts(rule_id, e, before):
    broken = against_handshake(e.chunk, before)
    if broken and broken[0] == rule_id:
        _, hs, (head, tail), note = broken
        yield Verdict(frames(*hs, e.frame), f"{head}{I.display(e.cum - 1)}{tail}", note=note)


@rule("NR-01", "error", kinds=[I.ACK], levels=["sctp"])
def nr_sack_not_negotiated(e, before, after, ctx):
    """NR-01: "An NR-SACK chunk is sent in an association where INIT and INIT-ACK did not both list 0x10 in
    Supported Extensions (note when the handshake is not captured)." """
    yield from _negotiation_verdicts("NR-01", e, before)


@rule("NR-02", "error", kinds=[I.ACK], levels=["sctp"])
def tsn_in_r_and_nr_block(e, before, after, ctx):
    """NR-02: "A TSN lies in both an R gap block and an NR gap block of the same NR-SACK." """
    hit = first_overlap(e.r, e.nr)
    if hit:
        (lo, hi), r, nr = hit
        yield Verdict((e.frame,), f"TSN {tsns(lo, hi)} lies in R block {tsns(*r)} and NR block {tsns(*nr)} of the same NR-SACK")


@rule("NR-03", "error", kinds=[I.ACK], levels=["sctp"])
def nr_acked_tsn_revoked(e, before, after, ctx):
    """NR-03: "Revocation: a TSN NR-acked earlier is neither cum-acked nor NR-acked by a later NR-SACK of the
    same direction (compare acks in the order the data receiver sent them; a reordered, older ack is not a
    revocation)." """
    if e.chunk != NR_SACK:
        return
    lost = revoked(e, before)
    if lost:
        count, (lo, hi, frame) = lost
        more = f" (and {count - 1} more range(s))" if count > 1 else ""
        yield Verdict(frames(frame, e.frame), f"TSN {tsns(lo, hi)}, NR-acked in frame {frame}, is neither cum-acked "
                                              f"(cum {I.display(e.cum - 1)}) nor NR-acked by this NR-SACK{more}")


@rule("NR-04", "warning", kinds=[I.DATA], levels=["sctp"])
def retransmission_after_nr_ack(e, before, after, ctx):
    """NR-04: "The data sender retransmits a TSN after it has received an NR-SACK or SACK that NR-acked or
    cum-acked it." """
    yield from retransmission(e, before, ctx, lambda lo, hi: f"TSN {tsns(lo, hi)}",
                             lambda cum: f"cum-acked (cum ack {I.display(cum - 1)})")


def list_problems(blocks, name):
    """NR-05 and NR-08 problems of one block list in wire offsets, as the C plugin reads them."""
    malformed, touching = [], []
    prev_end = 0
    for i, (start, end) in enumerate(blocks):
        if start < 2 or start > end:
            malformed.append(f"{name} block {i + 1} is {start}-{end} (Start must be >= 2 and <= End)")
        elif i and start <= prev_end:
            malformed.append(f"{name} block {i + 1} ({start}-{end}) is not above the previous one (ends {prev_end})")
        elif i and start == prev_end + 1:
            touching.append(f"{name} blocks {i} and {i + 1} touch ({prev_end}, {start}): they should be one block")
        if start <= end:
            prev_end = max(prev_end, end)
    return malformed, touching


def block_lists(e):
    return [(e.wire_r, "R gap" if e.chunk == NR_SACK else "gap"), (e.wire_nr, "NR gap")]


@rule("NR-05", "error", kinds=[I.ACK, I.MALFORMED], levels=["sctp", ""])
def malformed_blocks(e, before, after, ctx):
    """NR-05: "Malformed blocks: Start < 2, Start > End, blocks of one list not ascending or overlapping (a
    repeated block included), or counts that disagree with the chunk length." """
    if e.kind == I.MALFORMED:
        if e.rule == "NR-05":
            yield Verdict((e.frame,), e.reason)
        return
    problems = [p for blocks, name in block_lists(e) for p in list_problems(blocks, name)[0]]
    if problems:
        more = f" ({len(problems) - 1} more)" if len(problems) > 1 else ""
        yield Verdict((e.frame,), problems[0] + more)


@rule("NR-06", "warning", kinds=[I.ACK], levels=["sctp"])
def sack_after_negotiation(e, before, after, ctx):
    """NR-06: "A plain SACK is sent after NR-SACK was negotiated." """
    yield from _negotiation_verdicts("NR-06", e, before)


@rule("NR-07", "note", kinds=[I.ACK], levels=["sctp"])
def cum_ack_backwards(e, before, after, ctx):
    """NR-07: "The cumulative TSN ack moves backwards (reordered or stale ack)." """
    d = before.direction(e)
    if d.cum is not None and e.cum < d.cum:
        yield Verdict(frames(d.cum_frame, e.frame), f"cumulative TSN ack {I.display(e.cum - 1)} is below "
                                                     f"{I.display(d.cum - 1)} of frame {d.cum_frame}")


@rule("NR-08", "warning", kinds=[I.ACK], levels=["sctp"])
def touching_blocks(e, before, after, ctx):
    """NR-08: "Two blocks of one list touch (End + 1 = next Start): legal to decode, but should have been one
    block." """
    problems = [p for blocks, name in block_lists(e) for p in list_problems(blocks, name)[1]]
    if problems:
        yield Verdict((e.frame,), problems[0])


def beyond_sent(e, before):
    """(highest unit acked, highest sent) when the ack covers units above the highest sent; else None."""
    d = before.direction(e)
    top = max([e.cum] + [hi for _, hi in e.r + e.nr])
    if d.snd_max is None or top > d.snd_max:
        return top, d.snd_max
    return None


def data_may_be_missing(before, e):
    """The capture may have missed data of this direction: its start (INIT / SYN) was not captured."""
    return not before.direction(e).start_seen


@rule("NR-09", "error", kinds=[I.ACK], levels=["sctp"])
def ack_of_unsent_tsn(e, before, after, ctx):
    """NR-09: "An ack (cum, R or NR block) covers a TSN that was never sent (note instead when the capture may
    have missed data, e.g. it starts mid-association)." """
    over = beyond_sent(e, before)
    if over:
        top, sent = over
        seen = f"the highest TSN sent is {I.display(sent - 1)}" if sent is not None else "no DATA was captured"
        yield Verdict((e.frame,), f"ack covers TSN {I.display(top - 1)} but {seen}", note=data_may_be_missing(before, e))
