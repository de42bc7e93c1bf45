"""Simulator speed: model events and packets written per second, against a baseline measured in
the same run (the same packets built and written with plain Scapy + wrpcap).

    python bench/bench_simulator.py [--packets 1000000] [--protocol sctp]
"""

import argparse
import os
import tempfile
import time

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.layers.sctp import SCTP, SCTPChunkData
from scapy.utils import wrpcap

from nrsack.generator.sim.model import DATA, RTX, PathConfig, SimConfig, simulate
from nrsack.generator.sim.truth import Truth
from nrsack.generator.sim.wire import WIRES, payload_bytes, write_pcap


def scapy_baseline(trace, limit, path):
    """What the writer replaces: one Scapy packet object per data frame, then wrpcap."""
    wire = WIRES[trace.config.protocol](trace)
    pkts = []
    for t, kind, p, u, sidx in trace.sender:
        if kind not in (DATA, RTX):
            continue
        if trace.config.protocol in ("sctp", "cmt"):
            pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / SCTP(sport=5001, dport=5002, tag=1)
                   / SCTPChunkData(tsn=(wire.isn + u) % 2**32, unordered=1, beginning=1, ending=1,
                                   data=payload_bytes(1000)))
        else:
            pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2")
                   / TCP(sport=40000, dport=5201, seq=(wire.isn + 1 + u * 1000) % 2**32, flags="PA")
                   / payload_bytes(1000))
        pkt.time = t / 1e9
        pkts.append(pkt)
        if len(pkts) >= limit:
            break
    t0 = time.perf_counter()
    wrpcap(str(path), pkts)
    return len(pkts), time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--packets", type=int, default=1_000_000, help="about this many data packets")
    ap.add_argument("--protocol", default="sctp", choices=["sctp", "cmt", "tcp", "mptcp"])
    ap.add_argument("--baseline", type=int, default=20_000, help="packets for the Scapy baseline")
    args = ap.parse_args()
    paths = 2 if args.protocol in ("cmt", "mptcp") else 1
    cfg = SimConfig(protocol=args.protocol, ack="nrsack", sndbuf=256_000,
                    total_bytes=args.packets * 1000, seed=1,
                    paths=tuple(PathConfig(bandwidth_bps=1e9, delay_s=0.005, loss=0.001)
                                for _ in range(paths)))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        trace = simulate(cfg)
        t1 = time.perf_counter()
        frames = write_pcap(trace, trace.sender, os.path.join(tmp, "sender.pcap"))
        t2 = time.perf_counter()
        Truth(trace).write(__import__("pathlib").Path(tmp), "parquet")
        t3 = time.perf_counter()
        size = os.path.getsize(os.path.join(tmp, "sender.pcap"))
        n_base, t_base = scapy_baseline(trace, args.baseline, os.path.join(tmp, "scapy.pcap"))
    model_s, write_s, truth_s = t1 - t0, t2 - t1, t3 - t2
    print(f"protocol {args.protocol}, {frames} frames ({trace.counters['data_packets']} data, "
          f"{trace.counters['acks']} acks), pcap {size / 1e6:.0f} MB")
    print(f"model:        {model_s:7.2f} s  {frames / model_s:10,.0f} frames/s")
    print(f"pcap writer:  {write_s:7.2f} s  {frames / write_s:10,.0f} packets/s "
          f"({size / write_s / 1e6:.0f} MB/s)")
    print(f"truth files:  {truth_s:7.2f} s")
    print(f"end to end:   {model_s + write_s + truth_s:7.2f} s  "
          f"{frames / (model_s + write_s + truth_s):10,.0f} packets/s")
    print(f"baseline, Scapy wrpcap of {n_base} data packets (objects built beforehand): "
          f"{t_base:.2f} s  {n_base / t_base:10,.0f} packets/s")
    print(f"ratio writer / baseline: {frames / write_s / (n_base / t_base):.1f}x")


if __name__ == "__main__":
    main()
