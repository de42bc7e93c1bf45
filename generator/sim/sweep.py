"""Grids of simulations: SACK vs NR-SACK over loss rate x send buffer (x bandwidth), n seeds each,
run in parallel with Dask; the table of throughput, gain, p/q and the regions of gain."""

import numpy as np
import pandas as pd

from .engine import PathConfig, SimConfig, simulate
from .truth import Truth

GAIN_THRESHOLD_PCT = 5.0  # metrics.md: x = 5 % by default, as in the papers


def point(protocol="sctp", ack="sack", sndbuf=32768, loss=0.01, bandwidth_mbps=100.0,
          delay_ms=45.0, nbytes=1_000_000, seed=1, paths=1, payload=1000, loss_model="bernoulli",
          burst=2.0, profile="rfc", ack_loss=0.0, duration_s=None, loss_all_paths=False,
          path2_mbps=None, writer="poll"):
    """One simulation as a plain dict (picklable for Dask workers). loss_all_paths: every path
    loses `loss` (the MPTCP paper's set-up); path2_mbps: the other paths' bandwidth (None: the same)."""
    return dict(protocol=protocol, ack=ack, sndbuf=sndbuf, loss=loss, bandwidth_mbps=bandwidth_mbps,
                delay_ms=delay_ms, bytes=nbytes, seed=seed, paths=paths, payload=payload,
                loss_model=loss_model, burst=burst, profile=profile, writer=writer, ack_loss=ack_loss,
                duration_s=duration_s, loss_all_paths=loss_all_paths, path2_mbps=path2_mbps)


def config_of(pt):
    # CMT / MPTCP: the last path carries `loss`, the others 0.08 % (the SCTP paper's CMT set-up),
    # or all of them carry it (the MPTCP paper's, loss set on the server's one interface)
    if pt["paths"] == 1 or pt.get("loss_all_paths"):
        losses = [pt["loss"]] * pt["paths"]
    else:
        losses = [0.0008] * (pt["paths"] - 1) + [pt["loss"]]
    others = pt.get("path2_mbps") or pt["bandwidth_mbps"]
    paths = tuple(PathConfig(bandwidth_bps=(pt["bandwidth_mbps"] if i == 0 else others) * 1e6,
                             delay_s=pt["delay_ms"] / 1e3, loss=x, ack_loss=pt.get("ack_loss", 0.0))
                  for i, x in enumerate(losses))
    return SimConfig(protocol=pt["protocol"], ack=pt["ack"], sndbuf=pt["sndbuf"],
                     total_bytes=pt["bytes"], paths=paths, seed=pt["seed"], payload=pt["payload"],
                     loss_model=pt["loss_model"], burst=pt["burst"],
                     profile=pt.get("profile", "rfc"), writer=pt.get("writer", "poll"),
                     duration_s=pt.get("duration_s"))


def run_point(pt):
    s = Truth(simulate(config_of(pt))).summary()
    return dict(pt, throughput_bps=s["throughput_bps"], q_s=s["q_s"], p_s=s["p_s"], b_s=s["b_s"],
                p_over_q=s["p_over_q"], b_over_q=s["b_over_q"], complete=s["complete"],
                timeouts=s["counters"]["timeouts"], retransmissions=s["counters"]["retransmissions"])


def grid(protocol="sctp", sndbufs=(8192, 32768, 65536), losses=(0.0, 0.01), seeds=3,
         bandwidths_mbps=(100.0,), **kw):
    return [point(protocol=protocol, ack=ack, sndbuf=b, loss=x, bandwidth_mbps=bw, seed=s, **kw)
            for b in sndbufs for x in losses for bw in bandwidths_mbps
            for s in range(1, seeds + 1) for ack in ("sack", "nrsack")]


