"""The send-buffer estimate (no --sndbuf; docs/metrics.md, Estimating B) against the lab's truth, run by run.

    python bench/sndbuf_against_truth.py /work/corpus/manifest.tsv      # a corpus (bench/bench_sndbuf.py's)
    python bench/sndbuf_against_truth.py RUN_DIR ...                     # `nrsack lab run --out` folders

Per run: the truth's b/q and p/q (truth.json b_over_q / p_over_q: the writer blocked on a buffer full of
sent data), the analyzer's, their errors and the verdict; per stack: the share within 0.05 and 0.1, the
runs off by more than 0.2 and the nulls (a null counts as not within, never as wrong)."""

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

from nrsack.analyzer import analyze


def runs(args):
    for arg in map(Path, args):
        if arg.suffix == ".tsv":
            with arg.open() as handle:
                for row in csv.DictReader(handle, delimiter="\t"):
                    if row.get("complete", "1") == "1":
                        yield arg.parent / row["folder"], row["run_id"]
        else:
            yield arg, arg.name


def truth_of(folder):
    t = json.loads((folder / "truth.json").read_text())
    if "app_blocked_s" in t:  # the truth's names since the writer's own waits got theirs: b is a full buffer of sent data
        return t["stack"], t.get("b_over_q"), t.get("p_over_q")
    q = t["q_s"]  # a run from before: b_sent_full_s was that b (and p had no truth for TCP)
    return t["stack"], t["b_sent_full_s"] / q if q else 0.0, None


def estimate_of(folder):
    analysis = analyze(folder / "sender.pcap")
    entry = max(analysis.entries, key=lambda e: e.summary["data_bytes"])
    return entry.summary


def error(truth, got):
    return None if truth is None or got is None else got - truth


def main(args):
    per_stack = defaultdict(list)
    print(f"{'run':58s} {'verdict':11s} {'B':>7s} {'b/q':>6s} {'truth':>6s} {'err':>6s} {'p/q':>6s} {'truth':>6s} {'err':>6s}")
    fmt = lambda x: "  null" if x is None else f"{x:6.3f}"  # noqa: E731
    for folder, name in runs(args):
        try:
            stack, tb, tp = truth_of(folder)
            s = estimate_of(folder)
        except (OSError, KeyError, ValueError) as e:
            print(f"{name:58s} skipped: {e}")
            continue
        eb, ep = error(tb, s["b_over_q"]), error(tp, s["p_over_q"])
        per_stack[stack].append((eb, ep, tb, tp))
        print(f"{name[:58]:58s} {s['sndbuf_verdict']:11s} {s['sndbuf_bytes'] or '-':>7} {fmt(s['b_over_q'])} {fmt(tb)} "
              f"{fmt(eb)} {fmt(s['p_over_q'])} {fmt(tp)} {fmt(ep)}  {s['sndbuf_reason'] or ''}")
    print()
    for stack, rows in sorted(per_stack.items()):
        for k, figure in ((0, "b/q"), (1, "p/q")):
            known = [r for r in rows if r[2 + k] is not None]
            errs = [r[k] for r in known]
            if not known:
                continue
            share = lambda tol: sum(1 for e in errs if e is not None and abs(e) <= tol) / len(known)  # noqa: E731
            wrong = sum(1 for e in errs if e is not None and abs(e) > 0.2)
            nulls = sum(1 for e in errs if e is None)
            print(f"{stack:12s} {figure}: {len(known)} runs, within 0.05 {share(0.05):.0%}, within 0.1 {share(0.1):.0%}, "
                  f"off > 0.2: {wrong}, null: {nulls}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["/work/corpus/manifest.tsv"])
