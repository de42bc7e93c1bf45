"""nrsack's summary against tcptrace and libpcap's own read loop, on TCP captures of 1, 8, 16 and 1000 flows.

    python3 bench/bench_flows.py [--packets 2000000] [--flows 1,8,16,1000] [--repeat 3] [--keep DIR]
                                 [--baseline NRSACK] [--skip tshark]

For each flow count, writes a capture of interleaved lossy TCP SACK transfers (bench_analyzer.build_capture,
TCP only, snaplen 70: headers whole), then times in the same run, each in a fresh process (CPU time, user
+ system, of the process and its children):
  - nrsack:    `nrsack analyze CAPTURE --format json`, the summary as users run it;
  - tcptrace:  `tcptrace -n -l -r CAPTURE` (Debian package tcptrace): per-connection TCP analysis,
               retransmissions and RTT, no scoreboard;
  - tshark:    `tshark -r CAPTURE -T fields` of the TCP fields the analysis reads (decoding only);
  - pcap loop: bench/pcap_read_loop.c, libpcap's pcap_next_ex over every record, each one touched:
               the limit of any reader built on libpcap;
  - baseline:  --baseline NRSACK, another checkout's `nrsack analyze` (e.g. main's), for a before/after.
--repeat N runs the contenders N times in turn, each one's fastest (CPU) run counts (tshark runs once). Prints one table: packets/s
(CPU), CPU s, and nrsack's CPU as a multiple of tcptrace's and of the loop's (below 1: nrsack is faster).
Speed lives here, never in timed tests. Run it under `nice -n 10` on a shared machine.
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TSHARK_FIELDS = ("frame.number", "frame.time_epoch", "ip.src", "ip.dst", "tcp.srcport", "tcp.dstport", "tcp.seq_raw",
                 "tcp.ack_raw", "tcp.len", "tcp.options.sack_le", "tcp.options.sack_re")


def commands(path, loop, baseline=None, skip=()):
    nrsack = shutil.which("nrsack") or sys.exit("nrsack is not on PATH")
    found = {"nrsack": [nrsack, "analyze", path, "--format", "json"], "pcap loop": [loop, path]}
    if baseline:
        found["baseline"] = [baseline, "analyze", path, "--format", "json"]
    if shutil.which("tcptrace"):
        found["tcptrace"] = ["tcptrace", "-n", "-l", "-r", path]
    if shutil.which("tshark") and "tshark" not in skip:
        found["tshark"] = ["tshark", "-r", path, "-n", "-T", "fields",
                           *(arg for name in TSHARK_FIELDS for arg in ("-e", name))]
    return found


def cpu_seconds(command) -> float:
    """User + system seconds of `command` run to its end (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def build_loop(folder) -> str:
    binary = os.path.join(folder, "pcap_read_loop")
    subprocess.run(["cc", "-O2", "-o", binary, os.path.join(HERE, "pcap_read_loop.c"), "-lpcap"], check=True)
    return binary


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packets", type=int, default=2_000_000)
    parser.add_argument("--flows", default="1,8,16,1000", help="comma list of flow counts")
    parser.add_argument("--repeat", type=int, default=3, help="runs per contender, round robin; the fastest counts")
    parser.add_argument("--keep", default=None, help="folder to keep the captures in")
    parser.add_argument("--baseline", metavar="NRSACK", help="another nrsack command to time beside this one")
    parser.add_argument("--skip", default="", help="comma list of contenders to leave out (tshark)")
    args = parser.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="nrsack-bench-flows-")
    os.makedirs(folder, exist_ok=True)
    loop = build_loop(folder)
    header = (f"{'flows':>6} {'contender':<10} {'packets/s (CPU)':>16} {'CPU s':>7} "
              f"{'nrsack / it (CPU)':>18}")
    table = []
    try:
        for flows in (int(f) for f in args.flows.split(",")):
            path = os.path.join(folder, f"tcp-{flows}.pcap")
            # the capture is written in a child: this process stays small
            out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import bench_analyzer as b;"
                                  "print(b.build_capture(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), tcp_only=True))",
                                  HERE, path, str(args.packets), str(flows)], capture_output=True, text=True, check=True)
            n = int(out.stdout.split()[-1])
            found = commands(path, loop, args.baseline, args.skip.split(","))
            best = {}
            for round_ in range(max(1, args.repeat)):  # round robin: a burst of load hits every contender alike
                for name, command in found.items():
                    if name == "tshark" and round_:  # once: its minutes dwarf the machine's noise
                        continue
                    best[name] = min(best.get(name, float("inf")), cpu_seconds(command))
            for name, cpu in best.items():
                ratio = "" if name == "nrsack" else f"{best['nrsack'] / cpu:.2f}"
                table.append(f"{flows:>6} {name:<10} {n / cpu:16,.0f} {cpu:7.2f} {ratio:>18}")
            if not args.keep:
                os.remove(path)
            print(f"{flows} flows: {n} packets done", file=sys.stderr, flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(folder)
    print(header)
    print("\n".join(table))


if __name__ == "__main__":
    main()
