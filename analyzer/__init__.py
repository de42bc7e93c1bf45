"""nrsack.analyzer: from a capture of SCTP, CMT-SCTP, TCP or MPTCP traffic to the RtxQ evolution,
send-buffer blocking intervals and the blocking ratio p/q (../shared/spec/metrics.md).

    >>> from nrsack.analyzer import analyze
    >>> a = analyze("sample-pcaps/sctp-nrsack-fig4.pcap", sndbuf=8000)
    >>> a.summary[["id", "src", "dst", "p_over_q", "b_over_q"]]
    >>> a.rtxq.plot(x="time_s", y=["rtxq_sack_bytes", "rtxq_nr_bytes"])

capture -> events (events.py, compiled reader) -> flows and sender directions (flows.py) ->
scoreboard and figures (analysis.py) -> Analysis (model.py, DataFrames) -> views (views.py, cli.py).
"""

from nrsack.analyzer.model import Analysis, analyze
from nrsack.analyzer.events import CaptureError
from nrsack.analyzer.checker import check

__all__ = ["Analysis", "CaptureError", "analyze", "check"]
