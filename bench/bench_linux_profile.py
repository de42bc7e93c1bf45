"""The simulator's linux profile against the Linux kernel (issue 27): the same grid through
`nrsack lab sweep --stack linux-tcp` (real time, root) and `nrsack generate sweep --profile linux`,
side by side; with --stack linux-mptcp, MPTCP over the lab's two alike paths (each with the grid's
loss, delay and bandwidth) against the simulator's MPTCP over two such paths.

    python bench/bench_linux_profile.py --out calib/                 # lab runs missing, then the table
    python bench/bench_linux_profile.py --out calib/ --report-only   # the table from the runs made
    python bench/bench_linux_profile.py --out calib/ --stack linux-mptcp
    python bench/bench_linux_profile.py --out calib/ --replay-losses  # each kernel run replayed (below)

Per grid point (send buffer x loss x delay) the mean and spread (standard deviation over seeds) of
throughput, retransmissions, timeouts, b/q and p/q for the kernel and for the model; a point is
flagged where a mean differs from the other's by more than the larger spread (and the issue's
criterion: throughput within 15 %, b/q within 0.1). The lab's b/q and p/q are its truth.json's (the
writer's measured waits on a buffer full of sent data; docs/lab.md); its retransmissions and
timeouts are counted on its sender.pcap: a data segment at or below the highest sequence sent on
its subflow is a retransmission, and a retransmission after 200 ms or more without any data sent
on its subflow is a timeout (Linux's RTO is at least SRTT + 200 ms, its tail-loss probe fires after 2 SRTT). The
model's are its counters.

The lab's path is a forwarder process in real time: on a loaded machine it is descheduled and
holds packets longer than the path it emulates. A kernel run whose 95th-percentile RTT (on its
capture) exceeds the longest the emulated path can give (both delays, a full queue, a delayed
ack) is left out (--keep-distorted keeps it), and a point with fewer than 3 runs left is not
judged; the table gives the runs kept and their median RTT.

The lab's forwarder draws its losses from the seed and the frame's index, so every point of a
kernel grid loses the same few patterns (5 or 10 seeds), and a model over other seeds compares
those patterns with its own as much as the rules. --replay-losses takes that out: the model runs
once per kernel run and loses exactly the first transmissions the kernel's path lost (found on
the run's captures, lost_first_packets: which segment of which subflow), nothing else; under
MPTCP its second subflow also starts when the kernel's did (join_after: the kernel joins from
its path manager's worker, which a loaded machine delays by up to half a second, and in some
runs never before the transfer ends). The kernel's few lost retransmissions are not replayed
(the table's retransmission columns show them).
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd

from nrsack.lab.truth import linux_b_p_over_q

METRICS = ("throughput_mbps", "retransmissions", "timeouts", "b_over_q", "p_over_q")
KEYS = ["delay_ms", "sndbuf", "loss"]
SILENCE_BEFORE_TIMEOUT_S = 0.2
SMALLEST_DIFFERENCE = 0.005  # below the table's last digit: two zero-spread zeros do not differ
LAB_PORT = 5201  # lab/endpoints.py TCP_PORT
LAB_QUEUE_PACKETS = 100  # lab/config.py LabConfig.queue, the lab sweep's
SETTLED = 0.9  # bench_sndbuf.py's: a run whose sampler covers less of q has an unsettled truth
MIN_KERNEL_RUNS = 3  # a point is judged on at least this many kernel runs over an undistorted path


def capture_counters(pcap):
    """(retransmissions, timeouts, RTT samples in seconds) of the sender's data in a TCP capture
    (MPTCP: each subflow apart, its sequence space and its silences, as the model counts each
    subflow's RTOs). An
    RTT sample: a first transmission to the first ack that covers exactly its end (Karn: none for
    data sent twice)."""
    retransmissions = timeouts = 0
    highest = {}  # the sender's port (the subflow) -> highest sequence sent
    sent_at = {}  # (sender's port, end sequence) -> time sent; None once sent again
    rtts = []
    last_data_t = {}  # the sender's port -> time of its last data segment
    for t, tcp, size in _tcp_segments(pcap):
        if tcp.sport == LAB_PORT and tcp.flags & dpkt.tcp.TH_ACK:
            sent = sent_at.pop((tcp.dport, tcp.ack), None)
            if sent is not None:
                rtts.append(t - sent)
            continue
        if not size or tcp.dport != LAB_PORT:
            continue
        end = tcp.seq + size
        key = (tcp.sport, end % 2**32)
        high = highest.get(tcp.sport)
        if high is not None and (end - high) % 2**32 > 2**31 or end == high:
            retransmissions += 1
            sent_at[key] = None
            if t - last_data_t.get(tcp.sport, t) >= SILENCE_BEFORE_TIMEOUT_S:
                timeouts += 1
        else:
            highest[tcp.sport] = end
            sent_at[key] = None if key in sent_at else t
        last_data_t[tcp.sport] = t
    return retransmissions, timeouts, rtts


def _tcp_segments(pcap):
    """(time, TCP header, payload length) of each TCP segment in a capture; the lab's captures keep
    the first 128 bytes of a frame, so the payload's length comes from the headers."""
    with open(pcap, "rb") as f:
        for t, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                yield t, ip.data, ip.len - ip.hl * 4 - ip.data.off * 4


def _data_segments(pcap):
    """(time, subflow, offset) of each data segment sent to the lab's port: subflows (TCP
    connections; one under linux-tcp) numbered in the order of their SYNs, the offset from the
    SYN's sequence."""
    out, isn = [], {}
    for t, tcp, size in _tcp_segments(pcap):
        if tcp.dport != LAB_PORT:
            continue
        if tcp.flags & dpkt.tcp.TH_SYN:
            isn.setdefault(tcp.sport, tcp.seq + 1)
        elif size and tcp.sport in isn:
            out.append((t, list(isn).index(tcp.sport), (tcp.seq - isn[tcp.sport]) % 2**32))
    return out


def join_after(run_dir):
    """Seconds from the first subflow's first data to the second's (None: it sent none)."""
    firsts = {}
    for t, subflow, _ in _data_segments(run_dir / "sender.pcap"):
        firsts.setdefault(subflow, t)
    return None if 1 not in firsts or 0 not in firsts else max(firsts[1] - firsts[0], 0.0)


def lost_first_packets(run_dir, payload, delay_s):
    """(subflow, k) of each first transmission the lab's path lost, k the segment's index in its
    subflow (payload-sized segments): the receiver's capture has no copy of it before a second
    transmission could have arrived (sent + most of the one-way delay). Under MPTCP a segment
    sent again on another subflow is that subflow's own first transmission."""
    arrived, sends = {}, {}
    for t, subflow, offset in _data_segments(run_dir / "receiver.pcap"):
        arrived.setdefault((subflow, offset), t)
    for t, subflow, offset in _data_segments(run_dir / "sender.pcap"):
        sends.setdefault((subflow, offset), []).append(t)
    lost = []
    for (subflow, offset), times in sends.items():
        first_arrival = arrived.get((subflow, offset))
        if first_arrival is None or (len(times) > 1 and first_arrival >= times[1] + 0.9 * delay_s):
            lost.append((subflow, offset // payload))
    return sorted(set(lost))


def path_bound_ms(delay_ms, bandwidth_mbps, queue_packets=LAB_QUEUE_PACKETS):
    """The longest RTT the emulated path can give: both delays, a full drop-tail queue of 1500-byte
    packets, and the receiver's delayed-ack timer (TCP_DELACK_MIN, 40 ms)."""
    return 2 * delay_ms + queue_packets * 1500 * 8 / (bandwidth_mbps * 1e3) + 40


def run(cmd, log):
    print("$", " ".join(cmd), flush=True)
    with open(log, "w") as f:
        subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT)


def lab_rows(folder):
    """The lab's runs with their capture's counts and RTT; path_ok: the 95th percentile RTT within
    what the emulated path can give. Beyond it the forwarder (a process in real time) held packets
    longer than the path it emulates: on a loaded machine it is descheduled, and the run is then not
    a run over the configured path."""
    runs = pd.read_csv(folder / "runs.csv")
    run_dirs = [folder / "runs" / f"sack-b{r.sndbuf}-l{r.loss:g}-d{r.delay_ms:g}-s{r.seed}" for r in runs.itertuples()]
    # b/q and p/q by the lab's rules of today, from each run's own measurements (a truth.json written
    # before a rule changed keeps the old split; decisions.md 94)
    for i, (r, run_dir) in enumerate(zip(runs.itertuples(), run_dirs)):
        if (run_dir / "sender.json").exists():
            b, p = linux_b_p_over_q(r.stack, json.loads((run_dir / "sender.json").read_text()))
            runs.loc[i, ["b_over_q", "p_over_q"]] = b, p
    runs["sampler_coverage"] = [json.loads((d / "truth.json").read_text()).get("sampler_coverage") for d in run_dirs]
    counts = [capture_counters(d / "sender.pcap") for d in run_dirs]
    runs["retransmissions"] = [c[0] for c in counts]
    runs["timeouts"] = [c[1] for c in counts]
    runs["rtt_median_ms"] = [1e3 * float(np.median(c[2])) if c[2] else np.nan for c in counts]
    runs["rtt_p95_ms"] = [1e3 * float(np.percentile(c[2], 95)) if c[2] else np.nan for c in counts]
    runs["path_ok"] = runs.rtt_p95_ms <= path_bound_ms(runs.delay_ms, runs.bandwidth_mbps)
    return runs


def table(lab, sim, keep_distorted=False):
    """Per point the means and spreads side by side. The kernel's side: its runs over an undistorted
    path (lab_rows' path_ok) unless keep_distorted; a point with fewer than MIN_KERNEL_RUNS such runs
    is not judged (its verdicts are left empty)."""
    kept = lab if keep_distorted else lab[lab.path_ok]
    side = {}
    for name, frame in (("lab", kept), ("sim", sim)):
        frame = frame.assign(throughput_mbps=frame.throughput_bps / 1e6)
        g = frame.groupby(KEYS)[list(METRICS)]
        side[name] = g.mean().join(g.std(ddof=0).add_suffix("_sd"))
    rows = side["sim"].add_suffix("_sim").join(side["lab"].add_suffix("_lab")).reset_index()
    counts = lab.groupby(KEYS).agg(kernel_runs=("seed", "size"), kernel_runs_kept=("path_ok", "sum"),
                                   rtt_median_ms=("rtt_median_ms", "median")).reset_index()
    if keep_distorted:
        counts["kernel_runs_kept"] = counts.kernel_runs
    rows = rows.merge(counts, on=KEYS, how="left")
    judged = rows.kernel_runs_kept >= MIN_KERNEL_RUNS
    beyond = []
    for r, ok in zip(rows.itertuples(), judged):
        out = [m for m in METRICS if ok and abs(getattr(r, f"{m}_lab") - getattr(r, f"{m}_sim"))
               > max(getattr(r, f"{m}_sd_lab"), getattr(r, f"{m}_sd_sim"), SMALLEST_DIFFERENCE)]
        beyond.append(",".join(out))
    rows["beyond_spread"] = beyond
    rows["judged"] = judged
    rows["t_within_15pct"] = judged & ((rows.throughput_mbps_sim / rows.throughput_mbps_lab - 1).abs() <= 0.15)
    rows["bq_within_0.1"] = judged & ((rows.b_over_q_sim - rows.b_over_q_lab).abs() <= 0.1)
    return rows


def markdown(rows):
    def cell(r, m, digits):
        if not r.judged:
            return f"n/a | {getattr(r, m + '_sim'):.{digits}f} ± {getattr(r, m + '_sd_sim'):.{digits}f}"
        return (f"{getattr(r, m + '_lab'):.{digits}f} ± {getattr(r, m + '_sd_lab'):.{digits}f} | "
                f"{getattr(r, m + '_sim'):.{digits}f} ± {getattr(r, m + '_sd_sim'):.{digits}f}")
    lines = ["| delay ms | SO_SNDBUF | loss | kernel runs kept | RTT ms kernel | T Mbit/s kernel | T model | "
             "rtx kernel | rtx model | RTOs kernel | RTOs model | b/q kernel | b/q model | p/q kernel | "
             "p/q model | beyond spread |",
             "|" + "---|" * 16]
    for r in rows.itertuples():
        lines.append(f"| {r.delay_ms:g} | {r.sndbuf} | {r.loss:g} | {r.kernel_runs_kept}/{r.kernel_runs} | "
                     f"{r.rtt_median_ms:.0f} | {cell(r, 'throughput_mbps', 2)} | "
                     f"{cell(r, 'retransmissions', 1)} | {cell(r, 'timeouts', 1)} | {cell(r, 'b_over_q', 2)} | "
                     f"{cell(r, 'p_over_q', 2)} | {r.beyond_spread or '-'} |")
    return "\n".join(lines)


def verdict(rows):
    n, judged = len(rows), int(rows.judged.sum())
    return (f"{n} points, {judged} judged (>= {MIN_KERNEL_RUNS} kernel runs over an undistorted path); "
            f"throughput within 15 %: {rows.t_within_15pct.sum()}/{judged}; "
            f"b/q within 0.1: {rows['bq_within_0.1'].sum()}/{judged}; "
            f"both: {(rows.t_within_15pct & rows['bq_within_0.1']).sum()}/{judged}")


def simulate_mptcp(a, delay, sim_dir):
    """The simulator's MPTCP on the lab's set-up: two alike paths, each losing the grid's rate (the
    sweep command's --loss is the last path's only, so the points are made here)."""
    from nrsack.generator.sim import sweep

    points = [sweep.point(protocol="mptcp", ack="sack", sndbuf=int(b), loss=float(x),
                          bandwidth_mbps=float(a.bandwidth), delay_ms=float(delay), nbytes=int(a.bytes), seed=s,
                          paths=2, payload=a.payload, profile=a.profile, writer=a.writer, loss_all_paths=True)
              for b in a.sndbuf.split(",") for x in a.loss.split(",") for s in range(1, int(a.sim_seeds) + 1)]
    print(f"$ (simulator) {len(points)} MPTCP runs, profile {a.profile}, delay {delay} ms", flush=True)
    sim_dir.mkdir(parents=True, exist_ok=True)
    rows = pd.DataFrame(sweep.run(points, serial=True))
    rows.to_csv(sim_dir / "runs.csv", index=False)
    return rows


def replay_runs(a, lab, lab_dir, sim_dir, mptcp):
    """One model run per kernel run, losing exactly the first transmissions it lost (and no
    retransmission); grouped under the kernel run's grid point."""
    from dataclasses import replace

    from nrsack.generator.sim import sweep
    from nrsack.generator.sim.engine import simulate
    from nrsack.generator.sim.truth import Truth

    rows = []
    for r in lab.itertuples():
        run_dir = lab_dir / "runs" / f"sack-b{r.sndbuf}-l{r.loss:g}-d{r.delay_ms:g}-s{r.seed}"
        drops = lost_first_packets(run_dir, a.payload, r.delay_ms / 1e3)
        pt = sweep.point(protocol="mptcp" if mptcp else "tcp", ack="sack", sndbuf=int(r.sndbuf), loss=0.0,
                         bandwidth_mbps=float(r.bandwidth_mbps), delay_ms=float(r.delay_ms), nbytes=int(r.bytes),
                         seed=int(r.seed), paths=2 if mptcp else 1, payload=a.payload, profile=a.profile,
                         writer=a.writer, loss_all_paths=mptcp)
        cfg = sweep.config_of(pt)
        if mptcp:
            cfg = replace(cfg, drop_path_packets=tuple(drops), join_after_s=(join_after(run_dir),))
        else:  # one path: its k-th segment is unit k
            cfg = replace(cfg, drop_units=tuple(k for _, k in drops))
        summary = Truth(simulate(cfg)).summary()
        rows.append(dict(pt, loss=r.loss, replayed_drops=len(drops), kernel_path_ok=bool(r.path_ok), throughput_bps=summary["throughput_bps"],
                         b_over_q=summary["b_over_q"], p_over_q=summary["p_over_q"],
                         timeouts=summary["counters"]["timeouts"],
                         retransmissions=summary["counters"]["retransmissions"]))
    sim_dir.mkdir(parents=True, exist_ok=True)
    rows = pd.DataFrame(rows)
    rows.to_csv(sim_dir / "runs.csv", index=False)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--stack", choices=("linux-tcp", "linux-mptcp"), default="linux-tcp")
    ap.add_argument("--sndbuf", default="8192,32768,131072")
    ap.add_argument("--loss", default="0.005,0.02")
    ap.add_argument("--delay", default="10,40", help="one-way ms, comma-separated")
    ap.add_argument("--bandwidth", default="20", help="Mbit/s (linux-mptcp: each path's)")
    ap.add_argument("--bytes", default="1000000")
    ap.add_argument("--seeds", default="3")
    ap.add_argument("--sim-seeds", default=None,
                    help="the model's seeds [default: --seeds]; it costs milliseconds a run, and more seeds "
                         "take the model's own spread out of the comparison of means")
    ap.add_argument("--payload", type=int, default=None,
                    help="bytes per write in the lab and the simulator's segment payload: the kernel's MSS on "
                         "the lab's path, so that a write is one segment [default: 1448, linux-mptcp 1424 (the "
                         "DSS option takes 24 bytes; a 1448-byte write goes as 1424 + 24)]")
    ap.add_argument("--cc", default="cubic", help="the lab's TCP_CONGESTION")
    ap.add_argument("--profile", default="linux", help="the simulator's profile")
    ap.add_argument("--writer", default="spin", help="the simulator's writer (the lab's spins on send())")
    ap.add_argument("--keep-distorted", action="store_true",
                    help="judge on every kernel run, those whose path RTT exceeded the emulated path's too")
    ap.add_argument("--replay-losses", action="store_true",
                    help="the model loses exactly the first transmissions each kernel run lost, one model run per "
                         "kernel run (--sim-seeds is then unused)")
    ap.add_argument("--report-only", action="store_true")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    mptcp = a.stack == "linux-mptcp"
    a.payload = a.payload or (1424 if mptcp else 1448)
    a.sim_seeds = a.sim_seeds or a.seeds
    tag = "mptcp-" if mptcp else ""  # linux-tcp keeps the folder names of the runs made before
    nrsack = ["nrsack"]
    grid = ["--sndbuf", a.sndbuf, "--loss", a.loss, "--bandwidth", a.bandwidth, "--bytes", a.bytes,
            "--seeds", a.seeds]
    lab_grid = [*grid, "--message", str(a.payload)]
    sim_grid = [*grid[:-1], a.sim_seeds]
    lab, sim = [], []
    for delay in a.delay.split(","):
        lab_dir = a.out / f"lab-{tag}d{delay}"
        sim_dir = a.out / f"sim-{tag}{a.profile}-d{delay}" if a.sim_seeds == a.seeds else \
            a.out / f"sim-{tag}{a.profile}-s{a.sim_seeds}-d{delay}"
        if not (lab_dir / "runs.csv").exists():
            if a.report_only:
                sys.exit(f"no lab runs in {lab_dir}")
            # the lab runs in real time: niced, so that the machine's other work goes first; the
            # machine's load beside them (the runs are compared with their spread, not alone)
            print("load before the lab runs:", os.getloadavg(), flush=True)
            run(["nice", "-n", "10", *nrsack, "lab", "sweep", "--stack", a.stack, "--cc", a.cc,
                 "--delay", delay, *lab_grid, "--out", str(lab_dir)], a.out / f"lab-{tag}d{delay}.log")
            print("load after the lab runs:", os.getloadavg(), flush=True)
        lab_runs = lab_rows(lab_dir)
        if a.replay_losses:
            s = replay_runs(a, lab_runs, lab_dir, a.out / f"sim-replay-{tag}{a.profile}-d{delay}", mptcp)
            if not a.keep_distorted:  # the replays of the kernel runs the table keeps
                s = s[s.kernel_path_ok]
        elif mptcp:
            s = (pd.read_csv(sim_dir / "runs.csv") if a.report_only and (sim_dir / "runs.csv").exists()
                 else simulate_mptcp(a, delay, sim_dir))
        else:
            run([*nrsack, "generate", "sweep", "--protocol", "tcp", "--profile", a.profile, "--writer", a.writer,
                 "--payload", str(a.payload),
                 "--delay", delay, *sim_grid, "--serial", "--out", str(sim_dir)], a.out / f"sim-d{delay}.log")
            s = pd.read_csv(sim_dir / "runs.csv")
        lab.append(lab_runs)
        sim.append(s[s.ack == "sack"])
    rows = table(pd.concat(lab), pd.concat(sim), a.keep_distorted)
    replayed = "replay-" if a.replay_losses else ""
    rows.to_csv(a.out / f"calibration-{replayed}{tag}{a.profile}.csv", index=False, float_format="%.4g")
    print(markdown(rows))
    print("\n" + verdict(rows))
    kernel = pd.concat(lab)
    coverage = kernel.sampler_coverage.dropna()
    if len(coverage):  # decisions.md 88: below SETTLED the run's truth measured the machine
        print(f"kernel runs' sampler coverage: {len(coverage)} of {len(kernel)} recorded, min {coverage.min():.3f}, "
              f"median {coverage.median():.3f}, below {SETTLED}: {(coverage < SETTLED).sum()}")


if __name__ == "__main__":
    main()
