"""Benchmark of `nrsack check` against `nrsack analyze`, measured in the same run on the same capture.

    python3 bench/bench_check.py [--packets 300000] [--flows 16] [--before REV] [--repeat 3] [--payload]

Writes the analyzer benchmark's capture (bench_analyzer.build_capture: interleaved lossy TCP SACK and
SCTP NR-SACK transfers; headers only, snaplen 70; --payload: every record carried whole, as an unsliced
capture of bulk transfers is, bench_analyzer.carry_payload: `--payload --packets 2900000 --flows 4` writes a
2 GiB capture, issue 29's "check within 2x of analyze"), then runs each contender as users run it, in a fresh process (wall, CPU, peak RSS):
  - analyze:        `nrsack analyze CAPTURE --format json` (the baseline: the summary, streamed);
  - check:          `nrsack check CAPTURE --format json`, every rule of rules.md;
  - analyze+check:  `nrsack analyze CAPTURE --check --format json`, both from one pass;
  - check@REV:      `nrsack check` of the repository at REV (default: main), the checker as it was
                    before (its rules/, checker.py and check_cli.py over this tree), for before / after;
  - check -NR-01:   `nrsack check --rules` every rule but NR-01: the capture has no handshake, so an NR-01
                    note stands on every NR-SACK (a sixth of the packets); without them the ratio shows the
                    engine's own cost rather than the cost of writing tens of thousands of findings.
Prints CPU and wall ratios against analyze, and checks that every check contender reports the same
findings. Each contender runs --repeat times in turn (round robin), and its fastest run counts: on a
machine shared with other work one slow run says more about the neighbours than about the tool. Memory: each is run on the capture and on one half as long; a streaming tool's peak RSS does
not grow with the capture.
"""

import argparse
import atexit
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_analyzer import build_capture, carry_payload  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the checker's files: at REV they replace this tree's, in a copy of the package
CHECKER_FILES = ("analyzer/rules/checker.py", "analyzer/views/check_cli.py")
CHECKER_FOLDERS = ("analyzer/rules",)


def child(argv):
    """Runs the nrsack command in this process; its rusage goes to stderr as the last line at exit."""
    def report():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        sys.stderr.write("\nBENCH " + json.dumps({"cpu_s": usage.ru_utime + usage.ru_stime,
                                                 "peak_rss_mb": peak_rss_kb(usage) / 1024}) + "\n")

    atexit.register(report)
    sys.argv = ["nrsack"] + argv
    from nrsack.cli import main

    main()


