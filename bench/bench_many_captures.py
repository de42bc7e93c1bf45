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
import resource
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


def children_cpu():
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(commands):
    """-> (wall s, CPU s of the commands and the processes they waited for, their outputs), run in turn."""
    start, cpu = time.perf_counter(), children_cpu()
    outs = [subprocess.run(command, capture_output=True, text=True, check=True).stdout for command in commands]
    return time.perf_counter() - start, children_cpu() - cpu, outs


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

    commands_s, commands_cpu, alone = timed([[*nrsack, "analyze", path, "--format", "json"] for path in paths])
    serial_s, serial_cpu, [serial] = timed([[*nrsack, "analyze", *paths, "--format", "json"]])
    dask_s, dask_cpu, [spread] = timed([[*nrsack, "analyze", *paths, "--format", "json", "--workers", str(args.workers)]])
    alone = [json.loads(out) for out in alone]
    serial, spread = json.loads(serial)["captures"], json.loads(spread)["captures"]
    same = serial == spread == alone
    packets = args.captures * args.packets
    print(f"{'':28} {'wall s':>8} {'CPU s':>8} {'packets/s':>12}  (wall; CPU: the command's and its workers')")
    for name, seconds, cpu in ((f"{args.captures} commands", commands_s, commands_cpu),
                               ("one by one (one process)", serial_s, serial_cpu),
                               (f"dask, {args.workers} workers", dask_s, dask_cpu)):
        print(f"{name:28} {seconds:8.2f} {cpu:8.2f} {packets / seconds:12,.0f}")
    print(f"dask / one by one: {serial_s / dask_s:.2f}x faster in wall time; / commands: {commands_s / dask_s:.2f}x; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"summaries the same in all three: {same}")
    if not args.keep:
        shutil.rmtree(folder)
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
