"""`nrsack analyze` on a capture of many short TCP connections: time and peak memory per flow count.

    python3 bench/bench_many_flows.py [--flows 20000 100000] [--packets-per-flow 9]

Writes, per count, a pcap of that many complete connections (handshake, two data segments and their
acks, FIN exchange; 200 connections open at a time, interleaved) and times `nrsack analyze --format
json` on it in a fresh process (wall seconds, peak RSS). Prints the figures per flow and a linear
projection to 1M flows, next to the target (1M flows in under 60 s and 1 GB). Per-flow state
is not released yet (not yet): this measures where the analyzer stands.
"""

import argparse
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time

OPEN_AT_ONCE = 200


def tcp_frame(src, dst, sport, dport, seq, ack, flags, payload=b""):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst)
    return ip + tcp


def connection(k):
    """The frames of connection k, A -> B with 2 x 1000 bytes."""
    a = bytes([10, 1 + (k >> 16) % 200, (k >> 8) & 255, k & 255])
    b = bytes([10, 255, 0, 1])
    sport, isn, irs = 1024 + k % 60000, 1000, 5000
    data = b"d" * 1000
    return [tcp_frame(a, b, sport, 80, isn, 0, 0x02), tcp_frame(b, a, 80, sport, irs, isn + 1, 0x12),
            tcp_frame(a, b, sport, 80, isn + 1, irs + 1, 0x10),
            tcp_frame(a, b, sport, 80, isn + 1, irs + 1, 0x18, data),
            tcp_frame(b, a, 80, sport, irs + 1, isn + 1001, 0x10),
            tcp_frame(a, b, sport, 80, isn + 1001, irs + 1, 0x18, data),
            tcp_frame(b, a, 80, sport, irs + 1, isn + 2001, 0x10),
            tcp_frame(a, b, sport, 80, isn + 2001, irs + 1, 0x11),
            tcp_frame(b, a, 80, sport, irs + 1, isn + 2002, 0x11)]


def build(path, flows):
    with open(path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
        t = 0
        for first in range(0, flows, OPEN_AT_ONCE):
            group = [connection(k) for k in range(first, min(first + OPEN_AT_ONCE, flows))]
            for step in range(len(group[0])):  # the group's connections interleaved, step by step
                for frames in group:
                    frame = frames[step]
                    out.write(struct.pack("<IIII", 1_700_000_000 + t // 1_000_000, t % 1_000_000, len(frame),
                                          len(frame)) + frame)
                    t += 10


def measure(path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from nrsack.cli import main; main()", "analyze", "--format", "json", path],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak_kb, before) / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, nargs="+", default=[20000, 100000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for flows in sorted(args.flows):
            path = os.path.join(folder, f"flows-{flows}.pcap")
            build(path, flows)
            wall, peak_mb = measure(path)
            print(f"{flows} flows ({os.path.getsize(path) >> 20} MB): {wall:.1f} s, peak RSS {peak_mb:.0f} MB "
                  f"({wall / flows * 1e6:.0f} us and {peak_mb * 1024 / flows:.1f} KB a flow); "
                  f"projected to 1M flows: {wall / flows * 1e6:.0f} s, {peak_mb / flows * 1e6 / 1024:.1f} GB "
                  f"(target: 60 s, 1 GB)")


if __name__ == "__main__":
    main()
