"""The experiment behind docs/reproduction.md's "rfc held against usrsctp": the freebsd profile's
rules added to rfc one at a time, and FreeBSD's stack itself (usrsctp in the lab, no drain, 1500-byte
packets) on the same grid.

    python scripts/freebsd_rules.py [--seeds N] [--bytes B] [--workers W]

The simulated steps run serially on the compiled engine (seconds); the usrsctp runs on a local Dask
cluster, about 2 s of CPU per 2 MB run.
"""

import argparse
import time

import pandas as pd
from ns2_rules import ablation, pivot  # scripts/ is the script's own folder on sys.path

from nrsack.generator.sim import reproduce as R
from nrsack.generator.sim import sweep as sw

LOSSES = (0.0009, 0.002, 0.005, 0.01, 0.02, 0.1)
STEPS = [("rfc", {}),
         ("+ send while flight < cwnd, growth test", dict(send_while_below_cwnd=True,
                                                          grow_when_flight_reached_cwnd=True)),
         ("+ initial cwnd 3, RTO 3 s initial", dict(initial_cwnd_packets=3, rto_initial_s=3.0)),
         ("+ slow start up to 2 packets per SACK", dict(slow_start_limit_packets=2)),
         ("+ cwnd cut to flight + 4 packets before output", dict(max_burst_cwnd=4)),
         ("+ a lost fast retransmission fast-retransmitted again", dict(refast_retransmit=True)),
         ("+ fast recovery's ssthresh floor 2 MTUs", dict(fast_recovery_ssthresh_floor_packets=2)),
         ("+ cwnd counted in MTUs against a flight of chunks", dict(cwnd_mtu_over_chunk_bytes=12)),
         ("+ the RTO's backoff undone by the next ack (= freebsd)", dict(rto_restored_on_ack=True))]


def usrsctp(seeds, nbytes, workers):
    points = R.lab_points(sw.grid(sndbufs=(32768, 65536), losses=LOSSES, seeds=seeds, delay_ms=45.0,
                                  nbytes=nbytes, payload=R.PAYLOAD, profile="rfc"))
    table = sw.gain_table(sw.run(points, workers=workers, task=R.run_point))
    return table.assign(rules="usrsctp 0.9.5 (lab, no drain)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--bytes", type=int, default=10_000_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    t0 = time.perf_counter()
    steps = ablation(STEPS, "freebsd", args.seeds, args.bytes, LOSSES)
    lab = usrsctp(args.seeds, args.bytes, args.workers)
    with pd.option_context("display.width", 250):
        print(pd.concat([steps, pivot(lab)]).to_string())
        print(lab[["sndbuf", "loss", "T_sack_mbps", "gain_pct", "gain_pct_std"]].round(2).to_string(index=False))
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
