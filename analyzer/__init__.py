"""nrsack.analyzer: from a capture of SCTP, CMT-SCTP, TCP or MPTCP traffic to the RtxQ evolution,
send-buffer blocking intervals and the blocking ratio p/q (docs/metrics.md).

    >>> from nrsack.analyzer import analyze
    >>> a = analyze("sample-pcaps/sctp-nrsack-fig4.pcap", sndbuf=8000)
    >>> a.summary[["id", "src", "dst", "p_over_q", "b_over_q"]]
    >>> a.rtxq.plot(x="time_s", y=["rtxq_sack_bytes", "rtxq_nr_bytes"])

The subpackages follow the data, and import only from the ones before them (docs/architecture.md):
read (capture -> events) -> state (flows, levels, the scoreboard per sender direction, the chunked
pipeline) -> results.py (Analysis: pandas DataFrames) -> rules (findings, the checker) -> views (text,
JSON, tables, figures, streamed files, the live table, the commands). _native is their compiled half
(read/_reader.c, state/_levels.c, state/_scoreboard.c over the core in core/).
"""

from nrsack.analyzer.read.events import CaptureError

__all__ = ["Analysis", "CaptureError", "analyze", "check"]


def __getattr__(name):
    # imported on first use: they load pandas, which the summary alone (`nrsack analyze`) does without
    if name in ("Analysis", "analyze"):
        from nrsack.analyzer import results

        return getattr(results, name)
    if name == "check":
        from nrsack.analyzer.rules.checker import check

        return check
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
