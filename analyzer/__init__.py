"""nrsack.analyzer: from a capture of SCTP, CMT-SCTP, TCP or MPTCP traffic to the RtxQ evolution,
send-buffer blocking intervals and the blocking ratio p/q (docs/metrics.md).

    >>> from nrsack.analyzer import analyze
    >>> a = analyze("sample-pcaps/sctp-nrsack-fig4.pcap", sndbuf=8000)
    >>> a.summary[["id", "src", "dst", "p_over_q", "b_over_q"]]
    >>> a.rtxq.plot(x="time_s", y=["rtxq_sack_bytes", "rtxq_nr_bytes"])

capture -> events (events.py, compiled reader) -> flows and sender directions (flows.py) ->
scoreboard and figures (analysis.py) -> Analysis (model.py, DataFrames) -> views (views.py, cli.py).
"""

from nrsack.analyzer.events import CaptureError

__all__ = ["Analysis", "CaptureError", "analyze", "check"]


def __getattr__(name):
    # imported on first use: they load pandas, which the summary alone (`nrsack analyze`) does without
    if name in ("Analysis", "analyze"):
        from nrsack.analyzer import model

        return getattr(model, name)
    if name == "check":
        from nrsack.analyzer.checker import check

        return check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
