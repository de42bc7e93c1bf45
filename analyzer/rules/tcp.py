"""TCP NR-SACK rules TN-01 .. TN-05 (rules.md; wire-formats.md section 3). They run on every TCP
connection, MPTCP subflows included; units are sequence numbers."""

from nrsack.analyzer.read import events as E
from nrsack.analyzer.rules import Verdict, frames, rule
from nrsack.analyzer.rules import inputs as I
from nrsack.analyzer.rules.common import first_overlap, retransmission, revocation_in_room


def seqs(lo, hi):
    return f"{I.display(lo)}-{I.display(hi)}"


def handshake_flags(state, conn, bit):
    """(SYN and SYN-ACK both carried `bit`, both were captured, their frames) for one connection."""
    syn, syn_ack = state.first_handshake(I.SYN, conn), state.first_handshake(I.SYN_ACK, conn)
    both = bool(syn and syn_ack and syn.flags & bit and syn_ack.flags & bit)
    return both, bool(syn and syn_ack), (syn.frame if syn else None, syn_ack.frame if syn_ack else None)


def without_permission(state, conn):
    """TN-01 on an ack of connection `conn` carrying NR blocks: (rule ID, the handshake's frames, the message
    around the block count, note) when the handshake did not permit them, else None. It reads nothing but
    the handshake and the count, so checker.py applies it to runs of acks at once (NoteRun)."""
    both, captured, hs = handshake_flags(state, conn, E.NR_PERM)
    if both:
        return None
    why = "SYN and SYN-ACK did not both carry NR-SACK-Permitted" if captured else "the handshake was not captured"
    return "TN-01", hs, ("NR-SACK option with ", f" block(s) although {why}"), not captured


@rule("TN-01", "error", kinds=[I.ACK], levels=["tcp"])
def nr_blocks_not_permitted(e, before, after, ctx):
    """TN-01: "A TCP NR-SACK block option appears without NR-SACK-Permitted on both SYN and SYN-ACK (note when
    the handshake is not captured)." """
    broken = without_permission(before, e.conn) if e.wire_nr else None
    if broken:
        _, hs, (head, tail), note = broken
        yield Verdict(frames(*hs, e.frame), f"{head}{len(e.wire_nr)}{tail}", note=note)


@rule("TN-02", "error", kinds=[I.ACK], levels=["tcp"])
def byte_in_sack_and_nr_block(e, before, after, ctx):
    """TN-02: "A byte lies in both a SACK block and an NR-SACK block of the same segment." """
    hit = first_overlap(e.r, e.nr)
    if hit:
        (lo, hi), sack, nr = hit
        yield Verdict((e.frame,), f"bytes {seqs(lo, hi)} lie in SACK block {seqs(*sack)} and NR-SACK block {seqs(*nr)} "
                                  f"of the same segment")


@rule("TN-03", "error", kinds=[I.ACK], levels=["tcp"])
def nr_acked_bytes_revoked(e, before, after, ctx):
    """TN-03: "Revocation of NR-acked bytes (as NR-03)." """
    yield from revocation_in_room(e, before, "bytes", "this segment's NR-SACK blocks", "ack")


def keepalive(e, before):
    """A keep-alive resends the byte below the ack on purpose (RFC 9293 3.8.4)."""
    d = before.direction(e)
    return d.cum is not None and e.hi - e.lo <= 1 and e.lo == d.cum - 1


@rule("TN-04", "warning", kinds=[I.DATA], levels=["tcp"])
def retransmission_after_ack(e, before, after, ctx):
    """TN-04: "Retransmission of bytes after they were NR-acked or cum-acked." """
    if keepalive(e, before):
        return
    yield from retransmission(e, before, ctx, lambda lo, hi: f"bytes {seqs(lo, hi)}",
                             lambda cum: f"cum-acked (ack {I.display(cum)})")


@rule("TN-05", "error", kinds=[I.ACK, I.MALFORMED], levels=["tcp", ""])
def malformed_nr_option(e, before, after, ctx):
    """TN-05: "Malformed NR-SACK option: wrong length, left >= right, a block at or below the ack." """
    if e.kind == I.MALFORMED:
        if e.rule == "TN-05":
            yield Verdict((e.frame,), e.reason)
        return
    for i, ((lo, hi), (left, right)) in enumerate(zip(e.nr, e.wire_nr)):
        if lo >= hi:
            yield Verdict((e.frame,), f"NR-SACK block {i + 1} has left edge {left} >= right edge {right}")
            return
        if lo <= e.cum:
            yield Verdict((e.frame,), f"NR-SACK block {i + 1} ({left}-{right}) is at or below the ack {e.wire_seq}")
            return
