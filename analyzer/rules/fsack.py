"""Fast SACK rules FS-01 .. FS-06 (rules.md; wire-formats.md section 2). FSACK chunks are events of the
association (their `sender` is the side that sent them); acks are checked against the FSACK path."""

from nrsack import constants as C
from nrsack.analyzer.read.events import EXT_FSACK
from nrsack.analyzer.rules import Verdict, frames, rule
from nrsack.analyzer.rules import inputs as I
from nrsack.analyzer.rules.sctp import negotiated

FSACK_EVENTS = [I.FSACK_INIT, I.FSACK_ACK, I.FSACK_COMPLETE]
NAMES = {I.FSACK_INIT: "FSACK-INIT", I.FSACK_ACK: "FSACK-ACK", I.FSACK_COMPLETE: "FSACK-COMPLETE"}
INTERVAL_NS = int(C.FSACK_MAX_UPDATE_INTERVAL_S * 1e9)


@rule("FS-01", "error", kinds=[I.FSACK_ACK], levels=["sctp"])
def unknown_timestamp(e, before, after, ctx):
    """FS-01: "An FSACK-ACK carries a timestamp that no earlier FSACK-INIT of the association carried." """
    if all(ts != e.aux for ts, _ in before.fsack_inits):
        yield Verdict((e.frame,), f"FSACK-ACK timestamp {e.aux} was carried by no earlier FSACK-INIT")


def unanswered_paths(ctx, r):
    """The receiver's addresses that sent no FSACK-ACK for round r."""
    answered = {src for src, _ in r.answers}
    return [a for a in ctx.addresses[1 - r.sender] if a not in answered]


@rule("FS-02", "warning", kinds=[I.FSACK_INIT, I.END], levels=["sctp"])
def too_few_return_paths(e, before, after, ctx):
    """FS-02: "An FSACK-INIT is answered on fewer return paths than the receiver has addresses." Judged when the
    same side starts the next FSACK-INIT, or at the end of the capture if the receiver was heard after it."""
    r = before.round
    if r is None or (e.kind == I.FSACK_INIT and e.side != r.sender) or (e.kind == I.END and not r.heard):
        return
    missing = unanswered_paths(ctx, r)
    if missing:
        answers = [f for _, f in r.answers]
        yield Verdict(frames(r.frame, *answers), f"FSACK-INIT (timestamp {r.timestamp}) answered from {len(r.answers)} "
                                                 f"address(es); no FSACK-ACK from {', '.join(missing)}")


@rule("FS-03", "warning", kinds=[I.FSACK_COMPLETE], levels=["sctp"])
def complete_names_other_path(e, before, after, ctx):
    """FS-03: "FSACK-COMPLETE names a path other than the one whose FSACK-ACK arrived first." """
    r = before.round
    if r is not None and r.answers and r.sender == e.side and r.answers[0][0] != e.address:
        first, frame = r.answers[0]
        yield Verdict(frames(frame, e.frame), f"FSACK-COMPLETE names {e.address}, but the first FSACK-ACK came from {first}")


@rule("FS-04", "error", kinds=[I.ACK], levels=["sctp"])
def ack_off_fsack_path(e, before, after, ctx):
    """FS-04: "After FSACK-COMPLETE, the receiver sends a SACK or NR-SACK on a path other than the FSACK path." """
    path = before.fsack_path[e.side]
    if path is not None and e.src != path[0]:
        address, frame = path
        yield Verdict(frames(frame, e.frame), f"{'NR-SACK' if e.chunk == 0x10 else 'SACK'} sent from {e.src}; the FSACK "
                                              f"path named in frame {frame} is {address}")


@rule("FS-05", "warning", kinds=[I.DATA], levels=["sctp"])
def fsack_path_stale(e, before, after, ctx):
    """FS-05: "During data transfer the FSACK path is not confirmed or updated within the maximum update interval
    (1 s by default)." Raised on the first DATA of each whole interval without an FSACK-COMPLETE."""
    confirmed = before.fsack_confirmed[e.sender]
    last = before.direction(e).last_data_ns
    if confirmed is None or last is None:
        return
    since, frame = confirmed
    overdue = (e.time_ns - since) // INTERVAL_NS
    if overdue >= 1 and overdue > max(0, (last - since) // INTERVAL_NS):
        yield Verdict(frames(frame, e.frame), f"DATA {(e.time_ns - since) / 1e9:.3f} s after the last FSACK-COMPLETE "
                                              f"(frame {frame}); the path must be confirmed every "
                                              f"{C.FSACK_MAX_UPDATE_INTERVAL_S:g} s")


@rule("FS-06", "error", kinds=FSACK_EVENTS, levels=["sctp"])
def fsack_not_negotiated(e, before, after, ctx):
    """FS-06: "FSACK chunks are sent although INIT and INIT-ACK did not both list 0xA0 in Supported Extensions
    (note when the handshake is not captured)." """
    listed, captured, hs = negotiated(before, EXT_FSACK)
    if not listed:
        why = "INIT and INIT-ACK did not both list 0xA0" if captured else "the INIT / INIT-ACK exchange was not captured"
        yield Verdict(frames(*hs, e.frame), f"{NAMES[e.kind]} although {why}", note=not captured)