def run(points, scheduler=None, workers=None, serial=False, progress=None, task=run_point):
    """Run task(point) for every point: serially, on a local Dask cluster, or on the cluster at
    `scheduler`; one row each, in the points' order. progress: called once per finished point (for
    a progress bar). task: a picklable callable (the lab passes its own runs)."""
    if serial:
        results = []
        for p in points:
            results.append(task(p))
            if progress:
                progress()
        return pd.DataFrame(results)
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        if scheduler:
            raise RuntimeError("a Dask scheduler needs the sweep extra: pip install 'nrsack[sweep]'") from None
        return pd.DataFrame(_in_process_pool(task, points, workers, progress))

    if scheduler:
        with Client(scheduler) as client:
            results = _gather(client, task, points, progress)
    else:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            results = _gather(client, task, points, progress)
    return pd.DataFrame(results)


def _in_process_pool(task, points, workers, progress):
    """Without Dask (the sweep extra not installed): the same runs on this machine's cores."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(task, p) for p in points]
        if progress:
            for _ in as_completed(futures):
                progress()
        return [f.result() for f in futures]  # in the points' order


def _gather(client, task, points, progress):
    from dask.distributed import as_completed

    futures = client.map(task, points, pure=False)
    if progress:
        for _ in as_completed(futures):
            progress()
    return client.gather(futures)  # in the points' order, whatever order they finished in


KEYS = ["profile", "protocol", "sndbuf", "bandwidth_mbps", "delay_ms", "loss"]


def gain_table(runs):
    """One row per grid point: mean and spread of each throughput, the gain of the means
    (the papers' definition), the spread of the per-seed gains (seeds pair SACK and NR-SACK runs
    with the same losses), truth p/q and b/q of both."""
    sack = runs[runs.ack == "sack"].set_index(KEYS + ["seed"])
    nr = runs[runs.ack == "nrsack"].set_index(KEYS + ["seed"])
    cols = ["throughput_bps", "p_over_q", "b_over_q"]
    paired = pd.merge(sack[cols], nr[cols], left_index=True, right_index=True,
                      suffixes=("_sack", "_nr"))
    paired["gain_pct"] = (paired.throughput_bps_nr - paired.throughput_bps_sack) / paired.throughput_bps_sack * 100
    g = paired.groupby(level=KEYS)
    table = pd.DataFrame({
        "seeds": g.size(),
        "T_sack_mbps": g.throughput_bps_sack.mean() / 1e6,
        "T_sack_std": g.throughput_bps_sack.std(ddof=0) / 1e6,
        "T_nr_mbps": g.throughput_bps_nr.mean() / 1e6,
        "T_nr_std": g.throughput_bps_nr.std(ddof=0) / 1e6,
        "gain_pct_std": g.gain_pct.std(ddof=0),
        "p_over_q_sack": g.p_over_q_sack.mean(),
        "p_over_q_nr": g.p_over_q_nr.mean(),
        "b_over_q_sack": g.b_over_q_sack.mean(),
        "b_over_q_nr": g.b_over_q_nr.mean(),
    })
    table.insert(5, "gain_pct", (table.T_nr_mbps - table.T_sack_mbps) / table.T_sack_mbps * 100)
    return table.reset_index()


def runs_at_least(points, gains, x=GAIN_THRESHOLD_PCT):
    """[(first, last)] of the runs of consecutive grid points (in the order given) whose mean gain
    is at least x %: the regions of gain along one axis."""
    runs, run = [], []
    for point, gain in zip(points, gains):
        if gain >= x:
            run.append(point)
            continue
        if run:
            runs.append((run[0], run[-1]))
        run = []
    if run:
        runs.append((run[0], run[-1]))
    return runs


def regions_of_gain(table, x=GAIN_THRESHOLD_PCT):
    """Per send buffer (and bandwidth, delay): the loss-rate intervals [a, b] over which the mean
    gain is at least x %, as runs of consecutive grid points."""
    rows = []
    group = ["profile", "protocol", "sndbuf", "bandwidth_mbps", "delay_ms"]
    for key, part in table.groupby(group):
        part = part.sort_values("loss")
        runs = runs_at_least(part.loss, part.gain_pct, x) or [(np.nan, np.nan)]
        rows.extend((*key, first, last) for first, last in runs)
    return pd.DataFrame(rows, columns=group + ["loss_from", "loss_to"])
