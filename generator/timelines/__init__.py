"""The papers' timelines, replayed exactly: every timeline of sample-pcaps/ and the function that
writes them all.

timeline.py turns a Timeline (steps in the papers' notation) into frames and a pcap; notation_sctp.py
and notation_tcp.py read the notation; one module per family of figures (sctp, tcp, mptcp, fsack,
cmt), the deliberately broken vectors (broken) and the conformance vectors (conformance)."""

from pathlib import Path

from . import broken, cmt, conformance, fsack, mptcp, sctp, tcp
from .timeline import write_pcap

# Each module lists its timeline factories in TIMELINES; the pcap is named after the timeline.
MODULES = [sctp, tcp, mptcp, fsack, cmt, broken, conformance]


def all_timelines():
    return [factory() for module in MODULES for factory in module.TIMELINES]


def write_all(out_dir):
    """Write every timeline as OUT_DIR/<subdir>/<name>.pcap; returns the paths written."""
    out_dir = Path(out_dir)
    paths = []
    for timeline in all_timelines():
        subdir = timeline.options.get("subdir", "")
        paths.append(write_pcap(timeline, out_dir / subdir / (timeline.name + ".pcap")))
    return paths
