#!/usr/bin/env python3
"""tshark alone, with the C plugin and with the Lua plugin on a capture of many short TCP flows: wall
time, CPU time and peak RSS per flow count, with ratios against tshark alone in the same run.

    python3 bench/bench_plugin_flows.py [--flows 20000 200000] [--repeat 1] [--c-plugin NRSACK_SO]
    python3 bench/bench_plugin_flows.py --flood syn data --flows 1000000 --max-memory-mb 12000   # floods (issue 29)
    git show REV:lua/nrsack.lua > /tmp/old.lua && python3 bench/bench_plugin_flows.py --lua-baseline /tmp/old.lua

The capture is bench/bench_many_flows.py's (10 frames a complete connection, 200 open at a time). Each
run reads it with `-T fields` (frame.number and tcp.stream; with a plugin also nrsack.stream,
nrsack.rtxq.bytes and nrsack.gap_open: fields make tshark build the tree, so the plugins analyse every
packet) in a fresh child process, so the child's peak RSS is that tshark's alone. Both plugins give a
flow's state back when it ends (decisions.md 44): what they add over tshark alone should be
their per-frame results, not every flow's scoreboard. Printed per run: wall s, CPU s, peak RSS MB, and
per plugin the ratios to tshark alone and the memory it adds per flow (peak minus tshark's, divided by
the flow count); with --repeat > 1 the medians. --flood KIND... reads floods of flows that never end
instead (tests/support/hostile.write_flood: "syn" one SYN a flow, "data" a handshake and 100 bytes acked,
"unacked" the same never acked), where the plugins' budget of open flows binds (decisions.md 84).
--max-memory-mb caps every tshark's address space (RLIMIT_AS), so a run that would exhaust the machine
fails instead (printed as "over the cap"). --lua-baseline SCRIPT also runs another version of
the Lua plugin, in the same run (a before / after).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from bench_many_flows import build  # noqa: E402
from support import tshark  # noqa: E402
from support.hostile import FLOOD_KINDS, write_flood  # noqa: E402

BASE_FIELDS = ["frame.number", "tcp.stream"]
PLUGIN_FIELDS = BASE_FIELDS + ["nrsack.stream", "nrsack.rtxq.bytes", "nrsack.gap_open"]


def plugin_of(kind: str, c_folder: str) -> tshark.Plugin:
    """kind: none, c, lua, or lua:SCRIPT (another version of the Lua plugin)."""
    if kind.startswith("lua:"):
        return tshark.Plugin.lua(Path(kind[4:]))
    return {"none": tshark.Plugin.none(), "c": tshark.Plugin.c(c_folder), "lua": tshark.LUA_PLUGIN}[kind]


def measure(kind: str, pcap: Path, c_folder: Path, cap_mb: int = 0) -> dict:
    """One tshark run in a fresh process (tshark.run_tshark_measured): its peak RSS is that tshark's alone.
    cap_mb: its address space's limit (0: none); a run past it is reported, not raised."""
    fields = PLUGIN_FIELDS if kind != "none" else BASE_FIELDS
    args = ["-r", str(pcap), "-T", "fields", *(x for f in fields for x in ("-e", f))]
    start = time.perf_counter()
    proc, peak_mb, cpu_s = tshark.run_tshark_measured(args, plugin_of(kind, str(c_folder)), cap_mb=cap_mb, timeout=7200)
    wall = time.perf_counter() - start
    failed = proc.returncode != 0 or "Lua Error" in proc.stderr or "Lua: Error" in proc.stderr
    if failed and not cap_mb:
        raise RuntimeError(f"tshark ({kind}) failed, exit {proc.returncode}: {proc.stderr[-2000:]}")
    analysed = sum(1 for line in proc.stdout.splitlines() if line.count("\t") >= 2 and line.split("\t")[2])
    return {"wall_s": wall, "cpu_s": cpu_s, "peak_mb": peak_mb, "frames": proc.stdout.count("\n"),
            "frames_with_nrsack_stream": analysed, "failed": int(failed)}


def median_of(rs: list) -> dict:
    return {k: statistics.median(r[k] for r in rs) for k in rs[0]}


def result_line(label: str, runs: dict, kind: str, flows: int, cap_mb: int) -> str:
    """The printed line of one kind: its medians, and for a plugin its ratios to tshark alone (measured first)."""
    m, base = median_of(runs[kind]), median_of(runs["none"])
    line = (f"  {label:<22} {m['wall_s']:7.1f} s wall {m['cpu_s']:7.1f} s CPU {m['peak_mb']:7.0f} MB peak RSS "
            f"{int(m['frames'])} frames")
    if m["failed"]:
        return line + f"   failed (over the cap of {cap_mb} MB?)"
    if kind != "none":
        added_kb = (m["peak_mb"] - base["peak_mb"]) * 1024 / flows
        line += (f"   x{m['wall_s'] / base['wall_s']:.2f} wall x{m['cpu_s'] / base['cpu_s']:.2f} CPU "
                 f"x{m['peak_mb'] / base['peak_mb']:.2f} RSS; +{added_kb:.2f} KB a flow; "
                 f"{int(m['frames_with_nrsack_stream'])} frames analysed")
    return line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flows", type=int, nargs="+", default=[20000, 200000])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--c-plugin", type=Path, metavar="NRSACK_SO", help="a built nrsack.so (default: build dissector/)")
    ap.add_argument("--lua-baseline", type=Path, metavar="SCRIPT", help="also time this version of the Lua plugin")
    ap.add_argument("--flood", nargs="+", choices=FLOOD_KINDS, help="floods of never-ending flows instead")
    ap.add_argument("--max-memory-mb", type=int, default=0, help="cap each tshark's address space (MB)")
    ap.add_argument("--plugins", nargs="+", choices=["c", "lua"], default=["c", "lua"],
                    help="which plugins to run beside tshark alone (default both)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="nrsack-bench-flows-") as work:
        work = Path(work)
        work.chmod(0o755)  # tshark runs as nobody and reads the capture in place
        so = a.c_plugin or tshark.build_c_plugin()
        c_folder = tshark.c_plugin_folder(so, work / "c-plugin")
        for flows, flood in ((f, k) for f in sorted(a.flows) for k in (a.flood or [None])):
            pcap = work / f"flows-{flows}.pcap"
            if flood:
                write_flood(pcap, flows, flood)
            else:
                build(pcap, flows)
            pcap.chmod(0o644)
            labels = {"none": "tshark alone", "c": "tshark + C plugin", "lua": "tshark + Lua plugin"}
            labels = {kind: label for kind, label in labels.items() if kind == "none" or kind in a.plugins}
            if a.lua_baseline:
                baseline = work / "baseline.lua"  # readable by the unprivileged tshark
                baseline.write_bytes(a.lua_baseline.read_bytes())
                baseline.chmod(0o644)
                labels[f"lua:{baseline}"] = "tshark + Lua baseline"
            runs = {kind: [] for kind in labels}
            print(f"{flows} {flood + ' flood ' if flood else ''}flows ({pcap.stat().st_size >> 20} MB), {a.repeat} run(s) "
                  f"each:", flush=True)
            for round_ in range(a.repeat):  # alternating, so a busy spell of the machine hits all three
                for kind, label in labels.items():
                    runs[kind].append(measure(kind, pcap, c_folder, a.max_memory_mb))
                    if round_ == a.repeat - 1:  # each line as soon as it is known: a million flows take long
                        print(result_line(label, runs, kind, flows, a.max_memory_mb), flush=True)
            pcap.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
