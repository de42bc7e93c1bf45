"""The send-buffer corpus (issue 25): lab runs with the stack's truth, and the analyzer's b/q and p/q
without --sndbuf against it.

    python bench/bench_sndbuf.py --out corpus/                     # make what is missing, then report
    python bench/bench_sndbuf.py --out corpus/ --limit 12          # the first 12 runs of the grid
    python bench/bench_sndbuf.py --out corpus/ --stacks usrsctp    # one stack's runs
    python bench/bench_sndbuf.py --out corpus/ --report-only       # today's analyzer on the corpus made
    python bench/bench_sndbuf.py --out corpus/ --retruth           # linux, usrsctp-udp truth again from kept measurements
    python bench/bench_sndbuf.py --out corpus/ --remake-unsettled  # linux runs whose samplers fell behind, made again

One folder per run under OUT/runs/ (sender.pcap, truth.json, the truth CSVs; the receiver's capture
is dropped; sender.json keeps the linux runs' raw measurements) and a line per finished run in OUT/manifest.tsv. linux stacks need root. The grid: linux-tcp
(cubic, bbr, reno; SO_SNDBUF 16 KiB to 1 MiB and none, i.e. autotuned; loss 0-5 %; delay 5-100 ms;
GSO/TSO on and off), linux-mptcp (two subflows), usrsctp (drain on and off), and with --stacks usrsctp-udp
usrsctp with CMT over two paths, NR-SACKs without drain and SACKs with it (24 runs, real time); the order interleaves
the stacks, so any --limit covers each. Runs are sized to take seconds (0.3-2 MB).

The report runs `nrsack analyze --format json` (no --sndbuf) on every sender capture and prints per
run the truth, the estimate and the errors of b/q and p/q, and per stack the share of runs within
0.05 and 0.1 (a null estimate counts as not within and is listed with its reason); the per-run
figures also go to OUT/report.tsv. A linux run whose kernel samples cover less than SETTLED of q
(lab/truth.py sampler_coverage: the machine was too loaded for the sampler, and the writer's waits
outlasted the stack's) has an unsettled truth: it is judged like the others and marked, the stack's
line counts them, and --remake-unsettled makes them again (decisions.md 88).
"""

import argparse
import csv
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path

MANIFEST_COLUMNS = ["run_id", "stack", "cc", "sndbuf", "loss", "delay", "bandwidth", "gso", "seed", "folder",
                    "truth_b_over_q", "truth_p_over_q", "drain", "bytes", "complete"]
STACKS = ("linux-tcp", "linux-mptcp", "usrsctp")
# opt-in (--stacks): usrsctp with CMT over two paths, in real time (root, namespaces)
MORE_STACKS = ("usrsctp-udp",)
TOLERANCES = (0.05, 0.1)
SETTLED = 0.9


