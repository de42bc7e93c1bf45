"""`nrsack lab sweep`: the simulator's grids (loss x send buffer, SACK and NR-SACK, n seeds) on a real
stack, in parallel on Dask, with the simulator's tables (gain, p/q, regions of gain).

Linux has no NR-SACK: a linux-tcp sweep runs SACK only, one run at a time (each builds namespaces
and a forwarder that needs a core of its own), and its table is the analyzer's what-if on every
capture (rtxq_whatif: what NR-SACKs would have freed) instead of a gain."""

import tempfile
from dataclasses import replace
from functools import partial
from pathlib import Path

import pandas as pd

from nrsack.generator.sim import sweep as sim_sweep

PAIRED_STACKS = ("usrsctp",)  # the stacks with both ack modes


def grid(base, sndbufs, losses, seeds):
    """Every run of the sweep; a loss rate holds on every path (linux-mptcp's second too)."""
    acks = ("sack", "nrsack") if base.stack in PAIRED_STACKS else ("sack",)
    return [replace(base, ack=ack, sndbuf=b, loss=x, seed=s,
                    more_paths=tuple((x, delay, bandwidth) for _, delay, bandwidth in base.more_paths))
            for b in sndbufs for x in losses for s in range(1, seeds + 1) for ack in acks]


def run_name(cfg):
    return f"{cfg.ack}-b{cfg.sndbuf}-l{cfg.loss:g}-d{cfg.delay_ms:g}-s{cfg.seed}"


def run_point(cfg, out_dir, summary_only=False):
    """One grid point, its files kept under out_dir/runs/ (summary_only: only the summary's inputs,
    runner.run_config); a row of the simulator's runs table (linux-tcp: with the analyzer's figures
    on its capture)."""
    from .runner import run_config

    run_dir = Path(out_dir) / "runs" / run_name(cfg)
    s = run_config(cfg, run_dir, summary_only)
    # the stack fills the simulator's profile column: lab rows sit beside the rfc and ns2 models
    row = dict(protocol=s["protocol"], profile=cfg.stack, stack=cfg.stack, ack=cfg.ack, sndbuf=cfg.sndbuf,
               loss=cfg.loss, bandwidth_mbps=cfg.bandwidth_mbps, delay_ms=cfg.delay_ms, bytes=cfg.bytes,
               seed=cfg.seed, throughput_bps=s["throughput_bps"], q_s=s["q_s"], p_s=s.get("p_s"), b_s=s["b_s"],
               p_over_q=s.get("p_over_q"), b_over_q=s["b_over_q"], app_blocked_over_q=s.get("app_blocked_over_q"),
               complete=s["complete"],
               lost_forward=s["counters"]["lost_forward"], wall_s=s.get("wall_s"))
    if cfg.stack not in PAIRED_STACKS:
        row.update(capture_row(run_dir))
    return row


# virtual seconds a run may take at a simulator point: 10 MB through an 8K buffer at 20 % loss takes
# about 2000 (RTO minimum 1 s); the LabConfig's own limit is a day
SIMULATOR_POINT_TIMEOUT_S = 86400.0
# the simulator's packets are 1500 bytes of IP (ns-2's 1468-byte DATA chunk, SCTP and IP headers)
SIMULATOR_MTU = 1500


def config_of_point(pt, drain=False):
    """The usrsctp run at one of the simulator's sweep points (generator/sim/sweep.point): one path, a
    message the simulator's payload (one DATA chunk in a 1500-byte packet), drain off by default so NR-SACKs free ordered
    data too, as the simulator's receivers do."""
    from .config import LabConfig

    if pt["protocol"] != "sctp" or pt["paths"] != 1:
        raise ValueError(f"usrsctp runs single-path SCTP here, not {pt['protocol']} over {pt['paths']} paths")
    return LabConfig(stack="usrsctp", ack=pt["ack"], sndbuf=pt["sndbuf"], bytes=pt["bytes"], message=pt["payload"],
                     loss=pt["loss"], ack_loss=pt.get("ack_loss", 0.0), loss_model=pt["loss_model"],
                     burst=pt["burst"], delay_ms=pt["delay_ms"], bandwidth_mbps=pt["bandwidth_mbps"], seed=pt["seed"],
                     drain=drain, mtu=SIMULATOR_MTU, timeout_s=SIMULATOR_POINT_TIMEOUT_S)


