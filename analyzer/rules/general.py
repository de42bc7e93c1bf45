"""GEN-01 (rules.md): what the reader could not decode."""

from nrsack.analyzer.rules import Verdict, rule
from nrsack.analyzer.rules import inputs as I


@rule("GEN-01", "error", kinds=[I.MALFORMED], levels=[""])
def malformed_packet(e, before, after, ctx):
    """GEN-01: "Malformed packet that prevents analysis (truncated chunk, bad lengths); analysis continues with
    the next packet." """
    if e.rule == "GEN-01":
        yield Verdict((e.frame,), e.reason)