def _bytes_for(sndbuf, delay_ms, bandwidth_mbps, loss):
    """A transfer of a few seconds: what the buffer (or the path) lets through in ~5 s, 0.3-2 MB."""
    rtt = 2 * delay_ms / 1e3 + 0.002
    window = sndbuf if sndbuf else 4 << 20
    rate = min(window / rtt, bandwidth_mbps * 1e6 / 8) * (1 - 5 * loss)
    return int(min(max(rate * 5, 300_000), 2_000_000) // 1000 * 1000)


def grid():
    """[(run_id, LabConfig)], the stacks interleaved."""
    from nrsack.lab.config import LabConfig

    per_stack = {s: [] for s in STACKS}
    losses, delays, bandwidths = (0.0, 0.01, 0.02, 0.05), (5, 20, 50, 100), (20, 50, 10)
    tcp = list(itertools.product(("cubic", "bbr", "reno"), (16384, 32768, 65536, 131072, 262144, 1048576, 0),
                                 (True, False)))
    for rep in range(2):  # each (cc, sndbuf, gso) twice, at other loss and delay
        for i, (cc, sndbuf, gso) in enumerate(tcp):
            k = i + rep * len(tcp)
            loss, delay, bw = losses[(i + rep) % 4], delays[(i // 4 + 2 * rep) % 4], bandwidths[k % 3]
            cfg = LabConfig(stack="linux-tcp", cc=cc, sndbuf=sndbuf, gso=gso, loss=loss, delay_ms=delay,
                            bandwidth_mbps=bw, message=1448, seed=k + 1, timeout_s=90,
                            bytes=_bytes_for(sndbuf, delay, bw, loss))
            per_stack["linux-tcp"].append(cfg)
    for i, (sndbuf, loss, delays2) in enumerate(itertools.product((32768, 65536, 262144, 0), (0.0, 0.01, 0.03),
                                                                  ((10, 10), (10, 30)))):
        if i % 3 == 2:  # 16 of the 24
            continue
        cc, bw = ("cubic", "bbr")[i % 2], 20
        cfg = LabConfig(stack="linux-mptcp", cc=cc, sndbuf=sndbuf, gso=bool(i % 4 < 2), loss=loss,
                        delay_ms=delays2[0], bandwidth_mbps=bw, more_paths=((loss, delays2[1], bw),), message=1448,
                        seed=i + 1, timeout_s=90, bytes=_bytes_for(2 * sndbuf if sndbuf else 0, max(delays2), bw, loss))
        per_stack["linux-mptcp"].append(cfg)
    for i, (drain, sndbuf, loss) in enumerate(itertools.product((True, False), (16384, 32768, 65536, 262144),
                                                                (0.0, 0.01, 0.03))):
        delay = (5, 20, 50)[i % 3]
        cfg = LabConfig(stack="usrsctp", drain=drain, sndbuf=sndbuf, loss=loss, delay_ms=delay, bandwidth_mbps=20,
                        seed=i + 1, timeout_s=90, bytes=min(_bytes_for(sndbuf, delay, 20, loss), 1_000_000))
        per_stack["usrsctp"].append(cfg)
    per_stack["usrsctp-udp"] = []
    for i, (ack, sndbuf, loss, delays2) in enumerate(itertools.product(("nrsack", "sack"), (16384, 65536, 262144),
                                                                       (0.0, 0.01), ((10, 10), (10, 30)))):
        cfg = LabConfig(stack="usrsctp-udp", ack=ack, drain=ack == "sack", sndbuf=sndbuf, loss=loss,
                        delay_ms=delays2[0], bandwidth_mbps=20, more_paths=((loss, delays2[1], 10),), seed=i + 1,
                        timeout_s=90, bytes=min(_bytes_for(sndbuf, max(delays2), 30, loss), 1_000_000))
        per_stack["usrsctp-udp"].append(cfg)
    order = [cfg for group in itertools.zip_longest(*per_stack.values()) for cfg in group if cfg is not None]
    return [(run_id(cfg), cfg) for cfg in order]


def run_id(cfg):
    variant = (f"{cfg.cc or 'default'}-{'gso' if cfg.gso else 'nogso'}" if cfg.stack.startswith("linux")
               else ("drain" if cfg.drain else "nodrain"))
    if cfg.stack == "usrsctp-udp":
        variant = f"{cfg.ack}-{variant}"
    delays = "_".join(f"{p[1]:g}" for p in cfg.paths())
    return f"{cfg.stack}-{variant}-b{cfg.sndbuf or 'auto'}-l{cfg.loss:g}-d{delays}-s{cfg.seed}"


def read_manifest(out):
    path = out / "manifest.tsv"
    if not path.exists():
        return {}
    with path.open() as f:
        return {row["run_id"]: row for row in csv.DictReader(f, delimiter="\t")}


def append_manifest(out, row):
    path = out / "manifest.tsv"
    new = not path.exists()
    with path.open("a") as f:
        if new:
            f.write("\t".join(MANIFEST_COLUMNS) + "\n")
        f.write("\t".join(str(row[c]) for c in MANIFEST_COLUMNS) + "\n")


def make_run(rid, cfg, out):
    from nrsack.lab.runner import run_config

    folder = out / "runs" / rid
    truth = run_config(cfg, folder)
    for spare in ("receiver.pcap", "lab_config.json", "result.json"):  # sender.json: the raw truth, kept
        (folder / spare).unlink(missing_ok=True)
    row = {"run_id": rid, "stack": cfg.stack, "cc": cfg.cc or "-", "sndbuf": cfg.sndbuf or "auto", "loss": cfg.loss,
           "delay": ",".join(f"{p[1]:g}" for p in cfg.paths()),
           "bandwidth": ",".join(f"{p[2]:g}" for p in cfg.paths()),
           "gso": int(cfg.gso), "seed": cfg.seed, "folder": f"runs/{rid}",
           "truth_b_over_q": _fmt(truth.get("b_over_q")), "truth_p_over_q": _fmt(truth.get("p_over_q")),
           "drain": int(cfg.drain), "bytes": cfg.bytes, "complete": int(bool(truth.get("complete")))}
    append_manifest(out, row)
    return row


def write_manifest(out, manifest):
    (out / "manifest.tsv").unlink(missing_ok=True)
    for m in manifest.values():
        append_manifest(out, m)


def coverage(out, m, truth):
    """The truth's sampler coverage (linux stacks; None for the others, whose truth is not sampled);
    runs made before truth.json carried it: from the kept samples."""
    if not m["stack"].startswith("linux"):
        return None
    if truth.get("sampler_coverage") is not None:
        return truth["sampler_coverage"]
    import pandas as pd
    from nrsack.lab.truth import sampler_coverage

    folder = out / m["folder"]
    samples = folder / ("truth_mptcp_info.csv" if m["stack"] == "linux-mptcp" else "truth_tcp_info.csv")
    measured = json.loads((folder / "sender.json").read_text())
    end = truth["q_s"] + measured["start"]
    return sampler_coverage(pd.read_csv(samples).time_s.to_numpy(), measured["start"], end)


def remake_unsettled(out, configs, tries=3):
    """Make again (same configuration and seed) every run whose truth is unsettled, up to `tries` times."""
    import shutil
    from nrsack.lab.runner import LabError

    manifest = read_manifest(out)
    for rid, m in list(manifest.items()):
        for attempt in range(tries):
            c = coverage(out, m, json.loads((out / m["folder"] / "truth.json").read_text()))
            if c is None or c >= SETTLED or rid not in configs:
                break
            print(f"{rid}: sampler covered {c:.0%} of q; made again ({attempt + 1}/{tries})", flush=True)
            folder = out / m["folder"]
            if folder.is_symlink():
                folder.unlink()
            else:
                shutil.rmtree(folder)
            del manifest[rid]
            write_manifest(out, manifest)
            try:
                m = make_run(rid, configs[rid], out)
            except LabError as e:
                print(f"{rid}: failed: {e}", flush=True)
                break
            manifest = read_manifest(out)


def retruth(out, manifest, configs):
    """truth.json of the runs in real namespaces (linux-*, usrsctp-udp) again from the measurements kept
    (sender.json, drops*.json, truth_blocking.csv, sender.pcap) with today's lab rules; the manifest's truth
    columns follow."""
    from nrsack.lab import usrsctp_udp
    from nrsack.lab.truth import tcp_summary

    for rid, m in manifest.items():
        folder = out / m["folder"]
        if rid not in configs or not (folder / "sender.json").exists():
            continue
        measured = json.loads((folder / "sender.json").read_text())
        measured["paths"] = [json.loads(f.read_text()) for f in sorted(folder.glob("drops*.json"))]
        cfg = configs[rid]
        truth = (usrsctp_udp.summary if cfg.stack == "usrsctp-udp" else tcp_summary)(cfg, measured, folder)
        m["truth_b_over_q"], m["truth_p_over_q"] = _fmt(truth.get("b_over_q")), _fmt(truth.get("p_over_q"))
    write_manifest(out, manifest)


def _fmt(x):
    return "null" if x is None else f"{x:.4f}"


def analyze(pcap):
    """The analyzer's summary of the lab's sender direction, without --sndbuf; (None, why) on failure."""
    cmd = [sys.executable, "-c", "from nrsack.cli import main; main()", "analyze", "--format", "json", str(pcap)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]
    flows = [f for f in json.loads(done.stdout)["flows"] if str(f.get("src", "")).startswith("10.0.0.1:")]
    return (flows[0], None) if flows else (None, "no flow from 10.0.0.1")


def _reason(flow, key):
    """Why the analyzer gave no figure: a `*_reason` key of its summary, the likeliest first."""
    if flow is None:
        return None
    for k in (f"{key}_reason", "sndbuf_reason", "reason"):
        if flow.get(k):
            return str(flow[k])
    others = [str(v) for k, v in flow.items() if k.endswith("_reason") and v]
    return others[0] if others else "no reason given"


def report(out, manifest):
    rows = []
    print(f"{'run':58} {'truth b/q':>9} {'est b/q':>8} {'err':>6} {'truth p/q':>9} {'est p/q':>8} {'err':>6}  B est / why")
    for rid, m in manifest.items():
        truth = json.loads((out / m["folder"] / "truth.json").read_text())
        covered = coverage(out, m, truth)
        flow, failed = analyze(out / m["folder"] / "sender.pcap")
        row = {"run_id": rid, "stack": m["stack"], "unsettled": covered is not None and covered < SETTLED}
        cells = []
        for key in ("b_over_q", "p_over_q"):
            t = truth.get(key)
            e = flow.get(key) if flow else None
            err = None if t is None or e is None else e - t
            row[key] = (t, e, err)
            row[key + "_why"] = failed if flow is None else (_reason(flow, key.split("_")[0]) if e is None else None)
            cells += [_fmt(t), _fmt(e), "" if err is None else f"{err:+.3f}"]
        buffer = (f"B {flow['sndbuf_bytes']}{' est.' if flow.get('sndbuf_estimated') else ''}"
                  if flow and flow.get("sndbuf_bytes") is not None else f"B {flow and flow.get('sndbuf_verdict')}")
        note = failed or (buffer
                          + (f"; null: {row['b_over_q_why'] or row['p_over_q_why']}"
                             if row["b_over_q"][1] is None or row["p_over_q"][1] is None else ""))
        if row["unsettled"]:
            note += f"; unsettled truth: its samples cover {covered:.0%} of q"
        print(f"{rid:58} {cells[0]:>9} {cells[1]:>8} {cells[2]:>6} {cells[3]:>9} {cells[4]:>8} {cells[5]:>6}  {note}")
        rows.append(row)
    print()
    print(f"{'stack':12} {'runs':>4}  {'b/q <0.05':>9} {'<0.1':>6} {'>0.2':>5} {'null':>4}  {'p/q <0.05':>9} {'<0.1':>6} "
          f"{'>0.2':>5} {'null':>4}  unsettled")
    for stack in [*dict.fromkeys(r["stack"] for r in rows), "all"]:
        mine = [r for r in rows if stack in ("all", r["stack"])]
        unsettled = sum(1 for r in mine if r["unsettled"])
        cells = []
        for key in ("b_over_q", "p_over_q"):
            judged = [r[key] for r in mine if r[key][0] is not None]  # truth that cannot tell is not judged
            n = len(judged) or 1
            within = [sum(1 for t, e, err in judged if err is not None and abs(err) <= tol) / n for tol in TOLERANCES]
            off = sum(1 for t, e, err in judged if err is not None and abs(err) > 0.2)
            nulls = sum(1 for t, e, err in judged if e is None)
            cells.append(f"{within[0]:>9.0%} {within[1]:>6.0%} {off:>5} {nulls:>4}")
        print(f"{stack:12} {len(mine):>4}  {cells[0]}  {cells[1]}  {unsettled:>9}")
    write_report(out / "report.tsv", rows)
    return rows


def write_report(path, rows):
    """The per-run figures as a table, so two analyzers' reports can be compared run by run."""
    with path.open("w") as f:
        f.write("run_id\tstack\ttruth_b_over_q\test_b_over_q\terr_b\ttruth_p_over_q\test_p_over_q\terr_p\tnull_reason\n")
        for r in rows:
            cells = [_fmt(x) for key in ("b_over_q", "p_over_q") for x in r[key]]
            why = r["b_over_q_why"] or r["p_over_q_why"] or ""
            f.write("\t".join([r["run_id"], r["stack"], *cells, why.replace("\t", " ")]) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("sndbuf-corpus"))
    ap.add_argument("--limit", type=int, default=None, help="the first N runs of the grid (stacks interleaved)")
    ap.add_argument("--stacks", default=",".join(STACKS),
                    help="comma-separated: " + ", ".join(STACKS + MORE_STACKS) + f" (default {','.join(STACKS)})")
    ap.add_argument("--report-only", action="store_true", help="no new runs: the analyzer on the runs made")
    ap.add_argument("--no-report", action="store_true", help="make the runs only")
    ap.add_argument("--retruth", action="store_true",
                    help="no new runs: truth.json of the linux and usrsctp-udp runs again from their kept measurements")
    ap.add_argument("--remake-unsettled", action="store_true",
                    help=f"make again the linux runs whose kernel samples cover less than {SETTLED * 100:.0f}%% of q")
    ap.add_argument("--list", action="store_true", help="print the grid and leave")
    a = ap.parse_args()
    stacks = [s.strip() for s in a.stacks.split(",") if s.strip()]
    unknown = [s for s in stacks if s not in STACKS + MORE_STACKS]
    if unknown:
        ap.error(f"unknown stack {', '.join(unknown)}; one of {', '.join(STACKS + MORE_STACKS)}")
    runs = [(rid, cfg) for rid, cfg in grid() if cfg.stack in stacks][:a.limit]
    if a.list:
        for rid, cfg in runs:
            print(rid, cfg.bytes)
        print(f"{len(runs)} runs")
        return
    a.out.mkdir(parents=True, exist_ok=True)
    if a.remake_unsettled:
        remake_unsettled(a.out, dict(runs))
    elif a.retruth:
        retruth(a.out, read_manifest(a.out), {rid: cfg for rid, cfg in runs if cfg.stack != "usrsctp"})
    elif not a.report_only:
        from nrsack.lab.runner import LabError

        made = read_manifest(a.out)
        todo = [(rid, cfg) for rid, cfg in runs if rid not in made]
        t0 = time.perf_counter()
        for n, (rid, cfg) in enumerate(todo, 1):
            t = time.perf_counter()
            try:
                row = make_run(rid, cfg, a.out)
            except LabError as e:
                print(f"[{n}/{len(todo)}] {rid}: failed: {e}", flush=True)
                continue
            print(f"[{n}/{len(todo)}] {rid}: b/q {row['truth_b_over_q']} p/q {row['truth_p_over_q']} "
                  f"({time.perf_counter() - t:.1f} s)", flush=True)
        print(f"{len(todo)} runs in {time.perf_counter() - t0:.0f} s", flush=True)
    if not a.no_report:
        wanted = {rid for rid, _ in runs}
        report(a.out, {rid: m for rid, m in read_manifest(a.out).items() if rid in wanted})


if __name__ == "__main__":
    main()
