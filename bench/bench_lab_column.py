"""CPU of the usrsctp column of `nrsack reproduce`: one run as reproduce makes it (summary only, no
pcaps or truth files) against the same run with every file `nrsack lab run` writes, over figure 7's
buffers at three loss rates, SACK and NR-SACK (18 runs each way).

    python bench/bench_lab_column.py [--bytes 10000000] [--seed 1]

Prints the CPU seconds per run in this process (the parent: truth) and in the stack's children.
"""

import argparse
import resource
import tempfile
import time

from nrsack.lab.runner import run_config
from nrsack.lab.sweep import config_of_point


def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def timed(points, summary_only):
    (own0, child0), t0 = cpu(), time.perf_counter()
    for pt in points:
        with tempfile.TemporaryDirectory(prefix="nrsack-bench-") as tmp:
            run_config(config_of_point(pt), tmp, summary_only=summary_only)
    (own1, child1), n = cpu(), len(points)
    return (own1 - own0) / n, (child1 - child0) / n, (time.perf_counter() - t0) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    base = dict(protocol="sctp", paths=1, bytes=a.bytes, payload=1452, ack_loss=0.0, loss_model="bernoulli",
                burst=2.0, delay_ms=45.0, bandwidth_mbps=100.0, seed=a.seed, profile="usrsctp")
    points = [dict(base, ack=ack, sndbuf=b, loss=x) for b in (8192, 32768, 65536) for x in (0.0, 0.01, 0.1)
              for ack in ("sack", "nrsack")]
    timed(points[:1], True)  # imports and the first child's page cache, outside the figures
    for label, summary_only in (("summary only (reproduce)", True), ("every file (lab run)", False)):
        own, child, wall = timed(points, summary_only)
        print(f"{label}: {own + child:.3f} s CPU a run ({own:.3f} s truth in this process, {child:.3f} s the "
              f"stack's child), wall {wall:.2f} s")


if __name__ == "__main__":
    main()