def run_simulator_point(pt):
    """A row of the simulator's runs table made by usrsctp (`nrsack reproduce --profile usrsctp`): only
    the files the summary reads, in a temporary folder dropped after."""
    with tempfile.TemporaryDirectory(prefix="nrsack-lab-") as tmp:
        row = run_point(config_of_point(pt), tmp, summary_only=True)
    return dict(pt, **{k: row.get(k) for k in ("throughput_bps", "q_s", "p_s", "b_s", "p_over_q", "b_over_q",
                                               "complete", "lost_forward", "wall_s")})


def capture_row(run_dir):
    """The analyzer on the run's sender capture at the buffer the capture shows (capture.py)."""
    import numpy as np

    from .capture import analyzed_at_kernel_capacity

    entry = analyzed_at_kernel_capacity(run_dir)
    a, table = entry.summary, entry.rtxq
    # each row of the RtxQ table holds until the next
    held = np.diff(table["time_ns"].to_numpy(), append=table["time_ns"].to_numpy()[-1:]) if len(table) else 0
    rtxq = float((table["rtxq_sack_bytes"].to_numpy() * held).sum()) if len(table) else 0.0
    sacked = float((table["sacked_bytes"].to_numpy() * held).sum()) if len(table) else 0.0
    return dict(capacity_bytes=a["sndbuf_bytes"], p_over_q_capture=a["p_over_q"], b_over_q_capture=a["b_over_q"],
                max_rtxq_sack_bytes=a["max_rtxq_sack_bytes"], max_rtxq_whatif_bytes=a["max_rtxq_whatif_bytes"],
                sacked_share_pct=sacked / rtxq * 100 if rtxq > 0 else 0.0)


def whatif_table(runs):
    """One row per grid point of a SACK-only sweep: throughput (mean, spread), the sender's measured
    waits (app_blocked_over_q) and the stack's b/q and p/q (a buffer full of sent data), the
    analyzer's p/q and b/q, the largest RtxQ with SACK and what it would have been had
    the receiver NR-acked every block it SACKed, the share of that peak NR-SACKs would have freed
    (freed_pct) and the time-weighted share of the RtxQ that was SACKed data (sacked_share_pct:
    what NR-SACKs would have freed on average)."""
    keys = [k for k in sim_sweep.KEYS if k in runs]
    runs = runs.assign(freed_pct=(1 - runs.max_rtxq_whatif_bytes / runs.max_rtxq_sack_bytes) * 100)
    g = runs.groupby(keys)
    table = pd.DataFrame({
        "seeds": g.size(),
        "T_sack_mbps": g.throughput_bps.mean() / 1e6,
        "T_sack_std": g.throughput_bps.std(ddof=0) / 1e6,
        "app_blocked_over_q": g.app_blocked_over_q.mean(),
        "b_over_q": g.b_over_q.mean(),
        "b_over_q_capture": g.b_over_q_capture.mean(),
        "p_over_q": g.p_over_q.mean(),
        "p_over_q_capture": g.p_over_q_capture.mean(),
        "max_rtxq_sack_kb": g.max_rtxq_sack_bytes.mean() / 1e3,
        "max_rtxq_whatif_kb": g.max_rtxq_whatif_bytes.mean() / 1e3,
        "freed_pct": g.freed_pct.mean(),
        "sacked_share_pct": g.sacked_share_pct.mean(),
    })
    return table.reset_index()


def run(configs, out_dir, scheduler=None, workers=None, progress=None):
    """Every run through the simulator's sweep runner (a local Dask cluster, the one at `scheduler`,
    or a process pool without Dask; Linux stacks one at a time in this process); each run is a
    child process of its own."""
    serial = configs[0].stack not in PAIRED_STACKS
    return sim_sweep.run(configs, scheduler=None if serial else scheduler, workers=workers, serial=serial,
                         progress=progress, task=partial(run_point, out_dir=str(out_dir)))
