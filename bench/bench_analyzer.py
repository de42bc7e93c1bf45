"""Benchmark of the analyzer against two baselines measured in the same run.

    python3 bench/bench_analyzer.py [--packets 1000000] [--flows 16] [--keep DIR]
                                    [--stream-packets 10000000 [--stream-tshark]] [--baseline PYTHON]
                                    [--repeat 3] [--instructions]

Writes a capture of interleaved lossy TCP (SACK) and SCTP (NR-SACK) transfers, snaplen 70 as
`tcpdump -s 70` would (headers whole, payload lengths from the IP headers), then times, each in a
fresh process (CPU time and peak RSS):
  - summary:  `nrsack analyze CAPTURE --format json` as users run it: every flow's p/q, B, q, b and
              throughput, the capture streamed one chunk at a time;
  - analyzer: `nrsack.analyzer.analyze(path)` in memory, summary + RtxQ + blocking DataFrames built;
  - parquet:  `stream.analyze_to_files(path, out, "parquet")`, what `nrsack analyze --stream --format
              parquet` runs: the summary, RtxQ and blocking tables written to Parquet files,
              one chunk of the capture in memory at a time;
  - tshark:   `tshark -T fields` of the fields the analysis needs, read into pandas (fields only:
              no scoreboard, so the ratio favours tshark);
  - dpkt:     a Python loop over the capture with dpkt decoding the same fields into pandas.
  - baseline: the summary again, run by another checkout's interpreter (--baseline, e.g. a venv with
              an older nrsack installed), so a change's cost is a ratio measured in the same run.
Then, on two TCP captures (snaplen 70): one long SACK transfer and the TCP half of the capture above
(its TCP flows, half the packets of --stream-packets, else of --packets), the summary against tcptrace (`tcptrace -n -l -r`, Debian package
tcptrace: per-connection TCP analysis, retransmissions and RTT, no scoreboard) and against libpcap's own
read loop (bench/pcap_read_loop.c: the limit of any reader built on libpcap), each in the same run,
printing nrsack's CPU as a multiple of theirs (issue 28's target: at most 0.5x tcptrace's).
Each analyzer mode also runs on a capture half as long, so the memory growth per packet is visible.
--repeat N runs the contenders N times in turn, and each one's fastest run (CPU) counts.
--instructions (with --baseline) also counts both summaries' instructions on the half capture under
valgrind's callgrind: a ratio that a loaded machine cannot move.
--stream-packets N streams a capture of N packets (e.g. 10M) with summary and parquet and reports
their speed and peak memory, and each again with `--jobs 2` (state/workers.py: the wall-time ratio, and
whether the JSON is the same); --stream-tshark also runs tshark on it (minutes), for the ratio at that
size in the same run (without it, the ratio uses tshark's CPU time per packet at --packets).
Needs: tshark, `pip install dpkt` (bench only).
"""

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

SNAPLEN = 70  # every record: acks whole, data headers whole
MSS = 1000
EPOCH_NS = 1_700_000_000 * 10**9


def flow_packets(kind, n, rng):
    """One transfer as rows (is_ack, seq/tsn, ack/cum, gap block (lo, hi) or (0, 0)): data in order,
    one loss every ~200 packets with SACK blocks growing until the retransmission is acked."""
    rows = []
    unit = MSS if kind == "tcp" else 1
    base = (1 << 32) - 40 * unit  # every flow wraps its sequence space early on
    sent = 0
    cum = 0
    lost = None
    while len(rows) < n:
        seq = (base + sent * unit) & 0xFFFFFFFF
        rows.append((0, seq, 0, 0, 0))
        if lost is None and rng.random() < 0.01:
            lost = sent
        elif lost is not None and sent - lost > 6:
            rows.append((0, (base + lost * unit) & 0xFFFFFFFF, 0, 0, 0))  # retransmission
            lost = None
        sent += 1
        if sent % 2 == 0:
            if lost is None:
                cum = sent
                rows.append((1, 0, (base + cum * unit) & 0xFFFFFFFF, 0, 0))
            else:
                cum = lost
                rows.append((1, 0, (base + cum * unit) & 0xFFFFFFFF, lost + 1, sent))
    return rows[:n], base


