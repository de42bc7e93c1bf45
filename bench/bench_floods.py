"""Floods of flows that never end (issue 29): time and peak memory of the analyzer's three ways through them.

    python3 bench/bench_floods.py [--flows 1000000] [--kinds syn,data,unacked] [--commands analyze,parquet,check]
                                  [--max-open-flows N] [--keep DIR]

Writes, with tests/support/hostile.write_flood, a capture of FLOWS TCP flows per kind: "syn" one SYN each
(a SYN flood), "data" a handshake, 100 bytes and their ack, never closed, "unacked" the same with the data
never acked. Then runs, each in a fresh process, `nrsack analyze CAPTURE --format json` (the summary),
`nrsack analyze CAPTURE --stream --format parquet --out DIR` and `nrsack check CAPTURE --format json`
(or those --commands names), and prints wall time, CPU time and peak RSS (getrusage of the child) per kind and command, with the
budget's note (how many flows were released early).
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from support.hostile import FLOOD_KINDS, write_flood  # noqa: E402


def measure(command, out_file):
    """-> (wall s, CPU s, peak RSS MB, exit code) of one command in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(out_file, "wb") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    # ru_maxrss of RUSAGE_CHILDREN is the largest child so far: each command runs in a fresh bench process
    return wall, cpu, after.ru_maxrss / 1024, code


def released_note(out_file):
    try:
        with open(out_file) as handle:
            findings = json.load(handle).get("findings", [])
    except (OSError, ValueError):
        return ""
    notes = [f["message"] for f in findings if "--max-open-flows" in f["message"]]
    return notes[0].split(" being")[0].replace("GEN-01 ", "") if notes else "none released"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", type=int, default=1_000_000)
    parser.add_argument("--kinds", default="syn,unacked")
    parser.add_argument("--commands", default="analyze,parquet,check", help="which of analyze,parquet,check to run")
    parser.add_argument("--max-open-flows", type=int, default=None)
    parser.add_argument("--keep", default=None, help="write the captures and outputs here and keep them")
    parser.add_argument("--one", nargs=3, metavar=("COMMAND", "CAPTURE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # one measurement in a process of its own, so ru_maxrss is that command's alone
        command, capture, out = args.one
        print(json.dumps(measure(json.loads(command), out)))
        return
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(FLOOD_KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)} (known: {', '.join(FLOOD_KINDS)})")
    names = [c for c in args.commands.split(",") if c]
    if set(names) - {"analyze", "parquet", "check"}:
        parser.error(f"unknown commands {sorted(set(names) - {'analyze', 'parquet', 'check'})}")
    folder = args.keep or tempfile.mkdtemp(prefix="nrsack-floods-")
    os.makedirs(folder, exist_ok=True)
    budget = [] if args.max_open_flows is None else ["--max-open-flows", str(args.max_open_flows)]
    nrsack = shutil.which("nrsack") or "nrsack"
    print(f"{'kind':8} {'command':9} {'flows':>9} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}  released")
    try:
        for kind in kinds:
            capture = os.path.join(folder, f"{kind}.pcap")
            write_flood(capture, args.flows, kind)
            commands = {
                "analyze": [nrsack, "analyze", capture, "--format", "json", *budget],
                "parquet": [nrsack, "analyze", capture, "--stream", "--format", "parquet", "--out",
                            os.path.join(folder, f"{kind}-tables"), *budget],
                "check": [nrsack, "check", capture, "--format", "json", *budget],
            }
            for name in names:
                command = commands[name]
                out = os.path.join(folder, f"{kind}-{name}.out")
                child = subprocess.run([sys.executable, __file__, "--one", json.dumps(command), capture, out],
                                       capture_output=True, text=True, check=True)
                wall, cpu, rss, code = json.loads(child.stdout)
                note = released_note(out) if name != "parquet" else ""
                print(f"{kind:8} {name:9} {args.flows:>9} {wall:8.1f} {cpu:8.1f} {rss:8.0f}  "
                      f"{note}{'' if code in (0, 1) else f' (exit {code})'}", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
