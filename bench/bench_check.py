"""Benchmark of `nrsack check` against the analyzer, measured in the same run on the same capture.

    python3 bench/bench_check.py [--packets 200000] [--flows 16]

Writes the analyzer benchmark's capture (bench_analyzer.build_capture: interleaved lossy TCP SACK and
SCTP NR-SACK transfers), then times in fresh processes (wall, CPU, peak RSS):
  - analyzer: nrsack.analyzer.analyze(path) with its summary, RtxQ and blocking tables (the baseline);
  - check:    nrsack.analyzer.check(path), every rule of rules.md.
The checker runs each rule per event in Python; the ratio says what that costs next to the compiled
scoreboard.
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
from bench_analyzer import build_capture  # noqa: E402


def child_analyzer(path):
    from nrsack.analyzer import analyze

    analysis = analyze(path)
    return {"events": len(analysis.capture.ev), "rows": len(analysis.rtxq) + len(analysis.summary)}


def child_check(path):
    from nrsack.analyzer import check

    findings = check(path)
    return {"rows": len(findings), "by_rule": findings.groupby("rule", observed=True).size().to_dict()}


CHILDREN = {"analyzer": child_analyzer, "check": child_check}


def measure(name, path):
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", name, path], capture_output=True, text=True, check=True)
    info = json.loads(out.stdout.strip().splitlines()[-1])
    info["wall_s"] = time.perf_counter() - start
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packets", type=int, default=200_000)
    parser.add_argument("--flows", type=int, default=16)
    parser.add_argument("--child", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, path = args.child
        info = CHILDREN[name](path)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        info["peak_rss_mb"] = usage.ru_maxrss / 1024
        info["cpu_s"] = usage.ru_utime + usage.ru_stime
        print(json.dumps(info))
        return
    folder = tempfile.mkdtemp(prefix="nrsack-bench-check-")
    try:
        path = os.path.join(folder, "bench.pcap")
        n = build_capture(path, args.packets, args.flows)
        print(f"capture: {n} packets, {args.flows} flows (TCP SACK and SCTP NR-SACK, 1% loss)")
        results = {name: measure(name, path) for name in CHILDREN}
        print(f"{'contender':<10} {'wall s':>8} {'CPU s':>8} {'packets/s (CPU)':>16} {'peak RSS MB':>12}")
        for name, r in results.items():
            print(f"{name:<10} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {n / r['cpu_s']:16,.0f} {r['peak_rss_mb']:12.0f}")
        ratio = results["check"]["cpu_s"] / results["analyzer"]["cpu_s"]
        print(f"check / analyzer: {ratio:.1f}x CPU time, "
              f"{results['check']['wall_s'] / results['analyzer']['wall_s']:.1f}x wall time")
        print(f"findings: {results['check']['rows']} {results['check']['by_rule']}")
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