def peak_rss_kb(usage):
    """This process's peak RSS. Linux carries ru_maxrss over execve, so a child forked from a big parent
    (this script, holding every contender's findings) would report the parent's size: VmHWM is the
    process's own."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return usage.ru_maxrss


def checker_at(rev, folder):
    """A copy of the nrsack package (this tree, its compiled reader included) with the checker of `rev`."""
    import nrsack
    import nrsack.analyzer

    root = os.path.join(folder, "nrsack")
    shutil.copytree(os.path.dirname(nrsack.__file__), root, ignore=shutil.ignore_patterns("__pycache__"))
    analyzer = os.path.join(root, "analyzer")
    shutil.copytree(os.path.dirname(nrsack.analyzer.__file__), analyzer, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(os.path.join(analyzer, "rules"))
    names = subprocess.run(["git", "-C", REPO, "ls-tree", "-r", "--name-only", rev, *CHECKER_FOLDERS, *CHECKER_FILES],
                           capture_output=True, text=True, check=True).stdout.split()
    if CHECKER_FILES[0] not in names:  # its rules import the flat analyzer modules of before the subpackages
        raise SystemExit(f"--before {rev}: that revision predates the analyzer's subpackages ({CHECKER_FILES[0]}); "
                         "its checker cannot run over this tree")
    for name in names:
        target = os.path.join(root, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as out:
            out.write(subprocess.run(["git", "-C", REPO, "show", f"{rev}:{name}"], capture_output=True, check=True).stdout)
    return folder


def measure(argv, pythonpath=None):
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    start = time.perf_counter()
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", *argv], capture_output=True, text=True,
                         env=env)
    wall = time.perf_counter() - start
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {out.returncode}\n{out.stderr[-2000:]}")
    info = json.loads(out.stderr.strip().splitlines()[-1].split(" ", 1)[1])
    info["wall_s"] = wall
    info["json"] = json.loads(out.stdout)
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packets", type=int, default=300_000)
    parser.add_argument("--flows", type=int, default=16)
    parser.add_argument("--before", default="main", metavar="REV", help="the revision whose checker is 'before'")
    parser.add_argument("--repeat", type=int, default=1, help="runs per contender; the fastest (CPU) counts")
    parser.add_argument("--payload", action="store_true",
                        help="every record carried whole (a capture of bytes, not of headers: 2900000 packets = 2 GiB)")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    folder = tempfile.mkdtemp(prefix="nrsack-bench-check-")
    try:
        old = checker_at(args.before, os.path.join(folder, "before"))
        sizes = {}
        for name, packets in (("full", args.packets), ("half", args.packets // 2)):
            path = os.path.join(folder, f"{name}.pcap")
            sizes[name] = (path, build_capture(path, packets, args.flows))
            if args.payload:
                headers = path + ".headers"
                os.rename(path, headers)
                carry_payload(headers, path)
                os.remove(headers)
        n = sizes["full"][1]
        print(f"capture: {n} packets, {os.path.getsize(sizes['full'][0]) / 2**30:.2f} GiB"
              f"{' (payload carried whole)' if args.payload else ''}, {args.flows} flows "
              f"(TCP SACK and SCTP NR-SACK, 1% loss); half: {sizes['half'][1]}")
        contenders = {
            "analyze": (["analyze", "{}", "--format", "json"], None),
            "check": (["check", "{}", "--format", "json"], None),
            "analyze+check": (["analyze", "{}", "--check", "--format", "json"], None),
            f"check@{args.before}": (["check", "{}", "--format", "json"], old),
        }
        from nrsack.analyzer.rules import REGISTRY

        contenders["check -NR-01"] = (["check", "{}", "--format", "json", "--rules",
                                       ",".join(r for r in REGISTRY if r != "NR-01")], None)
        results = {}
        for _ in range(max(1, args.repeat)):
            for name, (argv, pythonpath) in contenders.items():
                for size, (path, _) in sizes.items():
                    run = measure([a.format(path) for a in argv], pythonpath)
                    if (name, size) not in results or run["cpu_s"] < results[name, size]["cpu_s"]:
                        results[name, size] = run
        print(f"{'contender':<16} {'wall s':>8} {'CPU s':>8} {'packets/s (CPU)':>16} {'x analyze CPU':>14} "
              f"{'x analyze wall':>15} {'peak RSS MB':>12} {'half: RSS MB':>13}")
        base = results["analyze", "full"]
        for name in contenders:
            r, half = results[name, "full"], results[name, "half"]
            print(f"{name:<16} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {n / r['cpu_s']:16,.0f} "
                  f"{r['cpu_s'] / base['cpu_s']:14.2f} {r['wall_s'] / base['wall_s']:15.2f} {r['peak_rss_mb']:12.0f} "
                  f"{half['peak_rss_mb']:13.0f}")
        found = {name: results[name, "full"]["json"]["findings"] for name in contenders
                 if name not in ("analyze", "check -NR-01")}
        counts = {}
        for f in found["check"]:
            counts[f["rule"]] = counts.get(f["rule"], 0) + 1
        print(f"findings: {len(found['check'])} {counts}")
        same = all(v == found["check"] for v in found.values())
        print("every check contender reports the same findings" if same else
              "FINDINGS DIFFER: " + ", ".join(f"{k}: {len(v)}" for k, v in found.items()))
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
