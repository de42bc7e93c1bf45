"""GEN-01, GEN-02 (rules.md): what the reader could not decode, or could only with a repair."""

from nrsack.analyzer.rules import Verdict, rule
from nrsack.analyzer.rules import inputs as I


@rule("GEN-01", "error", kinds=[I.MALFORMED], levels=[""])
def malformed_packet(e, before, after, ctx):
    """GEN-01: "Malformed packet that prevents analysis (truncated chunk, bad lengths); analysis continues with
    the next packet." """
    if e.rule in ("GEN-01", "GEN-01.note"):
        # .note: the reader repaired it (a payload length from the frame) and the analysis stands
        yield Verdict((e.frame,), e.reason, note=e.rule.endswith(".note"))


@rule("GEN-02", "warning", kinds=[I.MALFORMED], levels=[""])
def capture_clock_stepped(e, before, after, ctx):
    """GEN-02: "The capture clock stepped (backwards, or forwards by more than a day, or past 2^63 ns):
    the interval around the step counts as no time." (analyzer-only: decisions.md 30)"""
    if e.rule in ("GEN-02", "GEN-02.note"):
        yield Verdict((e.frame,), e.reason, note=e.rule.endswith(".note"))
