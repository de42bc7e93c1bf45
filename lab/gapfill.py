"""Does the receiver ack the gap filler at once? Read from a lab run's receiver.pcap.

A gap filler is a DATA chunk whose TSN is the first missing one (cumulative TSN + 1) while higher
TSNs have already arrived: it closes (part of) a gap. RFC 9260 6.7 says the receiver should SACK
immediately then; the alternative is the delayed-ack timer (200 ms by default). For every gap
filler: the time until the receiver's next SACK / NR-SACK, and whether that ack covers it.

    python -m nrsack.lab.gapfill RUN_DIR [RUN_DIR ...]
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from nrsack.analyzer.read import events as E

DATA, SACK, NR_SACK = 0, 3, 16


def gap_filler_acks(receiver_pcap):
    """One row per gap filler: arrival time, TSN offset, delay to the next ack, whether it covers it."""
    ev = E.read_capture(receiver_pcap).ev
    ev = ev[np.isin(ev["chunk"], (DATA, SACK, NR_SACK))]
    rows, pending = [], []
    received, cum, base = set(), None, None
    for t, chunk, seq, ack in zip(ev["time_ns"], ev["chunk"], ev["seq"], ev["ack"]):
        if chunk == DATA:
            if base is None:
                base, cum = int(seq), -1
            tsn = (int(seq) - base) % 2**32
            fills = tsn == cum + 1 and any(x > tsn for x in received)
            received.add(tsn)
            while cum + 1 in received:
                cum += 1
            if fills:
                pending.append((int(t), tsn))
        elif base is not None:
            acked = (int(ack) - base) % 2**32
            for t_fill, tsn in pending:
                rows.append((t_fill / 1e9, tsn, (int(t) - t_fill) / 1e6, acked >= tsn))
            pending = []
    return pd.DataFrame(rows, columns=["time_s", "tsn_offset", "ack_delay_ms", "ack_covers_it"])


def main(run_dirs):
    for run_dir in run_dirs:
        table = gap_filler_acks(Path(run_dir) / "receiver.pcap")
        if table.empty:
            print(f"{run_dir}: no gap filler")
            continue
        d = table.ack_delay_ms
        print(f"{run_dir}: {len(table)} gap fillers; next ack after median {d.median():.3f} ms, "
              f"max {d.max():.3f} ms; covers the filler in {table.ack_covers_it.mean():.0%}")


if __name__ == "__main__":
    main(sys.argv[1:])
