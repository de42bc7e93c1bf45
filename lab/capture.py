"""The analyzer on a Linux lab run's sender capture, with the send buffer as the capture shows it.

Linux counts skb overhead against SO_SNDBUF (and doubles it), so the configured size is not the
payload a full buffer holds; B is read from the run itself instead: the median RtxQ at the instants
the sender got EAGAIN (truth_blocking.csv)."""

from pathlib import Path


def sender_entry(pcap, **options):
    """The analyzer's entry for the lab's sender direction (10.0.0.1 -> ...)."""
    from nrsack.analyzer import analyze

    (entry,) = [e for e in analyze(pcap, **options).entries if e.summary["src"].startswith("10.0.0.1:")]
    return entry


def kernel_capacity(out_dir, entry=None):
    """B in payload bytes: the median RtxQ at the sender's EAGAIN instants (None: it never waited)."""
    import numpy as np
    import pandas as pd

    out_dir = Path(out_dir)
    waits = pd.read_csv(out_dir / "truth_blocking.csv")
    if waits.empty:
        return None
    table = (entry or sender_entry(out_dir / "sender.pcap")).rtxq
    at = np.searchsorted(table["time_ns"].to_numpy(), waits.start_s.to_numpy() * 1e9, side="right") - 1
    return int(np.median(table["rtxq_sack_bytes"].to_numpy()[np.maximum(at, 0)]))


def analyzed_at_kernel_capacity(out_dir):
    """The sender's entry analyzed with B = kernel_capacity (the analyzer's own estimate when the
    sender never waited)."""
    pcap = Path(out_dir) / "sender.pcap"
    entry = sender_entry(pcap)
    capacity = kernel_capacity(out_dir, entry)
    return entry if capacity is None else sender_entry(pcap, sndbuf=capacity)
