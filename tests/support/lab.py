"""`nrsack lab run` from the tests, through the real command line."""

import json

from click.testing import CliRunner

from nrsack.cli import main


def lab_run(out, *args):
    """Runs the lab into `out`; its truth.json."""
    result = CliRunner().invoke(main, ["lab", "run", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads((out / "truth.json").read_text())


def sender_entry(pcap, **options):
    """The analyzer's entry for the lab's sender direction (10.0.0.1 -> ...)."""
    from nrsack.analyzer import analyze

    (entry,) = [e for e in analyze(pcap, **options).entries if e.summary["src"].startswith("10.0.0.1:")]
    return entry


def analyzed_at_kernel_capacity(out):
    """The sender's entry analyzed with B as the kernel's buffer shows in the capture: the median
    RtxQ at the instants the sender got EAGAIN (a Linux buffer counts skb overhead, not payload)."""
    import numpy as np
    import pandas as pd

    table = sender_entry(out / "sender.pcap").rtxq
    waits = pd.read_csv(out / "truth_blocking.csv")
    at = np.searchsorted(table["time_ns"].to_numpy(), waits.start_s.to_numpy() * 1e9, side="right") - 1
    capacity = int(np.median(table["rtxq_sack_bytes"].to_numpy()[np.maximum(at, 0)]))
    return sender_entry(out / "sender.pcap", sndbuf=capacity)
