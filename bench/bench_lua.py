#!/usr/bin/env python3
"""tshark with the Lua plugin vs the C plugin on the same large captures, same run; ratio printed.

    python3 bench/bench_lua.py                    # >= 100k packets per protocol (sctp, tcp, mptcp)
    python3 bench/bench_lua.py --packets 20000 --protocols tcp --repeat 1    # a quick look
    python3 bench/bench_lua.py --fuzz 200         # also: the Lua plugin over the sample corpus
                                                  # corrupted with 200 editcap seeds (no Lua error)
    python3 bench/bench_lua.py --c-plugin /tmp/build/nrsack.so   # against a given C build
    git show REV:lua/nrsack.lua > /tmp/old.lua && python3 bench/bench_lua.py --lua /tmp/old.lua   # an older script

The captures come from the simulator (`nrsack generate simulate --ack nrsack`, 1 % loss, so the
scoreboard has gaps to track), cached in --work. Every run reads the whole capture with
`-T fields` of nrsack.rtxq.bytes, nrsack.blocked, nrsack.stream and -z expert (the fields make tshark
build the tree, so both plugins really analyse every packet); the baseline is tshark without any
plugin printing frame.number. Runs alternate baseline / C / Lua, each --repeat times; the median wall
time and the median CPU time (user + system) are reported, with the Lua / C CPU ratio of each round.
Goal: Lua within 3x of C.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support import fuzz, tshark  # noqa: E402

BYTES_PER_PACKET = {"sctp": 650, "tcp": 650, "mptcp": 650}  # simulated payload bytes per captured frame


def capture(protocol: str, packets: int, work: Path) -> tuple[Path, int]:
    """A simulated NR-SACK transfer with at least `packets` frames (generated once, then reused)."""
    target = work / f"{protocol}-{packets}.pcap"
    if not target.exists():
        size = packets * BYTES_PER_PACKET[protocol]
        while True:
            out = work / f"sim-{protocol}"
            shutil.rmtree(out, ignore_errors=True)
            subprocess.run(["nrsack", "generate", "simulate", "--protocol", protocol, "--ack", "nrsack",
                            "--bytes", str(size), "--loss", "0.01", "--sndbuf", "65536", "--out", str(out)],
                           check=True, capture_output=True)
            if fuzz.packet_count(out / "sender.pcap") >= packets:
                break
            size = int(size * 1.3)
        shutil.move(out / "sender.pcap", target)
        shutil.rmtree(out, ignore_errors=True)
    target.chmod(0o644)
    return target, fuzz.packet_count(target)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], plugin: tshark.Plugin) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one tshark run. CPU time (user + system of the finished child) is
    less disturbed by other jobs on a shared machine than wall time."""
    start, start_cpu = time.perf_counter(), children_cpu()
    proc = tshark.run_tshark(args, plugin, check=False, timeout=3600)
    elapsed, cpu = time.perf_counter() - start, children_cpu() - start_cpu
    if proc.returncode != 0 or "Lua Error" in proc.stdout + proc.stderr:
        raise RuntimeError(f"tshark failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed, cpu


def bench(protocols, packets: int, repeat: int, work: Path, c_plugin: tshark.Plugin, lua: tshark.Plugin) -> list[dict]:
    rows = []
    for protocol in protocols:
        pcap, n = capture(protocol, packets, work)
        # the capture is read in place (no copy inside the timing): world-readable under a 0755 folder
        read = ["-r", str(pcap), "-o", "nrsack.sndbuf:65536"]
        plugin_args = read + ["-T", "fields", "-e", "frame.number", "-e", "nrsack.stream", "-e", "nrsack.rtxq.bytes",
                              "-e", "nrsack.blocked", "-z", "expert"]
        base_args = ["-r", str(pcap), "-T", "fields", "-e", "frame.number", "-z", "expert"]
        times = {"none": [], "c": [], "lua": []}
        for _ in range(repeat):
            times["none"].append(timed(base_args, tshark.Plugin.none()))
            times["c"].append(timed(plugin_args, c_plugin))
            times["lua"].append(timed(plugin_args, lua))
        med = {k: statistics.median(t[0] for t in v) for k, v in times.items()}
        cpu = {k: statistics.median(t[1] for t in v) for k, v in times.items()}
        # ratios of the runs in the same round, so their spread shows how steady the machine was
        round_ratios = sorted(round(lu[1] / c[1], 2) for c, lu in zip(times["c"], times["lua"]))
        rows.append({
            "protocol": protocol, "packets": n, "repeat": repeat,
            "tshark_s": round(med["none"], 2), "c_s": round(med["c"], 2), "lua_s": round(med["lua"], 2),
            "lua_over_c": round(med["lua"] / med["c"], 2),
            "c_over_tshark": round(med["c"] / med["none"], 2), "lua_over_tshark": round(med["lua"] / med["none"], 2),
            "lua_us_per_packet": round((med["lua"] - med["none"]) / n * 1e6, 1),
            "cpu_tshark_s": round(cpu["none"], 2), "cpu_c_s": round(cpu["c"], 2), "cpu_lua_s": round(cpu["lua"], 2),
            "cpu_lua_over_c": round(cpu["lua"] / cpu["c"], 2), "cpu_lua_over_c_per_round": round_ratios,
        })
        print(json.dumps(rows[-1]), flush=True)
    return rows


def fuzz_run(seeds: int, work: Path) -> int:
    """The Lua plugin over the sample corpus corrupted with `seeds` seeds; returns the problem count."""
    sys.path.insert(0, str(REPO / "tests"))
    from test_lua_robustness import fuzz_lua

    corpus, n = fuzz.corpus(work / "fuzz", copies=3)
    start = time.perf_counter()
    runs, problems = fuzz_lua(corpus, range(1, seeds + 1), work / "fuzz")
    print(json.dumps({"fuzz_seeds": seeds, "fuzz_runs": runs, "packets_per_run": n, "packets": n * runs,
                      "problems": len(problems), "seconds": round(time.perf_counter() - start, 1)}))
    for p in problems[:20]:
        print(p)
    return len(problems)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=100_000)
    ap.add_argument("--protocols", default="sctp,tcp,mptcp")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "nrsack-bench-lua")
    ap.add_argument("--fuzz", type=int, default=0, metavar="SEEDS")
    ap.add_argument("--lua", type=Path, default=REPO / "lua" / "nrsack.lua", metavar="SCRIPT",
                    help="the Lua plugin to time (default: lua/nrsack.lua; e.g. an older version for a before/after)")
    ap.add_argument("--c-plugin", type=Path, metavar="NRSACK_SO",
                    help="a built nrsack.so to compare against instead of building dissector/ (e.g. while "
                         "dissector/ is being edited)")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    a.work.chmod(0o755)
    so = a.c_plugin or tshark.build_c_plugin()
    c_plugin = tshark.Plugin.c(tshark.c_plugin_folder(so, a.work / "c-plugin"))
    rows = bench(a.protocols.split(","), a.packets, a.repeat, a.work, c_plugin, tshark.Plugin.lua(a.lua.resolve()))
    for key, name in (("lua_over_c", "wall time"), ("cpu_lua_over_c", "CPU time")):
        worst = max(r[key] for r in rows)
        print(f"Lua / C {name}: worst {worst}x over {', '.join(r['protocol'] for r in rows)} "
              f"(goal: within 3x) -> {'met' if worst <= 3 else 'NOT met'}")
    problems = fuzz_run(a.fuzz, a.work) if a.fuzz else 0
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
