"""The scoreboard core on NR-SACKs with many gap blocks: sb_ack must be linear (or n log n) in blocks.

    python3 bench/bench_core_blocks.py [--blocks 8000] [--acks 20] [--baseline-python PYTHON]

Feeds the analyzer's Board (core/scoreboard.c) 4 * BLOCKS outstanding TSNs, then `--acks` NR-SACKs,
each with BLOCKS R and BLOCKS NR gap blocks given in reverse order (every other TSN: R, NR, R, NR ...,
so sorting, clipping to `sent`, joining and the revocation walk all see 2 * BLOCKS intervals), and
prints the CPU milliseconds per ack. --baseline-python runs the same in another interpreter whose
nrsack is another tree (e.g. one with the main branch installed), in the same run, for the ratio.
"""

import argparse
import json
import subprocess
import sys
import time

BASE = (1 << 32) + 1000


def child(blocks, acks):
    import numpy as np

    from nrsack.analyzer import _native

    n = 4 * blocks
    board = _native.Board(units=True)
    tsn = BASE + np.arange(n, dtype=np.int64)

    def feed(kind, lo, hi, size, bstart, bcount, blo, bhi, bnr, revoke):
        rows = len(kind)
        outs = [np.empty(rows, np.int64) for _ in range(8)]
        try:  # this tree: a revoke mode per row, int32 flags
            board.feed(kind, lo, hi, size, bstart, bcount, blo, bhi, bnr, revoke, *outs, np.empty(rows, np.int32))
        except TypeError:  # the Board before the core
            board.feed(kind, lo, hi, size, bstart, bcount, blo, bhi, bnr, *outs, np.empty(rows, np.int8))
        return outs

    none = np.empty(0, np.int64)
    feed(np.zeros(n, np.int8), tsn, tsn + 1, np.full(n, 100, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int32),
         none, none, np.empty(0, np.int8), np.zeros(n, np.int8))
    starts = BASE + 4 * np.arange(blocks, dtype=np.int64)[::-1]
    blo = np.concatenate((starts + 1, starts + 3))
    bnr = np.concatenate((np.zeros(blocks, np.int8), np.ones(blocks, np.int8)))
    one = np.ones(1, np.int8)
    start = time.process_time()
    for _ in range(acks):
        outs = feed(one, np.array([BASE], np.int64), np.array([BASE], np.int64), np.zeros(1, np.int64),
                    np.zeros(1, np.int64), np.array([2 * blocks], np.int32), blo, blo + 1, bnr, one)
    elapsed = time.process_time() - start
    return {"ms_per_ack": 1000 * elapsed / acks, "sacked_bytes": int(outs[1][0]), "nr_bytes": int(outs[2][0])}


def measure(python, blocks, acks):
    out = subprocess.run([python, __file__, "--child", "--blocks", str(blocks), "--acks", str(acks)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=8000)
    parser.add_argument("--acks", type=int, default=20)
    parser.add_argument("--baseline-python", default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.blocks, args.acks)))
        return
    after = measure(sys.executable, args.blocks, args.acks)
    print(f"after:  {after['ms_per_ack']:9.2f} ms per NR-SACK of {2 * args.blocks} blocks "
          f"(sacked {after['sacked_bytes']} B, NR-acked {after['nr_bytes']} B)")
    if args.baseline_python:
        before = measure(args.baseline_python, args.blocks, args.acks)
        print(f"before: {before['ms_per_ack']:9.2f} ms per NR-SACK (sacked {before['sacked_bytes']} B, "
              f"NR-acked {before['nr_bytes']} B)")
        print(f"ratio before / after: {before['ms_per_ack'] / after['ms_per_ack']:.1f}x")


if __name__ == "__main__":
    main()
