"""Simulator speed: a transfer of N data packets end to end (model, sender pcap, truth files),
with the compiled path (C event loop + C pcap writer, used automatically for single-path SCTP and
TCP; MPTCP runs the C loop and wire.py's writer) against baselines measured in the same run: the
Python reference model and writer, and the same data packets built and written with plain Scapy +
wrpcap.

    python bench/bench_simulator.py [--packets 1000000] [--protocol sctp|tcp|mptcp] [--subflows 2]
                                    [--out /dev/shm]
    python bench/bench_simulator.py --figure mptcp5-6 [--every 40]

The second form times `nrsack reproduce`'s runs instead: every 40th point of the figure's grid at
its default size (10 MB x 20 seeds), model and truth summary as the sweep does them, on each engine.

Prints wall and CPU seconds (the CPU figure does not suffer from other load on the machine).
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.layers.sctp import SCTP, SCTPChunkData
from scapy.utils import wrpcap

from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate, write_pcap
from nrsack.generator.sim.model import DATA, RTX
from nrsack.generator.sim.truth import Truth
from nrsack.generator.sim.wire import payload_bytes


class Clock:
    def __init__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()

    def lap(self):
        wall, cpu = time.perf_counter(), time.process_time()
        out = (wall - self.wall, cpu - self.cpu)
        self.wall, self.cpu = wall, cpu
        return out


def run(cfg, out_dir, engine):
    clock = Clock()
    trace = simulate(cfg, engine=engine)
    model = clock.lap()
    frames = write_pcap(trace, trace.sender, out_dir / f"sender-{engine}.pcap")
    write = clock.lap()
    Truth(trace).write(out_dir, "parquet")
    truth = clock.lap()
    return trace, frames, model, write, truth


def scapy_baseline(trace, limit, path):
    """What the writer replaces: one Scapy packet object per data frame, then wrpcap."""
    pkts = []
    sctp = trace.config.protocol == "sctp"
    for t, kind, p, u, sidx in trace.sender:
        if kind not in (DATA, RTX):
            continue
        if sctp:
            pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / SCTP(sport=5001, dport=5002, tag=1)
                   / SCTPChunkData(tsn=(trace.isn + u) % 2**32, unordered=1, beginning=1, ending=1,
                                   data=payload_bytes(cfg_payload(trace))))
        else:
            pkt = (Ether() / IP(src="10.0.0.1", dst="10.0.0.2")
                   / TCP(sport=40000, dport=5201, seq=(trace.isn + 1 + u * 1000) % 2**32, flags="PA")
                   / payload_bytes(cfg_payload(trace)))
        pkt.time = t / 1e9
        pkts.append(pkt)
        if len(pkts) >= limit:
            break
    clock = Clock()
    wrpcap(str(path), pkts)
    return len(pkts), clock.lap()


def cfg_payload(trace):
    return trace.config.payload


def line(name, frames, wall_cpu):
    wall, cpu = wall_cpu
    return (f"{name:34s} {wall:7.2f} s wall {cpu:7.2f} s cpu  {frames / wall:11,.0f} pkt/s wall "
            f"{frames / cpu:11,.0f} pkt/s cpu")


def figure_sample(key, every):
    """A sample of a reproduced figure's points through both engines, as sweep.run_point runs them."""
    from nrsack.generator.sim import sweep
    from nrsack.generator.sim.reproduce import FIGURES

    points = FIGURES[key].grid("rfc", 20, False, 10_000_000)
    sample = points[::every]
    print(f"{key}: {len(points):,} runs (10 MB x 20 seeds, rfc); {len(sample)} of them on each engine")
    cpu = {}
    for engine, name in (("c", "compiled model"), ("python", "Python reference model")):
        clock, frames = Clock(), 0
        for pt in sample:
            trace = simulate(sweep.config_of(pt), engine=engine)
            Truth(trace).summary()
            frames += len(trace.sender)
        wall_cpu = clock.lap()
        cpu[engine] = wall_cpu[1]
        print(line(f"  {name} + truth", frames, wall_cpu)
              + f"  (whole figure ~{wall_cpu[1] * len(points) / len(sample) / 60:.1f} cpu min)")
    print(f"ratio (cpu): C/Python {cpu['python'] / cpu['c']:.0f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--packets", type=int, default=1_000_000, help="data packets of the transfer")
    ap.add_argument("--protocol", default="sctp", choices=["sctp", "tcp", "mptcp"])
    ap.add_argument("--profile", default="rfc", choices=["rfc", "ns2", "freebsd"],
                    help="simulator profile (docs/simulator.md): both run on the compiled loop")
    ap.add_argument("--subflows", type=int, default=1, help="MPTCP: subflows, each over such a path")
    ap.add_argument("--figure", help="time a sample of this `nrsack reproduce` figure's runs instead")
    ap.add_argument("--every", type=int, default=40, help="--figure: every this many-th point")
    ap.add_argument("--python-share", type=int, default=10,
                    help="the Python reference runs 1/this of the transfer")
    ap.add_argument("--baseline", type=int, default=20_000, help="packets for the Scapy baseline")
    ap.add_argument("--out", default="/dev/shm" if os.path.isdir("/dev/shm") else None,
                    help="folder for the files (RAM by default: this measures CPU, not the disk)")
    args = ap.parse_args()
    if args.figure:
        figure_sample(args.figure, args.every)
        return

    def config(packets):
        return SimConfig(protocol=args.protocol, ack="nrsack", sndbuf=256_000,
                         total_bytes=packets * 1000, seed=1, profile=args.profile,
                         paths=(PathConfig(bandwidth_bps=1e9, delay_s=0.005, loss=0.001),) * paths)

    paths = args.subflows if args.protocol == "mptcp" else 1

    with tempfile.TemporaryDirectory(dir=args.out) as tmp:
        out = Path(tmp)
        trace, frames, model, write, truth = run(config(args.packets), out, "c")
        size = (out / "sender-c.pcap").stat().st_size
        small = max(args.packets // args.python_share, 1000)
        _, frames_c, model_c, write_c, _ = run(config(small), out, "c")
        _, frames_py, model_py, write_py, _ = run(config(small), out, "python")
        n_base, scapy = scapy_baseline(trace, args.baseline, out / "scapy.pcap")
    end = tuple(a + b + c for a, b, c in zip(model, write, truth))
    writer = "pcap writer (wire.py)" if args.protocol == "mptcp" else "compiled pcap writer"
    print(f"{args.protocol} ({args.profile} profile), NR-SACK, {paths} x 1 Gbit/s, 5 ms, 0.1 % loss, "
          "256 kB send buffer: "
          f"{trace.counters['data_packets']:,} data packets, {frames:,} frames, pcap {size / 1e6:,.0f} MB")
    print(line("compiled model", frames, model))
    print(line(writer, frames, write))
    print(line("truth files (parquet)", frames, truth))
    print(line("end to end", frames, end))
    print(f"baselines, {frames_py:,} frames (1/{args.python_share} of the transfer):")
    print(line("  compiled model", frames_c, model_c))
    print(line("  Python reference model", frames_py, model_py))
    print(line(f"  {writer}", frames_c, write_c))
    print(line("  Python pcap writer (wire.py)", frames_py, write_py))
    print(line("  Scapy objects + wrpcap (data only)", n_base, scapy))
    ratio = lambda a, fa, b, fb: (fa / a[1]) / (fb / b[1])  # noqa: E731  (cpu packet rates)
    if args.protocol == "mptcp":  # one writer (wire.py's) on both paths: only the model differs
        print(f"ratios (cpu): model C/Python {ratio(model_c, frames_c, model_py, frames_py):.0f}x, "
              f"writer/Scapy {ratio(write_py, frames_py, scapy, n_base):.0f}x")
        return
    print(f"ratios (cpu): model C/Python {ratio(model_c, frames_c, model_py, frames_py):.0f}x, "
          f"writer C/Python {ratio(write_c, frames_c, write_py, frames_py):.1f}x, "
          f"writer C/Scapy {ratio(write_c, frames_c, scapy, n_base):.0f}x, "
          f"Python writer/Scapy {ratio(write_py, frames_py, scapy, n_base):.0f}x")


if __name__ == "__main__":
    main()
