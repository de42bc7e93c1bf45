"""`nrsack lab sweep`: the simulator's grids (loss x send buffer, SACK and NR-SACK, n seeds) on a real
stack, in parallel on Dask, with the simulator's tables (gain, p/q, regions of gain)."""

from dataclasses import replace
from functools import partial
from pathlib import Path

from nrsack.generator.sim import sweep as sim_sweep


def grid(base, sndbufs, losses, seeds):
    return [replace(base, ack=ack, sndbuf=b, loss=x, seed=s)
            for b in sndbufs for x in losses for s in range(1, seeds + 1) for ack in ("sack", "nrsack")]


def run_name(cfg):
    return f"{cfg.ack}-b{cfg.sndbuf}-l{cfg.loss:g}-d{cfg.delay_ms:g}-s{cfg.seed}"


def run_point(cfg, out_dir):
    """One grid point, its files kept under out_dir/runs/; a row of the simulator's runs table."""
    from .runner import run_config

    s = run_config(cfg, Path(out_dir) / "runs" / run_name(cfg))
    # the stack fills the simulator's profile column: lab rows sit beside the rfc and ns2 models
    return dict(protocol="sctp", profile=cfg.stack, stack=cfg.stack, ack=cfg.ack, sndbuf=cfg.sndbuf, loss=cfg.loss,
                bandwidth_mbps=cfg.bandwidth_mbps, delay_ms=cfg.delay_ms, bytes=cfg.bytes, seed=cfg.seed,
                throughput_bps=s["throughput_bps"], q_s=s["q_s"], p_s=s["p_s"], b_s=s["b_s"],
                p_over_q=s["p_over_q"], b_over_q=s["b_over_q"], complete=s["complete"],
                lost_forward=s["counters"]["lost_forward"], wall_s=s["wall_s"])


def run(configs, out_dir, scheduler=None, workers=None, progress=None):
    """Every run through the simulator's sweep runner (a local Dask cluster, the one at `scheduler`,
    or a process pool without Dask); each run is a child process of its own."""
    return sim_sweep.run(configs, scheduler=scheduler, workers=workers, progress=progress,
                         task=partial(run_point, out_dir=str(out_dir)))


