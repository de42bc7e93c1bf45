"""`nrsack check` on NR-SACKs with many gap blocks: the rules must be linear (or n log n) in blocks.

    python3 bench/bench_check_blocks.py [--blocks 8000] [--acks 1] [--baseline main]

Writes an SCTP association whose receiver sends `--acks` NR-SACKs, each with BLOCKS R and BLOCKS NR
gap blocks (every other TSN of 4 * BLOCKS outstanding TSNs: R, NR, R, NR ...; --no-data: without
the DATA chunks, so the check's time is the acks' alone), then times
nrsack.analyzer.check on it in fresh processes: with this tree's rules ("after") and with the rules
and checker of the git revision `--baseline` ("before", default main), the same reader and flows
underneath. Prints wall seconds, findings and the ratio.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from support.hostile import many_blocks_capture  # noqa: E402


def child(path, old_tree):
    import nrsack.analyzer

    if old_tree:  # the baseline's rules and checker first on the package path; the rest stays this tree's
        nrsack.analyzer.__path__.insert(0, old_tree)
    from nrsack.analyzer import check

    start = time.perf_counter()
    findings = check(path)
    print(json.dumps({"wall_s": time.perf_counter() - start, "findings": len(findings),
                      "rules": sorted(set(findings["rule"]))}))


def measure(path, old_tree=""):
    out = subprocess.run([sys.executable, __file__, "--child", path, old_tree], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_tree(rev, folder):
    """The checker and rules of `rev`, extracted next to each other as a package path entry."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "analyzer/rules/checker.py", "analyzer/rules"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return os.path.join(folder, "analyzer")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=8000)
    parser.add_argument("--acks", type=int, default=1)
    parser.add_argument("--baseline", default="main", help="git revision of the 'before' rules ('' to skip)")
    parser.add_argument("--no-data", action="store_true",
                        help="leave the DATA chunks out: the NR-SACK alone (its blocks then cover unsent TSNs)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "blocks.pcap")
        many_blocks_capture(path, args.blocks, args.acks, not args.no_data)
        print(f"capture: {args.acks} NR-SACK(s) of {args.blocks} R + {args.blocks} NR gap blocks, "
              f"{'no' if args.no_data else 4 * args.blocks + 2} DATA chunks, {os.path.getsize(path)} bytes")
        after = measure(path)
        print(f"after  (this tree): {after['wall_s']:.2f} s, {after['findings']} findings {after['rules']}")
        if args.baseline:
            before = measure(path, baseline_tree(args.baseline, folder))
            print(f"before ({args.baseline}): {before['wall_s']:.2f} s, {before['findings']} findings {before['rules']}")
            print(f"ratio before / after: {before['wall_s'] / after['wall_s']:.1f}")


if __name__ == "__main__":
    main()
