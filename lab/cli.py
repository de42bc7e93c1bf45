"""`nrsack lab run` and `nrsack lab sweep`: real stacks over an emulated path."""

import json
import time
from pathlib import Path

import click

from .config import CONGESTION_CONTROLS, MULTIPATH_STACKS, STACKS

# how the per-path options take their values (README: --delay 10,20 --bandwidth 20,10)
PER_PATH = "a comma-separated list gives one per path (" + ", ".join(MULTIPATH_STACKS) + ")"


def _numbers(text, name, kind=float):
    parts = [x for x in str(text).split(",") if x.strip()]
    try:
        values = [kind(float(x)) for x in parts]
    except ValueError:
        raise click.BadParameter(f"expected a number, got {text!r}", param_hint=name)
    if not values:
        raise click.BadParameter("expected a number", param_hint=name)
    return values


def _one(text, name, kind=float):
    """One value of a list option (a list is a sweep's job)."""
    values = _numbers(text, name, kind)
    if len(values) != 1:
        raise click.BadParameter("give exactly one value", param_hint=name)
    return values[0]


def _per_path(kw):
    """--loss, --delay, --bandwidth as one (loss, delay, bandwidth) per path: a single value holds for
    every path; as many paths as the longest list (linux-mptcp: 2)."""
    lists = {name: _numbers(kw[key], name) for key, name in
             (("loss", "--loss"), ("delay", "--delay"), ("bandwidth", "--bandwidth"))}
    multipath = kw["stack"] in MULTIPATH_STACKS
    n = max([len(v) for v in lists.values()] + [2 if kw["stack"] == "linux-mptcp" else 1])
    for name, values in lists.items():
        if len(values) not in (1, n):
            raise click.BadParameter(f"give one value or one per path ({n} paths)", param_hint=name)
        if len(values) > 1 and not multipath:
            raise click.BadParameter(f"{kw['stack']} runs over one path: give exactly one value",
                                     param_hint=name)
    return list(zip(*(values * (n // len(values)) for values in lists.values())))


DRAIN_HELP = ("usrsctp's sctp_do_drain. --drain (the stack's default): the receiver may renege, so it reports "
              "ordered data held behind a gap renegable (R blocks) and NR-SACKs free only unordered data; "
              "--no-drain: it never reneges and NR-acks all it holds, ordered data too")
CLOCK_HELP = ("virtual: usrsctp's timers, the link and the applications on one event-driven clock (same seed, "
              "same bytes; faster than real time); real: threads in real time. [default: virtual for usrsctp, "
              "real for the other stacks, which run in real time only]")
MTU_HELP = ("usrsctp: the path's IP MTU, bytes; 0: the stack's AF_CONN default, 1280-byte SCTP packets (a message "
            "over 1252 bytes goes as two DATA chunks)")
RENEGABLE_NOTE = ("note: with --drain (usrsctp's default) ordered data held behind a gap is reported renegable, "
                  "so NR-SACKs free only unordered data; --no-drain lets them free ordered data too")


def run_options(f):
    options = [
        click.option("--stack", type=click.Choice(STACKS), default="usrsctp", show_default=True),
        click.option("--ack", type=click.Choice(["sack", "nrsack"]), default="sack", show_default=True),
        click.option("--sndbuf", type=click.IntRange(0, 1 << 30), default=32768, show_default=True,
                     help="the sender's send buffer, bytes (SO_SNDBUF; 0 on linux stacks: none set, autotuned)"),
        click.option("--cc", type=click.Choice(CONGESTION_CONTROLS), default=None,
                     help="linux stacks: congestion control [default: the kernel's]"),
        click.option("--gso/--no-gso", default=False, show_default=True,
                     help="linux stacks: keep the sender's GSO/TSO (its capture shows multi-segment frames)"),
        click.option("--rcvbuf", type=click.IntRange(1, 1 << 30), default=1 << 20, show_default=True),
        click.option("--loss", default="0.01", show_default=True, metavar="RATE[,RATE...]", help=f"forward loss rate; {PER_PATH}"),
        click.option("--ack-loss", type=float, default=0.0, show_default=True, help="loss rate of the ack path"),
        click.option("--loss-model", type=click.Choice(["bernoulli", "gilbert"]), default="bernoulli",
                     show_default=True),
        click.option("--burst", type=float, default=2.0, show_default=True,
                     help="Gilbert-Elliott mean burst length, packets"),
        click.option("--delay", default="45", show_default=True, metavar="MS[,MS...]", help=f"one-way delay, ms; {PER_PATH}"),
        click.option("--bandwidth", default="100", show_default=True, metavar="MBPS[,MBPS...]", help=f"bandwidth, Mbit/s; {PER_PATH}"),
        click.option("--queue", type=int, default=100, show_default=True, help="drop-tail queue, packets"),
        click.option("--bytes", "nbytes", type=click.IntRange(min=1), default=1_000_000, show_default=True),
        click.option("--message", type=click.IntRange(1, 65000), default=1000, show_default=True,
                     help="bytes per write (one DATA chunk each)"),
        click.option("--unordered", is_flag=True, help="send every message unordered"),
        click.option("--rto-min", type=click.IntRange(min=0), default=0, help="ms; 0: the stack's default"),
        click.option("--sack-delay", type=click.IntRange(min=0), default=0, help="ms; 0: the stack's default"),
        click.option("--drain/--no-drain", default=True, show_default=True, help=DRAIN_HELP),
        click.option("--mtu", type=click.IntRange(min=0), default=0,
                     help=MTU_HELP),
        click.option("--clock", type=click.Choice(["virtual", "real"]), default=None, help=CLOCK_HELP),
        click.option("--seed", type=int, default=1, show_default=True),
        click.option("--timeout", type=float, default=300.0, show_default=True, help="seconds per run"),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.group()
def lab():
    """Real stacks (usrsctp, Linux TCP and MPTCP) over emulated paths, NR-SACK on and off."""


def config_from(kw):
    from .config import LabConfig

    (loss, delay, bandwidth), *more_paths = _per_path(kw)
    try:
        return LabConfig(stack=kw["stack"], ack=kw["ack"], sndbuf=kw["sndbuf"], rcvbuf=kw["rcvbuf"],
                         bytes=kw["nbytes"], message=kw["message"], loss=loss,
                         ack_loss=kw["ack_loss"], loss_model=kw["loss_model"], burst=kw["burst"],
                         delay_ms=delay, bandwidth_mbps=bandwidth, more_paths=tuple(more_paths), queue=kw["queue"],
                         seed=kw["seed"], unordered=kw["unordered"], timeout_s=kw["timeout"],
                         rto_min_ms=kw["rto_min"], sack_delay_ms=kw["sack_delay"], drain=kw["drain"],
                         clock=kw["clock"], cc=kw["cc"] or "", gso=kw["gso"], mtu=kw["mtu"])
    except ValueError as e:
        raise click.UsageError(str(e))


SHARED_KEYS = ("q_s", "b_s", "p_s", "b_over_q", "p_over_q", "sndbuf_bytes", "throughput_bps", "complete")
WRITER_KEYS = ("app_blocked_s", "app_blocked_unsent_s", "app_blocked_wakeup_s", "app_blocked_over_q")


def truth_beside_analyzer(truth, out_dir):
    """The stack's truth and `nrsack analyze` on the sender's capture (its own B: no --sndbuf) under
    the same names, and the writer's whole wait under its own: one line each."""
    from .capture import sender_entry

    lines = ["truth:   " + json.dumps({k: truth.get(k) for k in SHARED_KEYS if k in truth})]
    try:
        a = sender_entry(Path(out_dir) / "sender.pcap").summary
        reasons = {k: v for k, v in a.items() if k.endswith("_reason") and v}
        lines.append("analyze: " + json.dumps({k: a.get(k) for k in SHARED_KEYS + ("sndbuf_estimated",) if k in a}
                                              | reasons, default=float))
    except Exception as e:  # the run stands; the analyzer's failure is one line beside it
        lines.append(f"analyze: cannot analyze the sender's capture: {e}")
    lines.append("writer:  " + json.dumps({k: truth[k] for k in WRITER_KEYS if k in truth}))
    return lines


@lab.command()
@run_options
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True)
def run(out_dir, **kw):
    """One transfer; writes sender.pcap, receiver.pcap, the truth files and truth.json."""
    from .runner import LabError, run_config

    cfg = config_from(kw)
    if cfg.stack.startswith("usrsctp") and cfg.ack == "nrsack" and cfg.drain and not cfg.unordered:
        click.echo(RENEGABLE_NOTE, err=True)
    t0 = time.perf_counter()
    try:
        s = run_config(cfg, out_dir)
    except LabError as e:
        raise click.ClickException(str(e))
    click.echo(f"{cfg.stack} {cfg.ack}: {s['counters']['packets_forward']} packets forward "
               f"({s['counters']['lost_forward']} lost), wall {time.perf_counter() - t0:.2f} s")
    for line in truth_beside_analyzer(s, out_dir):
        click.echo(line)
    if not s["complete"]:
        click.echo("warning: the transfer did not complete within the time limit", err=True)


@lab.command()
@click.option("--stack", type=click.Choice(["usrsctp", "linux-tcp", "linux-mptcp"]), default="usrsctp",
              show_default=True, help="usrsctp pairs SACK and NR-SACK runs; linux-tcp and linux-mptcp (root; 2 paths alike) run "
                   "SACK, one run at a time, and table the analyzer's what-if (Linux has no NR-SACK)")
@click.option("--sndbuf", "sndbufs", default="8192,32768,65536", show_default=True)
@click.option("--loss", "losses", default="0,0.01,0.02", show_default=True)
@click.option("--delay", type=float, default=45.0, show_default=True, help="one-way, ms")
@click.option("--bandwidth", type=float, default=100.0, show_default=True, help="Mbit/s")
@click.option("--bytes", "nbytes", type=click.IntRange(min=1), default=1_000_000, show_default=True)
@click.option("--message", type=click.IntRange(1, 65000), default=None,
              help="bytes per write [default: 1000; linux-tcp 1448, one segment]")
@click.option("--seeds", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--drain/--no-drain", default=True, show_default=True, help=DRAIN_HELP)
@click.option("--mtu", type=click.IntRange(min=0), default=0,
              help=MTU_HELP)
@click.option("--clock", type=click.Choice(["virtual", "real"]), default=None, help=CLOCK_HELP)
@click.option("--rto-min", type=click.IntRange(min=0), default=0, help="ms; 0: the stack's default")
@click.option("--cc", type=click.Choice(CONGESTION_CONTROLS), default=None,
              help="linux stacks: congestion control [default: the kernel's]")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="seconds per run")
@click.option("--threshold", type=float, default=5.0, show_default=True,
              help="gain (%) that defines the region of gain")
@click.option("--scheduler", default=None, help="address of a Dask scheduler (default: local cluster)")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="local cluster workers")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True)
def sweep(stack, sndbufs, losses, delay, bandwidth, nbytes, message, seeds, drain, mtu, clock, rto_min, cc, timeout,
          threshold, scheduler, workers, out_dir):
    """Loss x send buffer for SACK and NR-SACK on a real stack; writes runs.csv, gain.csv and
    regions.csv as `nrsack generate sweep` does, and every run's files under runs/. linux-tcp:
    runs.csv and whatif.csv (what NR-SACKs would have freed, from the analyzer)."""
    from rich.progress import Progress

    from nrsack.generator.sim import sweep as sim_sweep

    from . import sweep as sw
    from .config import LabConfig

    paired = stack in sw.PAIRED_STACKS
    if not paired and scheduler:
        raise click.UsageError(f"{stack} runs one at a time on this machine (root, namespaces): no --scheduler")
    try:
        base = LabConfig(stack=stack, delay_ms=delay, bandwidth_mbps=bandwidth, bytes=nbytes, drain=drain, mtu=mtu,
                         clock=clock, rto_min_ms=rto_min, cc=cc or "", timeout_s=timeout, message=message or (1000 if paired else 1448),
                         more_paths=((0.0, delay, bandwidth),) if stack in MULTIPATH_STACKS else ())
        configs = sw.grid(base, [int(_one(b, "--sndbuf")) for b in sndbufs.split(",") if b.strip()],
                          [_one(x, "--loss") for x in losses.split(",") if x.strip()], seeds)
    except ValueError as e:  # grid() builds every config: a bad one fails here, not in a worker
        raise click.UsageError(str(e))
    if not paired:
        from .namespaces import namespaces_unavailable

        reason = namespaces_unavailable(stack)
        if reason:
            raise click.ClickException(reason)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with Progress(transient=True) as bar:
        task = bar.add_task(f"{len(configs)} {stack} runs", total=len(configs))
        runs = sw.run(configs, out_dir, scheduler=scheduler, workers=workers,
                      progress=lambda: bar.advance(task))
    runs = runs.sort_values(["sndbuf", "loss", "seed", "ack"]).reset_index(drop=True)
    if paired:
        gain = sim_sweep.gain_table(runs)
        tables = {"runs": runs, "gain": gain, "regions": sim_sweep.regions_of_gain(gain, threshold)}
    else:
        tables = {"runs": runs, "whatif": sw.whatif_table(runs)}
    for name, frame in tables.items():
        frame.to_csv(out_dir / f"{name}.csv", index=False, float_format="%.6g")
    click.echo(tables["gain" if paired else "whatif"].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if paired:
        click.echo(f"\nregions of gain (>= {threshold} %):\n{tables['regions'].to_string(index=False)}")
    click.echo(f"\n{len(configs)} runs in {time.perf_counter() - t0:.1f} s")
