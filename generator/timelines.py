"""Every timeline of sample-pcaps/, by name, and the function that writes them all."""

from pathlib import Path

from nrsack.generator import (timelines_broken, timelines_cmt, timelines_conformance, timelines_fsack, timelines_mptcp,
                              timelines_sctp, timelines_tcp)
from nrsack.generator.timeline import write_pcap

# Each module lists its timeline factories in TIMELINES; the pcap is named after the timeline.
MODULES = [timelines_sctp, timelines_tcp, timelines_mptcp, timelines_fsack, timelines_cmt, timelines_broken,
           timelines_conformance]


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
