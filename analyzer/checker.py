"""`nrsack check`'s engine: every rule of docs/rules.md over every flow of a capture.

capture -> events and flows (events.py, flows.py) -> the rules' input (rules/inputs.py) -> per flow, in
frame order, state before / after each event (rules/state.py) -> each registered rule of the event's
kind (rules/) -> findings: rule ID, severity, flow, direction, frames (the breaking frame last), message.
"""

from dataclasses import dataclass

import pandas as pd

from nrsack.analyzer import analysis as A, events as E, flows as F
from nrsack.analyzer.rules import REGISTRY, SEVERITIES
from nrsack.analyzer.rules import inputs as I
from nrsack.analyzer.rules import state as S

COLUMNS = ["rule", "severity", "flow", "direction", "frames", "message"]
# the rule levels of each flow protocol (level "" = reader findings, any protocol)
PROTOCOL_LEVELS = {"sctp": {"sctp"}, "tcp": {"tcp"}, "mptcp": {"tcp", "mptcp"}}


def applies(rule, protocol):
    """Whether the rule can fire on a flow of this protocol (GEN-01, level "" only, on every one)."""
    levels = set(rule.levels) - {""}
    return bool(levels & PROTOCOL_LEVELS[protocol]) if levels else True


@dataclass(frozen=True)
class Context:
    """What a rule may know beyond the event and the states: the flow, per sender side the capture's
    vantage (analysis.vantage: the handshake's reply gaps), and per side every address seen."""

    flow: F.Flow
    vantage: list
    addresses: list


def select(rule_ids=None):
    """The registered rules named (all when None); KeyError names an unknown ID."""
    if rule_ids is None:
        return list(REGISTRY.values())
    unknown = [r for r in rule_ids if r not in REGISTRY]
    if unknown:
        raise KeyError(", ".join(unknown))
    return [REGISTRY[r] for r in rule_ids]


def _dispatch(rules):
    table = {}
    for r in rules:
        for kind in r.kinds:
            for level in r.levels:
                table.setdefault((kind, level), []).append(r)
    return table


def _finding(r, verdict, flow_id, direction):
    return {"rule": r.id, "severity": "note" if verdict.note else r.severity, "flow": flow_id,
            "direction": direction, "frames": list(verdict.frames), "message": verdict.message}


def _direction(fi, e):
    if e.kind == I.MALFORMED or e.level == "":
        return f"{fi.flow.endpoints[e.side]} -> {fi.flow.endpoints[1 - e.side]}"
    named = fi.endpoints.get(S.direction_key(e))
    return named or f"{fi.flow.endpoints[e.sender]} -> {fi.flow.endpoints[1 - e.sender]}"


def run_flow(fi, dispatch):
    """Findings of one flow: its events in order, each with the state before and after it."""
    ctx = Context(fi.flow, fi.vantage, fi.addresses)
    state = S.FlowState()
    found = []
    advance, rules_of = S.advance, dispatch.get
    for e in fi.events:
        after = advance(state, e)
        for r in rules_of((e.kind, e.level), ()):
            for verdict in r.check(e, state, after, ctx):
                found.append(_finding(r, verdict, fi.flow.id, _direction(fi, e)))
        state = after
    if fi.events:
        last = fi.events[-1]
        end = I.Event(index=last.index + 1, frame=last.frame, time_ns=last.time_ns, kind=I.END, level=fi.flow.protocol
                      if fi.flow.protocol == "sctp" else "tcp", side=0, sender=0)
        for r in dispatch.get((I.END, end.level), ()):
            found.extend(_finding(r, v, fi.flow.id, "") for v in r.check(end, state, state, ctx))
    return found


def check_capture(cap: E.Capture, rule_ids=None):
    """-> (flows, findings as dicts of COLUMNS) of every selected rule over every flow of a read capture.
    Raises CaptureError when the capture holds no SCTP or TCP flow, KeyError for an unknown rule ID."""
    rules = select(rule_ids)
    dispatch = _dispatch(rules)
    flows, flow_of, side_of = F.assemble(cap)
    if not flows:
        raise E.CaptureError(f"{cap.path}: no SCTP or TCP flows in {cap.frames} frames")
    inputs, orphans = I.flow_inputs(cap, flows, flow_of, side_of, lambda flow, s: A.vantage(flow, s))
    found = []
    for fi in inputs:
        found.extend(run_flow(fi, dispatch))
    for e in orphans:  # reader findings in frames of no flow
        for r in dispatch.get((e.kind, ""), ()):
            found.extend(_finding(r, v, None, "") for v in r.check(e, S.FlowState(), S.FlowState(), None))
    found.sort(key=lambda f: (f["frames"][-1], f["flow"] if f["flow"] is not None else -1, f["rule"]))
    return flows, found


def at_least(findings, severity):
    """The findings at `severity` or more severe."""
    keep = SEVERITIES[: SEVERITIES.index(severity) + 1]
    return [f for f in findings if f["severity"] in keep]


def check(path, rules=None, severity="note") -> pd.DataFrame:
    """Runs every rule of rules.md (or the IDs in `rules`) over the capture at `path`.

    Returns one row per finding: rule, severity, flow (the analyzer's flow id; NA for a frame of no flow),
    direction ("src -> dst" of the data sender), frames (1-based, the breaking frame last), message.
    Raises CaptureError for unusable input (not a capture, damaged, no SCTP or TCP flow) and KeyError for
    an unknown rule ID.
    """
    cap = E.read_capture(path)
    found = at_least(check_capture(cap, rules)[1], severity)
    frame = pd.DataFrame(found, columns=COLUMNS)
    frame["flow"] = frame["flow"].astype("Int64")
    frame["severity"] = frame["severity"].astype(pd.CategoricalDtype(list(SEVERITIES)))
    return frame
