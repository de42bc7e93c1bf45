"""MPTCP data-level NR-SACK rules MN-01 .. MN-05 (rules.md; wire-formats.md section 4); units are data
sequence numbers."""

from nrsack.analyzer.read import events as E
from nrsack.analyzer.rules import Verdict, frames, rule
from nrsack.analyzer.rules import inputs as I
from nrsack.analyzer.rules.common import retransmission, revocation_in_room
from nrsack.analyzer.rules.tcp import handshake_flags, seqs


def without_permission(state, flow):
    """MN-01 on a DSS carrying NR blocks: (rule ID, the handshake's frames, the message around the block count,
    note) when the initial subflow's handshake did not permit them, else None (checker.py: NoteRun)."""
    both, captured, hs = handshake_flags(state, flow.conns[0], E.MPTCP_NR_CAP)
    if both:
        return None
    why = ("the initial subflow's SYN and SYN-ACK did not both carry NR-SACK-Permitted flag 0x02" if captured
           else "the initial subflow's handshake was not captured")
    return "MN-01", hs, ("DSS flag N with ", f" NR block(s) although {why}"), not captured


@rule("MN-01", "error", kinds=[I.ACK], levels=["mptcp"])
def dss_nr_not_negotiated(e, before, after, ctx):
    """MN-01: "A DSS with flag N appears although the SYN and SYN-ACK of the initial subflow did not both carry
    NR-SACK-Permitted with flag 0x02 (note when the handshake is not captured)." """
    # (flag N with a count of 0 carries no block and is not told apart)
    broken = without_permission(before, ctx.flow) if e.wire_nr else None
    if broken:
        _, hs, (head, tail), note = broken
        yield Verdict(frames(*hs, e.frame), f"{head}{len(e.wire_nr)}{tail}", note=note)


@rule("MN-02", "error", kinds=[I.MALFORMED], levels=["mptcp", ""])
def dss_flag_n_malformed(e, before, after, ctx):
    """MN-02: "DSS flag N without a DATA ACK, or a count that disagrees with the option length." """
    if e.rule == "MN-02":
        yield Verdict((e.frame,), e.reason)


@rule("MN-03", "error", kinds=[I.ACK], levels=["mptcp"])
def nr_acked_data_revoked(e, before, after, ctx):
    """MN-03: "Revocation of NR-acked data-level bytes." """
    yield from revocation_in_room(e, before, "DSNs", "this DSS's NR blocks", "DATA ACK")


@rule("MN-04", "warning", kinds=[I.DATA], levels=["mptcp"])
def data_level_retransmission_after_ack(e, before, after, ctx):
    """MN-04: "Data-level retransmission or reinjection of bytes after they were NR-acked or DATA-ACKed." """
    # (a DATA_FIN alone, sent again on every subflow by Linux, carries no byte: the data level feeds
    # nothing for it, decisions.md 65 and 70)
    yield from retransmission(e, before, ctx, lambda lo, hi: f"DSNs {seqs(lo, hi)}",
                             lambda cum: f"DATA-ACKed (DATA ACK {I.display(cum)})")


@rule("MN-05", "error", kinds=[I.ACK], levels=["mptcp"])
def malformed_mptcp_nr_blocks(e, before, after, ctx):
    """MN-05: "Malformed MPTCP NR blocks: Start >= End, not ascending, overlapping." """
    prev_end = None
    for i, (start, end) in enumerate(e.wire_nr):
        if start >= end:
            yield Verdict((e.frame,), f"NR block {i + 1} has Start {start} >= End {end}")
            return
        if prev_end is not None and start < prev_end:
            yield Verdict((e.frame,), f"NR block {i + 1} ({start}-{end}) is not above the previous one (ends {prev_end})")
            return
        prev_end = end
