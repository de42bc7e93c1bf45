"""`nrsack analyze` of many independent captures: one by one against a local Dask cluster.

    python3 bench/bench_many_captures.py [--captures 100] [--packets 100000] [--workers 2] [--keep DIR]

Writes --captures captures of --packets packets each (the bench_analyzer capture: interleaved lossy TCP
SACK and SCTP NR-SACK transfers, 2 to 9 flows, a seed each), then times, wall clock:
  - commands:  one `nrsack analyze CAPTURE --format json` per capture, one after the other (what a
               loop over the files runs);
  - one by one: `nrsack analyze CAPTURE... --format json` (every capture in one process, in turn);
  - dask:      the same with --workers N (a local Dask cluster of N processes, its start-up included);
and checks that the three give the same summary of every capture, byte for byte. Issue 28's
figure: 100 captures of 100k packets on 2 workers against one by one.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def build(folder, captures, packets):
    from bench_analyzer import build_capture

    paths = []
    for i in range(captures):
        path = os.path.join(folder, f"host{i:03d}.pcap")
        build_capture(path, packets, 2 + i % 8, seed=i + 1)
        paths.append(path)
    return paths


def timed(command):
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captures", type=int, default=100)
    parser.add_argument("--packets", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", default=None, help="write the captures here and keep them")
    args = parser.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="nrsack-many-")
    os.makedirs(folder, exist_ok=True)
    paths = build(folder, args.captures, args.packets)
    nrsack = ["nrsack"]  # the one on PATH: run it from the environment that installs this tree
    print(f"{args.captures} captures of {args.packets} packets in {folder}")

    start = time.perf_counter()
    alone = [json.loads(subprocess.run([*nrsack, "analyze", path, "--format", "json"], capture_output=True, text=True,
                                       check=True).stdout) for path in paths]
    commands_s = time.perf_counter() - start
    serial_s, serial = timed([*nrsack, "analyze", *paths, "--format", "json"])
    dask_s, spread = timed([*nrsack, "analyze", *paths, "--format", "json", "--workers", str(args.workers)])
    serial, spread = json.loads(serial)["captures"], json.loads(spread)["captures"]
    same = serial == spread == alone
    packets = args.captures * args.packets
    print(f"{'':28} {'wall s':>8} {'packets/s':>12}")
    for name, seconds in ((f"{args.captures} commands", commands_s), ("one by one (one process)", serial_s),
                          (f"dask, {args.workers} workers", dask_s)):
        print(f"{name:28} {seconds:8.2f} {packets / seconds:12,.0f}")
    print(f"dask / one by one: {serial_s / dask_s:.2f}x faster; / commands: {commands_s / dask_s:.2f}x")
    print(f"summaries the same in all three: {same}")
    if not args.keep:
        shutil.rmtree(folder)
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
