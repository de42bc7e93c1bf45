"""Benchmark of the C plugin: tshark over a >= 1M-packet capture with and without nrsack.so, same run.

    python3 bench/bench_dissector.py [--packets 1000000] [--repeat 3] [--keep DIR] [--compare-so OLD.so ...]
                                     [--mode fields|filter]

The capture is written by the generator's simulator (`nrsack generate simulate`): a lossy SCTP
NR-SACK transfer and a lossy TCP NR-SACK transfer (100-byte payloads so that 1M packets stay small on
disk), merged in time order. Each mode runs tshark without the plugin (an empty plugin folder) and
with it, alternating, `--repeat` times; the best wall time of each is kept and the ratio printed:
  - fields: `-T fields` of frame and transport fields (the protocol tree is built either way; with the
    plugin, its analysis runs on every SCTP/TCP frame and its fields are added);
  - filter: `-q -Y "frame.number == 0"` (a display filter that prints nothing): every packet is
    dissected into a tree and filtered, no output; the plugin's analysis is the only extra work, so
    this is its worst case. (Plain `-q` is not measured: tshark then skips dissection altogether.)
`--compare-so` (repeatable) also times other builds of nrsack.so (say, of an earlier commit) in the same
alternation, so a change's effect is measured under the same load as its baseline; `--mode` times one
mode only.
Goal: at most +10% with the analysis on.
"""

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support import fuzz, tshark  # noqa: E402

PAYLOAD = 100
MODES = {
    "fields": ["-T", "fields", "-e", "frame.number", "-e", "ip.src", "-e", "sctp.chunk_type", "-e", "tcp.ack"],
    "filter": ["-q", "-Y", "frame.number == 0"],
}


def simulate(protocol: str, bytes_: int, out: Path, seed: int) -> Path:
    subprocess.run(["nrsack", "generate", "simulate", "--protocol", protocol, "--ack", "nrsack", "--loss", "0.01",
                    "--payload", str(PAYLOAD), "--bytes", str(bytes_), "--sndbuf", "64000", "--seed", str(seed),
                    "--out", str(out)], check=True, capture_output=True)
    return out / "sender.pcap"


def make_capture(packets: int, work: Path) -> tuple[Path, int]:
    path = work / f"bench-{packets}.pcap"
    if path.exists():
        return path, fuzz.packet_count(path)
    # about 1.5 frames per data packet (acks); half the packets from each protocol
    bytes_each = int(packets / 2 / 1.45 * PAYLOAD)
    parts = [simulate(p, bytes_each, work / p, seed) for seed, p in enumerate(("sctp", "tcp"), 1)]
    subprocess.run(["mergecap", "-F", "pcap", "-w", str(path), *map(str, parts)], check=True)
    for p in parts:
        shutil.rmtree(p.parent)
    return path, fuzz.packet_count(path)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(args, plugin, pcap) -> tuple[float, float]:
    """(wall, CPU) seconds of one tshark run; CPU time is what other load on the machine disturbs least."""
    start, cpu = time.monotonic(), cpu_seconds()
    proc = tshark.run_tshark(args, plugin, pcap=pcap, timeout=3600)
    elapsed, used = time.monotonic() - start, cpu_seconds() - cpu
    if not proc.stdout and "-q" not in args:
        raise RuntimeError("tshark printed nothing")
    return elapsed, used


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="folder for the capture (reused when present)")
    ap.add_argument("--compare-so", type=Path, action="append", default=[],
                    help="another nrsack.so to time in the same runs (repeatable)")
    ap.add_argument("--mode", choices=sorted(MODES), action="append", help="time only this mode (repeatable)")
    a = ap.parse_args()

    work = a.keep or Path(tempfile.mkdtemp(prefix="nrsack-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    plugin_dir = tshark.c_plugin_folder(tshark.build_c_plugin())
    other_dirs = [tshark.c_plugin_folder(so) for so in a.compare_so]
    try:
        t0 = time.monotonic()
        pcap, n = make_capture(a.packets, work)
        print(f"capture: {pcap} ({n} packets, SCTP + TCP NR-SACK, made in {time.monotonic() - t0:.0f} s)")
        if n < a.packets:
            print(f"warning: only {n} packets (< {a.packets})")
        with_plugin, without = tshark.Plugin.c(plugin_dir), tshark.Plugin.none()
        others = [tshark.Plugin.c(d) for d in other_dirs]
        # the plugin must really analyse this capture, or the comparison says nothing
        for plugin in (with_plugin, *others):
            probe = tshark.run_tshark(["-c", "2000", "-T", "fields", "-e", "nrsack.rtxq.bytes"], plugin, pcap=pcap)
            assert any(line.strip() for line in probe.stdout.splitlines()), "no nrsack.rtxq.bytes: plugin not active"
        print(f"best of {a.repeat}, alternating; CPU = user + system time of tshark; spread = (max - min) / min")
        print(f"{'mode':8} {'CPU without':>12} {'CPU with':>10} {'ratio':>7}   {'wall without':>12} {'wall with':>10} "
              f"{'ratio':>7} {'packets/s with':>15}   {'CPU spread without / with':>26}")
        for mode, args in MODES.items():
            if a.mode and mode not in a.mode:
                continue
            base, plug, alts = [], [], [[] for _ in others]
            for _ in range(a.repeat):
                base.append(timed(args, without, pcap))
                plug.append(timed(args, with_plugin, pcap))
                for other, alt in zip(others, alts):
                    alt.append(timed(args, other, pcap))
            bc, pc = min(t[1] for t in base), min(t[1] for t in plug)
            spread = lambda runs: (max(t[1] for t in runs) - min(t[1] for t in runs)) / min(t[1] for t in runs)
            print(f"{mode:8} {bc:12.2f} {pc:10.2f} {pc / bc:7.3f}   {min(t[0] for t in base):12.2f} "
                  f"{min(t[0] for t in plug):10.2f} {min(t[0] for t in plug) / min(t[0] for t in base):7.3f} "
                  f"{n / pc:15.0f}   {spread(base):12.1%} / {spread(plug):.1%}", flush=True)
            for so, alt in zip(a.compare_so, alts):
                oc = min(t[1] for t in alt)
                print(f"{'':8} {'':12} {oc:10.2f} {oc / bc:7.3f}   (--compare-so {so}; spread {spread(alt):.1%}; "
                      f"this build / it: {pc / oc:.3f})", flush=True)
    finally:
        shutil.rmtree(plugin_dir, ignore_errors=True)
        for d in other_dirs:
            shutil.rmtree(d, ignore_errors=True)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
