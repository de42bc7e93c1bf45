"""Conformance rules of docs/rules.md, one small pure function per rule ID.

A rule is called for every event of the kinds it names, in frame order per flow, with
(event, state before, state after, context) and yields `Verdict`s; the checker (rules/checker.py)
turns them into findings with the rule's ID, severity, flow and direction. `REGISTRY` maps each ID
to its `Rule`. Adding a rule: one decorated function in the module of its protocol family (sctp,
tcp, mptcp, fsack, general) plus its test vectors; nothing else changes.
"""

from dataclasses import dataclass
from typing import Callable

SEVERITIES = ("error", "warning", "note")  # most severe first


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str          # as in rules.md; a Verdict with note=True is reported as "note"
    kinds: tuple           # event kinds the rule looks at (inputs.KINDS)
    levels: tuple          # sctp, tcp (every TCP connection or MPTCP subflow), mptcp (data level)
    check: Callable
    summary: str           # the spec sentence it enforces (quoted in its docstring)
    name: str              # short name (the function's)


@dataclass(frozen=True)
class Verdict:
    """What a rule reports: the frames that prove it (the breaking frame last) and one sentence."""

    frames: tuple
    message: str
    note: bool = False     # cannot be decided from this capture: reported at severity note


REGISTRY = {}


def rule(rule_id, severity, kinds, levels):
    """Registers the decorated function as rule `rule_id` (its docstring quotes the spec)."""
    assert severity in SEVERITIES

    def register(check):
        assert rule_id not in REGISTRY, rule_id
        # the quoted spec sentence of the docstring: 'NR-03: "..." (more)'
        doc = " ".join((check.__doc__ or "").split())
        quoted = doc.split('"')[1] if doc.count('"') >= 2 else doc
        REGISTRY[rule_id] = Rule(rule_id, severity, tuple(kinds), tuple(levels), check, quoted,
                                 check.__name__.replace("_", " "))
        return check

    return register


def frames(*values):
    """Frame numbers for a Verdict: drops unknowns and repeats, keeps the order (breaking frame last)."""
    out = []
    for value in values:
        if value is not None and value not in out:
            out.append(int(value))
    if len(out) > 1 and out[-1] != values[-1]:
        out.remove(values[-1])
        out.append(values[-1])
    return tuple(out)


# importing the rule modules fills REGISTRY (they import `rule` from here)
from nrsack.analyzer.rules import sctp, tcp, mptcp, fsack, general  # noqa: E402,F401

__all__ = ["REGISTRY", "Rule", "SEVERITIES", "Verdict", "frames", "rule"]
