"""`nrsack analyze` on a capture of many short TCP connections: time and peak memory per flow count.

    python3 bench/bench_many_flows.py [--flows 20000 100000 1000000] [--baseline /root/.pyenv/versions/3.11.7/bin/python3]

Writes, per count, a pcap of that many complete connections (handshake, two data segments and their
acks, FIN exchange and the last ACK: 10 frames; 200 connections open at a time, interleaved) and times `nrsack analyze --format
json` on it in a fresh process (wall seconds, peak RSS). Prints the figures per flow next to the
target (1M flows in under 60 s and 1 GB). A flow's state is released when it ends (pipeline.py,
docs/decisions.md 44), so the memory stays flat in the flow count and the time linear.

--baseline PYTHON runs the same captures, in the same run, through the `nrsack` that interpreter
imports (here the base python3, outside any venv, imports /work/main) and prints the ratios and
whether the JSON is byte for byte the same; --baseline-max-flows skips the baseline above that count
(before release it took ~13 KB a flow: 1M flows ~13 GB).
"""

import argparse
import hashlib
import os
import struct
import subprocess
import sys
import tempfile
import time

from nrsack.generator.pcapfile import PcapWriter

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
            tcp_frame(b, a, 80, sport, irs + 1, isn + 2002, 0x11),
            tcp_frame(a, b, sport, 80, isn + 2002, irs + 2, 0x10)]


def build(path, flows):
    with PcapWriter(path, linktype=101, snaplen=262144) as out:  # raw IP, tcpdump's snap length
        t = 0
        for first in range(0, flows, OPEN_AT_ONCE):
            group = [connection(k) for k in range(first, min(first + OPEN_AT_ONCE, flows))]
            for step in range(len(group[0])):  # the group's connections interleaved, step by step
                for frames in group:
                    frame = frames[step]
                    out.write(1_700_000_000 + t // 1_000_000, t % 1_000_000, frame)
                    t += 10


def measure(path, python=sys.executable):
    """-> (wall s, CPU s, peak RSS MB, digest of the output) of `nrsack analyze --format json path` in
    a fresh `python` (its nrsack: this checkout's, or the baseline's)."""
    code = "import sys; from nrsack.cli import main; sys.argv[0] = 'nrsack'; main()"
    start = time.perf_counter()
    # /usr/bin/time: this child's peak (RUSAGE_CHILDREN's ru_maxrss is the largest child so far)
    proc = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", python, "-c", code, "analyze", "--format", "json", path],
                          check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=os.path.dirname(path))
    wall = time.perf_counter() - start
    user, system, peak_kb = proc.stderr.decode().strip().splitlines()[-1].split()
    return wall, float(user) + float(system), int(peak_kb) / 1024, hashlib.sha256(proc.stdout).hexdigest()


def line(label, flows, size_mb, wall, cpu, peak_mb):
    return (f"{label:>8} {flows} flows ({size_mb} MB): {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak_mb:.0f} MB "
            f"({cpu / flows * 1e6:.0f} us CPU a flow: {cpu / flows * 1e6:.0f} s at 1M flows; target 60 s, 1 GB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flows", type=int, nargs="+", default=[20000, 100000])
    parser.add_argument("--baseline", default=None, metavar="PYTHON",
                        help="an interpreter whose nrsack is the baseline (e.g. one installed from main)")
    parser.add_argument("--baseline-max-flows", type=int, default=100000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for flows in sorted(args.flows):
            path = os.path.join(folder, f"flows-{flows}.pcap")
            build(path, flows)
            size_mb = os.path.getsize(path) >> 20
            wall, cpu, peak_mb, digest = measure(path)
            print(line("this", flows, size_mb, wall, cpu, peak_mb), flush=True)
            if args.baseline and flows <= args.baseline_max_flows:
                base_wall, base_cpu, base_peak, base_digest = measure(path, args.baseline)
                print(line("baseline", flows, size_mb, base_wall, base_cpu, base_peak))
                print(f"{'ratio':>8} {flows} flows: {base_cpu / cpu:.2f}x less CPU, {base_peak / peak_mb:.2f}x less "
                      f"memory; same JSON: {digest == base_digest}", flush=True)
            os.unlink(path)


if __name__ == "__main__":
    main()
