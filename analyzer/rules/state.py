"""The rules' state: what a flow has shown so far, advanced one event at a time by `advance`.

States are immutable: `advance(before, event)` returns a new state, so a rule sees exactly the state
before and after its event. Per sender direction (`Direction`): the highest cumulative ack, the end of
the highest unit sent, the cum ack's last steps. The units some ack reported non-renegable, with the
frame that first NR-acked each, are kept in C (analyzer/rules/_ledger.c NrLedger, fed by checker.py): the
rules read its facts on the event (inputs.Event lost / nr_hit), not intervals. Per flow: the handshake
and the FSACK procedure.
"""

from types import MappingProxyType
from typing import NamedTuple

from nrsack.analyzer.rules import inputs as I

NOTHING = MappingProxyType({})  # the empty mapping states start from (copied on write, never changed)

CUM_HISTORY = 64  # cum ack advances kept to name the frame that acked a unit


# ---- state ----

class Direction(NamedTuple):  # NamedTuple: _replace is several times cheaper than dataclasses.replace
    cum: int = None            # first unit not cum-acked (highest seen)
    cum_frame: int = None
    cum_steps: tuple = ()      # recent (cum, frame) advances, oldest first
    snd_max: int = None        # end of the highest unit sent
    start_seen: bool = False   # the initial sequence number (INIT / SYN) was captured
    last_data_ns: int = None

    def acked_by(self, unit):
        """The frame of the ack that first cum-acked `unit` (as far as the history reaches)."""
        for cum, frame in self.cum_steps:
            if cum > unit:
                return frame
        return self.cum_frame


class Round(NamedTuple):
    """One FSACK procedure: the FSACK-INIT and the FSACK-ACKs that answered it."""

    sender: int
    timestamp: int
    frame: int
    time_ns: int
    answers: tuple = ()        # (source address, frame) of FSACK-ACKs with this timestamp
    heard: bool = False        # the receiver sent anything after the FSACK-INIT


class FlowState(NamedTuple):
    dirs: dict = NOTHING                            # (level, conn, sender) -> Direction
    handshake: dict = NOTHING                       # (conn, kind) -> Event (INIT, INIT-ACK, SYN, SYN-ACK); SCTP conn -1
    fsack_inits: tuple = ()                         # (timestamp, frame) of every FSACK-INIT so far
    round: Round = None
    fsack_path: tuple = (None, None)                # per acking side: (address, frame of the FSACK-COMPLETE)
    fsack_confirmed: tuple = (None, None)           # per data-sender side: (time_ns, frame) of its last FSACK-COMPLETE

    def direction(self, event):
        return self.dirs.get(direction_key(event), EMPTY)

    def first_handshake(self, kind, conn=-1):
        return self.handshake.get((conn, kind))


EMPTY = Direction()


def direction_key(event):
    return event.level, event.conn if event.level == "tcp" else -1, event.sender


def _on_ack(d, e):
    if d.cum is None or e.cum > d.cum:
        d = d._replace(cum=e.cum, cum_frame=e.frame, cum_steps=(d.cum_steps + ((e.cum, e.frame),))[-CUM_HISTORY:])
    return d


def _on_data(d, e):
    changes = dict(last_data_ns=e.time_ns)
    if d.snd_max is None or e.hi > d.snd_max:
        changes["snd_max"] = e.hi
    return d._replace(**changes)


def on_start(d, e):
    """INIT / INIT-ACK / SYN / SYN-ACK: the direction's first unit."""
    if d.snd_max is not None:
        return d
    return Direction(e.cum if d.cum is None else d.cum, d.cum_frame, d.cum_steps, e.hi, True, d.last_data_ns)


def advance(state: FlowState, e: I.Event) -> FlowState:
    """The state after event e."""
    changes = {}
    if state.round is not None and e.side != state.round.sender and not state.round.heard and e.kind != I.MALFORMED:
        changes["round"] = state.round._replace(heard=True)
    if e.kind in (I.DATA, I.ACK, I.INIT, I.INIT_ACK, I.SYN, I.SYN_ACK):
        key = direction_key(e)
        d = state.dirs.get(key, EMPTY)
        step = {I.DATA: _on_data, I.ACK: _on_ack}.get(e.kind, on_start)
        new = step(d, e)
        if new is not d:
            changes["dirs"] = {**state.dirs, key: new}
        if e.kind in (I.INIT, I.INIT_ACK, I.SYN, I.SYN_ACK):
            hs_key = (e.conn if e.level == "tcp" else -1, e.kind)
            if hs_key not in state.handshake:
                changes["handshake"] = {**state.handshake, hs_key: e}
    elif e.kind == I.FSACK_INIT:
        changes["fsack_inits"] = state.fsack_inits + ((e.aux, e.frame),)
        changes["round"] = Round(e.side, e.aux, e.frame, e.time_ns)
    elif e.kind == I.FSACK_ACK:
        r = changes.get("round", state.round)
        if r is not None and r.timestamp == e.aux and e.side != r.sender:
            changes["round"] = r._replace(answers=r.answers + ((e.src, e.frame),))
    elif e.kind == I.FSACK_COMPLETE:
        path = list(state.fsack_path)
        path[1 - e.side] = (e.address, e.frame)
        confirmed = list(state.fsack_confirmed)
        confirmed[e.side] = (e.time_ns, e.frame)
        changes["fsack_path"] = tuple(path)
        changes["fsack_confirmed"] = tuple(confirmed)
    return state._replace(**changes) if changes else state


def advance_quietly(d: Direction, data_hi, last_data_ns, steps) -> Direction:
    """The direction after rows no rule can fire on (checker.py picks them with the NR ledger's facts), applied
    at once. data_hi: the highest end sent
    (None: no data among them), last_data_ns: the time of their last data; steps: the (cum, frame) of
    their acks that moved the cum ack, in order (at most CUM_HISTORY, the last)."""
    if data_hi is None and not steps:
        return d
    cum, cum_frame, cum_steps, snd_max, start_seen, last_ns = d
    if data_hi is not None:
        if snd_max is None or data_hi > snd_max:
            snd_max = data_hi
        last_ns = last_data_ns
    if steps:
        cum, cum_frame = steps[-1]
        cum_steps = (cum_steps + steps)[-CUM_HISTORY:]
    # (built whole: a NamedTuple's _replace costs several times more, once per flow and chunk of a flood)
    return Direction(cum, cum_frame, cum_steps, snd_max, start_seen, last_ns)
