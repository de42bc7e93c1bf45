"""`nrsack generate simulate` and `nrsack generate sweep`."""

import json
import time
from pathlib import Path

import click

from .sim.profiles import PROFILES, WRITERS


def _floats(text, name):
    try:
        values = [float(x) for x in str(text).split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{name}: expected numbers separated by commas, got {text!r}")
    if not values:
        raise click.BadParameter(f"{name}: no value given")
    return values


def _ints(text, name):
    return [int(x) for x in _floats(text, name)]


def _profile_options(f):
    """--profile, --writer, --ack-loss and --duration: the same on `simulate` and `sweep`."""
    f = click.option("--writer", type=click.Choice(WRITERS), default="poll", show_default=True,
                     help="linux profiles: a blocked writer is woken when a third of the buffer is "
                          "free (poll) or retries send() and writes as soon as a segment fits "
                          "(spin, as the lab's linux-tcp writer)")(f)
    f = click.option("--duration", type=click.FloatRange(min=0, min_open=True), default=None,
                     help="fixed-duration run, seconds: data always waiting, the run stops then "
                          "(overrides --bytes)")(f)
    f = click.option("--ack-loss", "ack_loss", default="0", show_default=True,
                     help="loss rate of the ack (reverse) direction, RATE[,RATE2...]")(f)
    return click.option("--profile", type=click.Choice(sorted(PROFILES)), default="rfc",
                        show_default=True,
                        help="whose rules: rfc (RFC 9260's text), ns2 (ns-2.35's SCTP module, the SCTP "
                             "paper's simulator), freebsd (FreeBSD's stack as usrsctp 0.9.5 ships it), "
                             "linux / linux-reno (Linux 6.x TCP; --sndbuf is SO_SNDBUF); "
                             "see `nrsack docs simulator`")(f)


def _per_path(values, n, name):
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise click.BadParameter(f"{name}: give one value or one per path ({n}), got {len(values)}")
    return values


@click.command()
@click.option("--protocol", type=click.Choice(["sctp", "cmt", "tcp", "mptcp"]), default="sctp",
              show_default=True)
@click.option("--ack", type=click.Choice(["sack", "nrsack"]), default="sack", show_default=True)
@click.option("--sndbuf", type=click.IntRange(min=1), default=32768, show_default=True,
              help="send buffer B in payload bytes (new data + RtxQ)")
@click.option("--loss", default="0.01", show_default=True,
              help="forward loss rate per path, RATE[,RATE2...]")
@click.option("--loss-model", type=click.Choice(["bernoulli", "gilbert"]), default="bernoulli",
              show_default=True)
@click.option("--burst", type=float, default=2.0, show_default=True,
              help="Gilbert-Elliott mean loss burst length, packets")
@click.option("--delay", default="45", show_default=True, help="one-way delay per path, MS[,MS2...]")
@click.option("--bandwidth", default="100", show_default=True, help="Mbit/s per path, MBPS[,...]")
@click.option("--queue", default="100", show_default=True, help="drop-tail queue per path, packets")
@click.option("--paths", type=click.IntRange(1, 16), default=None,
              help="number of paths (default: 2 for cmt/mptcp unless lists say more, 1 otherwise)")
@click.option("--bytes", "nbytes", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option("--payload", type=click.IntRange(1, 1452), default=1000, show_default=True,
              help="payload bytes per DATA chunk / segment (1452 fills a 1500-byte SCTP packet)")
@click.option("--rcvbuf", type=click.IntRange(min=1), default=4 << 20, show_default=True)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option("--isn", type=click.IntRange(0, 2**32 - 1), default=None,
              help="first TSN / sequence number (default: drawn from the seed)")
@click.option("--receiver-pcap/--no-receiver-pcap", default=False, show_default=True)
@click.option("--truth-format", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True)
@_profile_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True)
def simulate(protocol, ack, sndbuf, loss, loss_model, burst, delay, bandwidth, queue, paths, nbytes,
             payload, rcvbuf, seed, isn, receiver_pcap, truth_format, profile, writer, ack_loss,
             duration, out_dir):
    """Simulate one transfer; write sender.pcap (receiver.pcap) and the truth files."""
    from .sim.engine import PathConfig, SimConfig, simulate as run_model, write_pcap
    from .sim.truth import Truth

    lists = {"loss": _floats(loss, "--loss"), "delay": _floats(delay, "--delay"),
             "bandwidth": _floats(bandwidth, "--bandwidth"), "queue": _ints(queue, "--queue"),
             "ack-loss": _floats(ack_loss, "--ack-loss")}
    n = paths or max(len(v) for v in lists.values())
    if paths is None and protocol in ("cmt", "mptcp") and n == 1:
        n = 2
    lists = {k: _per_path(v, n, f"--{k}") for k, v in lists.items()}
    try:
        cfg = SimConfig(
            protocol=protocol, ack=ack, sndbuf=sndbuf, total_bytes=nbytes, payload=payload,
            rcvbuf=rcvbuf, seed=seed, isn=isn, loss_model=loss_model, burst=burst,
            profile=profile, writer=writer, duration_s=duration,
            paths=tuple(PathConfig(bandwidth_bps=b * 1e6, delay_s=d / 1e3, loss=x, queue_packets=q,
                                   ack_loss=a)
                        for x, d, b, q, a in zip(lists["loss"], lists["delay"], lists["bandwidth"],
                                                 lists["queue"], lists["ack-loss"])))
    except ValueError as e:
        raise click.UsageError(str(e))
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    trace = run_model(cfg, receiver_trace=receiver_pcap)
    t1 = time.perf_counter()
    frames = write_pcap(trace, trace.sender, out_dir / "sender.pcap")
    if receiver_pcap:
        write_pcap(trace, trace.receiver, out_dir / "receiver.pcap")
    t2 = time.perf_counter()
    truth = Truth(trace)
    truth.write(out_dir, truth_format)
    s = truth.summary()
    click.echo(f"{frames} frames at the sender; model {t1 - t0:.2f} s, pcap {t2 - t1:.2f} s")
    click.echo(json.dumps({k: s[k] for k in ("throughput_bps", "q_s", "p_s", "b_s", "p_over_q",
                                             "max_rtxq_sack_bytes", "max_rtxq_nr_bytes",
                                             "complete")}))
    if not s["complete"] and duration is None:
        click.echo("warning: the transfer did not complete within the time limit", err=True)


@click.command()
@click.option("--protocol", type=click.Choice(["sctp", "cmt", "tcp", "mptcp"]), default="sctp",
              show_default=True)
@click.option("--sndbuf", "sndbufs", default="8192,32768,65536", show_default=True)
@click.option("--loss", "losses", default="0,0.001,0.005,0.01,0.02,0.05", show_default=True,
              help="loss rates (for cmt/mptcp: of the last path; the others get 0.08 %)")
@click.option("--bandwidth", "bandwidths", default="100", show_default=True, help="Mbit/s, list")
@click.option("--delay", type=float, default=45.0, show_default=True, help="one-way, ms")
@click.option("--paths", type=click.IntRange(1, 16), default=None)
@click.option("--bytes", "nbytes", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option("--seeds", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--payload", type=click.IntRange(1, 1452), default=1000, show_default=True)
@click.option("--threshold", type=float, default=5.0, show_default=True,
              help="gain (%) that defines the region of gain")
@click.option("--scheduler", default=None, help="address of a Dask scheduler (default: local cluster)")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="local cluster workers")
@click.option("--serial", is_flag=True, help="no Dask: run in this process")
@_profile_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True)
def sweep(protocol, sndbufs, losses, bandwidths, delay, paths, nbytes, seeds, payload, threshold,
          scheduler, workers, serial, profile, writer, ack_loss, duration, out_dir):
    """Run a grid loss x send buffer (x bandwidth) for SACK and NR-SACK; write runs.csv,
    gain.csv (throughput, gain, truth p/q per point) and regions.csv (regions of gain)."""
    from .sim import sweep as sw

    n_paths = paths or (2 if protocol in ("cmt", "mptcp") else 1)
    points = sw.grid(protocol=protocol, sndbufs=_ints(sndbufs, "--sndbuf"),
                     losses=_floats(losses, "--loss"), seeds=seeds,
                     bandwidths_mbps=_floats(bandwidths, "--bandwidth"), delay_ms=delay,
                     nbytes=nbytes, paths=n_paths, payload=payload, profile=profile, writer=writer,
                     ack_loss=_floats(ack_loss, "--ack-loss")[0], duration_s=duration)
    for pt in points:  # bad parameters: a usage error here, not a traceback from a worker
        try:
            sw.config_of(pt)
        except ValueError as e:
            raise click.UsageError(str(e))
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runs = sw.run(points, scheduler=scheduler, workers=workers, serial=serial)
    table = sw.gain_table(runs)
    regions = sw.regions_of_gain(table, threshold)
    runs.to_csv(out_dir / "runs.csv", index=False)
    table.to_csv(out_dir / "gain.csv", index=False, float_format="%.4f")
    regions.to_csv(out_dir / "regions.csv", index=False)
    click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    click.echo(f"\nregions of gain (>= {threshold} %):")
    click.echo(regions.to_string(index=False))
    click.echo(f"\n{len(points)} runs in {time.perf_counter() - t0:.1f} s")