def build_capture(path, packets, flows, seed=1, tcp_only=False):
    """Fixed-size records assembled with numpy: Ethernet/IPv4 + TCP (SACK option) or SCTP (DATA / NR-SACK);
    flows alternate TCP and SCTP, or are all TCP (tcp_only: what tcptrace reads)."""
    import numpy as np  # here only: every contender's process imports this file, and only its own work counts

    from nrsack.generator.pcapfile import file_header

    rng = np.random.default_rng(seed)
    per_flow = packets // flows
    records = np.zeros((per_flow * flows, 16 + SNAPLEN), np.uint8)
    times = np.zeros(per_flow * flows, np.int64)
    r = 0
    for f in range(flows):
        kind = "tcp" if f % 2 == 0 or tcp_only else "sctp"
        rows, base = flow_packets(kind, per_flow, rng)
        arr = np.array(rows, dtype=np.int64)
        is_ack, seq, ack, glo, ghi = arr.T
        k = len(arr)
        rec = records[r:r + k]
        t = EPOCH_NS + np.arange(k) * 40_000 * flows + f * 40_000  # flows interleave in time
        times[r:r + k] = t
        wire = np.where(is_ack == 1, SNAPLEN, 14 + 20 + (20 if kind == "tcp" else 28) + MSS)
        rec[:, 0:4] = np.frombuffer((t // 10**9).astype("<u4").tobytes(), np.uint8).reshape(-1, 4)
        rec[:, 4:8] = np.frombuffer(((t % 10**9) // 1000).astype("<u4").tobytes(), np.uint8).reshape(-1, 4)
        rec[:, 8:12] = np.frombuffer(np.full(k, SNAPLEN, "<u4").tobytes(), np.uint8).reshape(-1, 4)
        rec[:, 12:16] = np.frombuffer(wire.astype("<u4").tobytes(), np.uint8).reshape(-1, 4)
        eth = rec[:, 16:30]
        eth[:, 12:14] = (0x08, 0x00)
        ip = rec[:, 30:50]
        ip[:, 0] = 0x45
        ip[:, 2:4] = np.frombuffer((wire - 14).astype(">u2").tobytes(), np.uint8).reshape(-1, 2)
        ip[:, 8] = 64
        ip[:, 9] = 6 if kind == "tcp" else 132
        a = np.array([10, 0, f // 255, f % 255 + 1], np.uint8)  # host part 1..255: any number of flows
        b = np.array([10, 1, f // 255, f % 255 + 1], np.uint8)
        ip[:, 12:16] = np.where(is_ack[:, None] == 1, b, a)
        ip[:, 16:20] = np.where(is_ack[:, None] == 1, a, b)
        l4 = rec[:, 50:]
        be32 = lambda v: np.frombuffer((v & 0xFFFFFFFF).astype(">u4").tobytes(), np.uint8).reshape(-1, 4)
        if kind == "tcp":
            sport, dport = np.where(is_ack == 1, 80, 40000), np.where(is_ack == 1, 40000, 80)
            l4[:, 0:2] = np.frombuffer(sport.astype(">u2").tobytes(), np.uint8).reshape(-1, 2)
            l4[:, 2:4] = np.frombuffer(dport.astype(">u2").tobytes(), np.uint8).reshape(-1, 2)
            l4[:, 4:8] = be32(np.where(is_ack == 1, 1, seq))
            l4[:, 8:12] = be32(np.where(is_ack == 1, ack, 1))
            has_sack = (is_ack == 1) & (ghi > 0)
            l4[:, 12] = np.where(is_ack == 1, 9 << 4, 5 << 4)  # acks: 36-byte header (NOP NOP SACK NOPs)
            l4[:, 13] = 0x10
            l4[:, 14:16] = (0xFF, 0xFF)
            opt = l4[:, 20:36]
            opt[is_ack == 1, :] = 1  # NOPs, with a SACK option when there is a block
            opt[has_sack, 2:4] = (5, 10)
            opt[has_sack, 4:8] = be32(base + glo * MSS)[has_sack]
            opt[has_sack, 8:12] = be32(base + ghi * MSS)[has_sack]
        else:
            sport, dport = np.where(is_ack == 1, 5001, 5000), np.where(is_ack == 1, 5000, 5001)
            l4[:, 0:2] = np.frombuffer(sport.astype(">u2").tobytes(), np.uint8).reshape(-1, 2)
            l4[:, 2:4] = np.frombuffer(dport.astype(">u2").tobytes(), np.uint8).reshape(-1, 2)
            l4[:, 4:8] = be32(np.where(is_ack == 1, 0x1111 + f, 0x2222 + f))  # tags differ per association
            chunk = l4[:, 12:]
            data = is_ack == 0
            chunk[data, 0] = 0
            chunk[data, 1] = 3
            chunk[data, 2:4] = np.frombuffer(np.full(data.sum(), 16 + MSS, ">u2").tobytes(), np.uint8).reshape(-1, 2)
            chunk[data, 4:8] = be32(seq)[data]
            acks = ~data
            has_gap = acks & (ghi > 0)
            chunk[acks, 0] = 0x10
            chunk[acks, 2:4] = (0, 24)
            chunk[acks, 4:8] = be32(ack - 1)[acks]  # cum TSN = last TSN received in order
            chunk[acks, 8:12] = (0, 1, 0, 0)
            # one NR block (TSNs glo .. ghi-1 as offsets from cum) or else one duplicate TSN
            chunk[has_gap, 14:16] = (0, 1)
            off_lo, off_hi = glo - (ack - base) + 1, ghi - 1 - (ack - base) + 1
            chunk[has_gap, 20:22] = np.frombuffer(off_lo[has_gap].astype(">u2").tobytes(), np.uint8).reshape(-1, 2)
            chunk[has_gap, 22:24] = np.frombuffer(off_hi[has_gap].astype(">u2").tobytes(), np.uint8).reshape(-1, 2)
            no_gap = acks & ~has_gap
            chunk[no_gap, 16:18] = (0, 1)
            chunk[no_gap, 20:24] = be32(ack - 1)[no_gap]
        r += k
    records = records[np.argsort(times[:r], kind="stable")]
    with open(path, "wb") as out:
        out.write(file_header(snaplen=SNAPLEN))
        out.write(records.tobytes())
    return r


def carry_payload(source, path, batch=65536):
    """build_capture's capture with every record carried whole (captured length = wire length, the payload
    zeros), as an unsliced capture of bulk transfers holds: mostly payload bytes, few packets per GiB. The
    records are copied a batch at a time, so a 2 GiB capture needs no more memory than a batch."""
    import numpy as np

    from nrsack.generator.pcapfile import file_header

    records = np.memmap(source, np.uint8, "r", offset=24).reshape(-1, 16 + SNAPLEN)
    with open(path, "wb") as out:
        out.write(file_header(snaplen=65535))
        for first in range(0, len(records), batch):
            part = np.array(records[first:first + batch])
            wire = part[:, 12:16].copy().view("<u4").ravel()
            part[:, 8:12] = part[:, 12:16]
            room = int(wire.max()) + 16
            whole = np.zeros((len(part), room), np.uint8)
            whole[:, :16 + SNAPLEN] = part
            keep = np.arange(room)[None, :] < (16 + wire)[:, None]
            out.write(whole[keep].tobytes())
    return len(records)


TSHARK_FIELDS = ["frame.number", "frame.time_epoch", "ip.src", "ip.dst", "tcp.srcport", "tcp.dstport", "tcp.seq_raw",
                 "tcp.ack_raw", "tcp.len", "tcp.options.sack_le", "tcp.options.sack_re", "sctp.srcport",
                 "sctp.dstport", "sctp.data_tsn", "sctp.chunk_length", "sctp.sack_cumulative_tsn_ack",
                 "sctp.nr_sack_cumulative_tsn_ack", "sctp.nr_sack_nr_gap_block_start", "sctp.nr_sack_nr_gap_block_end"]


def child_analyzer(path):
    from nrsack.analyzer import analyze

    # The call's own CPU beside the process's: the imports (pandas alone ~0.3 s) are a cost per process,
    # which the start-up bench (bench_startup.py) measures, not a cost per packet (decisions.md).
    start = time.process_time()
    analysis = analyze(path)
    return {"entries": len(analysis.summary), "rtxq_rows": len(analysis.rtxq), "blocking_rows": len(analysis.blocking),
            "events": len(analysis.capture.ev), "call_cpu_s": time.process_time() - start}


def child_summary(path, python=None, jobs=1):
    command = [python, "-I", "-c", "from nrsack.cli import main; main()"] if python else ["nrsack"]
    threads = ["--jobs", str(jobs)] if jobs > 1 else []  # (a baseline may predate the flag)
    out = subprocess.run([*command, "analyze", path, "--format", "json", *threads], capture_output=True, text=True,
                         check=True)
    return {"entries": len(json.loads(out.stdout)["flows"]), "sha256": hashlib.sha256(out.stdout.encode()).hexdigest()}


def child_summary_jobs(path):
    return child_summary(path, jobs=JOBS)


def child_baseline(path):
    return child_summary(path, os.environ["NRSACK_BENCH_BASELINE"])


def child_parquet(path, jobs=1):
    import tempfile

    from nrsack.analyzer.views import stream

    with tempfile.TemporaryDirectory(prefix="nrsack-bench-out-") as out:
        result = stream.analyze_to_files(path, out, "parquet", jobs=jobs)
        return {"entries": len(result.summary), "events": result.capture.offset}


def child_parquet_jobs(path):
    return child_parquet(path, jobs=JOBS)


def child_tshark(path):
    import pandas as pd

    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a",
           "-o", "tcp.analyze_sequence_numbers:FALSE", "-o", "tcp.relative_sequence_numbers:FALSE"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    frame = pd.read_csv(proc.stdout, sep="\t", header=None, names=TSHARK_FIELDS, dtype=str)
    if proc.wait() != 0 or frame.empty:
        raise SystemExit(f"tshark failed: {proc.stderr.read().decode()[-300:]}")
    return {"rows": len(frame)}


def child_dpkt(path):
    import dpkt
    import pandas as pd

    cols = {k: [] for k in ("frame", "time", "src", "dst", "sport", "dport", "seq", "ack", "len", "sack")}
    with open(path, "rb") as handle:
        for n, (ts, buf) in enumerate(dpkt.pcap.Reader(handle), start=1):
            ip = dpkt.ethernet.Ethernet(buf).data
            l4 = ip.data
            cols["frame"].append(n)
            cols["time"].append(ts)
            cols["src"].append(ip.src)
            cols["dst"].append(ip.dst)
            if isinstance(l4, dpkt.tcp.TCP):
                cols["sport"].append(l4.sport)
                cols["dport"].append(l4.dport)
                cols["seq"].append(l4.seq)
                cols["ack"].append(l4.ack)
                cols["len"].append(ip.len - ip.hl * 4 - l4.off * 4)
                sack = [v for k, v in dpkt.tcp.parse_opts(l4.opts) if k == 5]
                cols["sack"].append(sack[0] if sack else None)
            elif isinstance(l4, dpkt.sctp.SCTP):
                cols["sport"].append(l4.sport)
                cols["dport"].append(l4.dport)
                chunk = l4.chunks[0] if l4.chunks else None
                body = bytes(chunk.data) if chunk is not None else b""
                cols["seq"].append(int.from_bytes(body[0:4], "big") if chunk is not None and chunk.type == 0 else None)
                cols["ack"].append(int.from_bytes(body[0:4], "big") if chunk is not None and chunk.type in (3, 16) else None)
                cols["len"].append(chunk.len - 16 if chunk is not None and chunk.type == 0 else 0)
                cols["sack"].append(body[16:24] if chunk is not None and chunk.type == 16 else None)
            else:
                for k in ("sport", "dport", "seq", "ack", "len", "sack"):
                    cols[k].append(None)
    return {"rows": len(pd.DataFrame(cols))}


JOBS = 2  # the threads of the --jobs rows (`nrsack analyze --jobs`)
CHILDREN = {"summary": child_summary, "analyzer": child_analyzer, "parquet": child_parquet, "tshark": child_tshark,
            "dpkt": child_dpkt, "baseline": child_baseline, "summary-jobs": child_summary_jobs,
            "parquet-jobs": child_parquet_jobs}
MINE = ("summary", "analyzer", "parquet")


def build(path, packets, flows):
    """Writes the capture in a child process: a child's peak RSS starts from its parent's at fork, so
    the parent must never hold a capture's worth of memory. -> packets written."""
    out = subprocess.run([sys.executable, __file__, "--build", str(packets), path, "--flows", str(flows)],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


def measure(name, path):
    """Runs one contender in a fresh interpreter: wall seconds and peak RSS (MB)."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", name, path], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    info = json.loads(out.stdout.strip().splitlines()[-1])
    info["wall_s"] = wall
    return info


def instructions(program, path, module=False) -> int:
    """Instructions `nrsack analyze PATH --format json` executes (valgrind's callgrind): a figure load cannot move."""
    command = [program, "-I", "-c", "from nrsack.cli import main; main()"] if module else [program]
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command, "analyze", path,
                              "--format", "json"], capture_output=True, text=True, check=True)
    return int(run.stderr.rsplit("refs:", 1)[1].split()[0].replace(",", ""))


def against_tcptrace(folder, packets, flows, repeat):
    """The summary's CPU against tcptrace's and libpcap's read loop's on two TCP captures: one long transfer,
    and `flows` interleaved ones (the TCP half of the main capture), in round robin, the fastest run of each."""
    import bench_flows

    loop = bench_flows.build_loop(folder)
    print(f"{'TCP capture':<22} {'contender':<10} {'CPU s':>7} {'packets/s (CPU)':>16} {'nrsack / it (CPU)':>18}")
    for label, count in (("1 long transfer", 1), (f"{flows} flows (TCP half)", flows)):
        path = os.path.join(folder, f"tcp-{count}.pcap")
        written = int(subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import bench_analyzer "
                                      "as b; print(b.build_capture(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), tcp_only=True))",
                                      os.path.dirname(os.path.abspath(__file__)), path, str(packets), str(count)],
                                     capture_output=True, text=True, check=True).stdout.split()[-1])
        found = bench_flows.commands(path, loop, skip=("tshark",))
        best = {}
        for _ in range(max(1, repeat)):
            for name, command in found.items():
                best[name] = min(best.get(name, float("inf")), bench_flows.cpu_seconds(command))
        for name, cpu in best.items():
            ratio = "" if name == "nrsack" else f"{best['nrsack'] / cpu:.2f}"
            print(f"{label:<22} {name:<10} {cpu:7.2f} {written / cpu:16,.0f} {ratio:>18}")
        os.remove(path)


def fastest(name, path, repeat):
    return min((measure(name, path) for _ in range(max(1, repeat))), key=lambda run: run["cpu_s"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packets", type=int, default=1_000_000)
    parser.add_argument("--flows", type=int, default=16)
    parser.add_argument("--keep", default=None, help="folder to keep the capture in")
    parser.add_argument("--skip", default="", help="comma list of baselines to skip (tshark, dpkt, tcptrace)")
    parser.add_argument("--stream-packets", type=int, default=0, metavar="N",
                        help="also stream a capture of N packets (e.g. 10000000): speed and peak memory")
    parser.add_argument("--stream-tshark", action="store_true", help="also run tshark on the --stream-packets capture")
    parser.add_argument("--baseline", metavar="PYTHON", help="an interpreter with another nrsack: its summary too")
    parser.add_argument("--repeat", type=int, default=1, help="runs per contender, round robin; the fastest (CPU) counts")
    parser.add_argument("--instructions", action="store_true",
                        help="with --baseline: also count both summaries' instructions under valgrind (~1 min each)")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--build", nargs=2, metavar=("PACKETS", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        print(build_capture(args.build[1], int(args.build[0]), args.flows))
        return
    if args.child:
        name, path = args.child
        info = CHILDREN[name](path)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)  # tshark and the nrsack command run as children
        info["peak_rss_mb"] = max(usage.ru_maxrss, children.ru_maxrss) / 1024
        info["cpu_s"] = usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime
        print(json.dumps(info))
        return
    folder = args.keep or tempfile.mkdtemp(prefix="nrsack-bench-")
    os.makedirs(folder, exist_ok=True)
    big = os.path.join(folder, f"bench-{args.packets}.pcap")
    half = os.path.join(folder, f"bench-{args.packets // 2}.pcap")
    t0 = time.perf_counter()
    n = build(big, args.packets, args.flows)
    n_half = build(half, args.packets // 2, args.flows)
    print(f"capture: {n} packets, {args.flows} flows (TCP SACK and SCTP NR-SACK, 1% loss), "
          f"{os.path.getsize(big) / 1e6:.0f} MB, written in {time.perf_counter() - t0:.1f} s")
    # Both checkouts run from cached bytecode, as an installed nrsack does: with PYTHONDONTWRITEBYTECODE
    # set, a checkout without __pycache__ compiles every module on each run (~70 ms of a 0.9 s summary).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    contenders = list(MINE)
    skip = set(filter(None, args.skip.split(",")))
    if "tshark" not in skip and shutil.which("tshark"):
        contenders.append("tshark")
    if "dpkt" not in skip:
        contenders.append("dpkt")
    if args.baseline:
        os.environ["NRSACK_BENCH_BASELINE"] = args.baseline
        contenders.append("baseline")
        measure("baseline", half)  # writes the baseline's bytecode; the summary's is written by the halves
    halves = {name: fastest(name, half, args.repeat) for name in MINE}
    results = {}
    for _ in range(max(1, args.repeat)):  # round robin: a burst of load hits every contender alike
        for name in contenders:
            run = measure(name, big)
            if name not in results or run["cpu_s"] < results[name]["cpu_s"]:
                results[name] = run
    print(f"{'contender':<10} {'wall s':>8} {'CPU s':>8} {'packets/s (CPU)':>16} {'peak RSS MB':>12}")
    for name, r in results.items():
        print(f"{name:<10} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {n / r['cpu_s']:16,.0f} {r['peak_rss_mb']:12.0f}")
    for mine in MINE:
        print(f"{mine} speed-up: " + ", ".join(
            f"{results[name]['cpu_s'] / results[mine]['cpu_s']:.1f}x {name} (CPU; wall "
            f"{results[name]['wall_s'] / results[mine]['wall_s']:.1f}x)" for name in ("tshark", "dpkt") if name in results))
    for mine in MINE:
        grow = (results[mine]["peak_rss_mb"] - halves[mine]["peak_rss_mb"]) / (n - n_half) * 1e6
        print(f"{mine} peak RSS: {halves[mine]['peak_rss_mb']:.0f} MB at {n_half} packets, "
              f"{results[mine]['peak_rss_mb']:.0f} MB at {n}: {grow:.0f} bytes per packet"
              + (" (streamed: grows only until the first chunks of 65,536 frames are full)" if mine != "analyzer" else ""))
    if "baseline" in results:
        print(f"summary against the baseline ({args.baseline}): "
              f"{results['baseline']['cpu_s'] / results['summary']['cpu_s']:.2f}x its CPU, "
              f"{results['summary']['peak_rss_mb'] / results['baseline']['peak_rss_mb']:.2f}x its peak RSS")
        if args.instructions:
            ours, theirs = instructions(shutil.which("nrsack"), half), instructions(args.baseline, half, module=True)
            print(f"summary on {n_half} packets under callgrind: {ours / 1e9:.3f}G instructions against the baseline's "
                  f"{theirs / 1e9:.3f}G ({ours / theirs:.3f}x; counts do not depend on the machine's load)")
    call = results["analyzer"]["call_cpu_s"]
    print(f"analyzer: the analyze() call alone {call:.2f} s CPU, {n / call:,.0f} packets/s (issue 28's target 1.5M/s; "
          f"the rest of its process, {results['analyzer']['cpu_s'] - call:.2f} s, is the interpreter and its imports)")
    print(f"analyzer output: {results['analyzer']['entries']} entries, {results['analyzer']['rtxq_rows']} RtxQ rows, "
          f"{results['analyzer']['blocking_rows']} blocking intervals")
    if args.stream_packets:
        huge = os.path.join(folder, f"bench-{args.stream_packets}.pcap")
        n_huge = build(huge, args.stream_packets, args.flows)
        print(f"capture: {n_huge} packets, {os.path.getsize(huge) / 1e6:.0f} MB")
        # round robin, the fastest wall time of each counts: --jobs is about wall time
        big_runs = {}
        for _ in range(max(1, args.repeat)):
            for name in ("summary", "parquet", "summary-jobs", "parquet-jobs"):
                run = measure(name, huge)
                if name not in big_runs or run["wall_s"] < big_runs[name]["wall_s"]:
                    big_runs[name] = run
        if args.stream_tshark:
            big_runs["tshark"] = measure("tshark", huge)
        for name, r in big_runs.items():
            print(f"{name:<12} on {n_huge} packets: {r['cpu_s']:.1f} s CPU, {n_huge / r['cpu_s']:,.0f} packets/s, "
                  f"{r['wall_s']:.2f} s wall, peak RSS {r['peak_rss_mb']:.0f} MB")
        same = "the same JSON" if big_runs["summary"]["sha256"] == big_runs["summary-jobs"]["sha256"] else "JSON DIFFERS"
        print(f"--jobs {JOBS} against --jobs 1 at {n_huge} packets (wall, fastest of {max(1, args.repeat)}; issue 28's "
              f"target 1.7x): summary {big_runs['summary']['wall_s'] / big_runs['summary-jobs']['wall_s']:.2f}x "
              f"({same}), parquet {big_runs['parquet']['wall_s'] / big_runs['parquet-jobs']['wall_s']:.2f}x; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        if "tshark" in big_runs:
            tshark_per_packet, where = big_runs["tshark"]["cpu_s"] / n_huge, f"tshark on the same {n_huge} packets"
        elif "tshark" in results:
            tshark_per_packet, where = results["tshark"]["cpu_s"] / n, f"tshark's CPU per packet at {n} packets"
        else:
            tshark_per_packet = None
        if tshark_per_packet:
            for name in ("summary", "parquet"):
                print(f"{name} at {n_huge} packets: {tshark_per_packet * n_huge / big_runs[name]['cpu_s']:.1f}x "
                      f"faster than {where}")
    if "tcptrace" not in skip:  # at the streamed size when given (issue 28: the 8-flow half of 10M packets)
        against_tcptrace(folder, (args.stream_packets or n) // 2, max(1, args.flows // 2), args.repeat)
    if not args.keep:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
