"""Start-up of `nrsack analyze` on a small capture, against two floors measured in the same run.

    python3 bench/bench_startup.py [--capture sample-pcaps/sctp-nrsack-fig4.pcap] [--repeat 20]
                                   [--baseline PYTHON] [--instructions] [--imports 12]

On a capture of a few dozen frames the analysis itself takes milliseconds: the command's wall time is
its start-up (the interpreter, click, numpy, the analyzer's modules). Times, each a fresh process,
round robin, `--repeat` times (like hyperfine), wall and CPU (the fastest and the median):
  - python:   `python -c pass`, the interpreter alone: the floor no Python command goes below;
  - numpy:    `python -c "import numpy"`: the floor of a command that needs numpy (the pipeline does);
  - nrsack:   `nrsack analyze CAPTURE --format json`, as users run it;
  - baseline: the same command run by another interpreter (--baseline, e.g. a venv with main's nrsack
              installed), so a change's gain is a ratio measured in the same run;
  - tshark:   `tshark -r CAPTURE -T fields -e frame.number`, the usual tool's start-up.
and prints each one's ratio to python and to tshark (of the median wall time and of the fastest CPU time). --instructions also counts the instructions of
python, numpy, nrsack (and baseline) under valgrind's callgrind: a figure a loaded machine cannot move.
--imports N lists the N modules whose own import took longest (python -X importtime, fastest of 5).

Every command runs from cached bytecode, as an installed nrsack does (pip compiles at install): with
PYTHONDONTWRITEBYTECODE set, a checkout without __pycache__ would compile every module on each run.
"""

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(REPO, "sample-pcaps", "sctp-nrsack-fig4.pcap")
NRSACK_MAIN = "import sys; from nrsack.cli import main; sys.argv[0] = 'nrsack'; main()"


def commands(python, capture, baseline):
    """name -> argv of every contender (the nrsack ones through `python -c`: the same interpreter whether or
    not its environment's bin/ is on PATH)."""
    analyze = ["analyze", capture, "--format", "json"]
    out = {"python": [python, "-c", "pass"],
           "numpy": [python, "-c", "import numpy"],
           "nrsack": [python, "-c", NRSACK_MAIN, *analyze]}
    if baseline:
        out["baseline"] = [baseline, "-c", NRSACK_MAIN, *analyze]
    if shutil.which("tshark"):
        out["tshark"] = ["tshark", "-r", capture, "-T", "fields", "-e", "frame.number"]
    return out


def timed(argv):
    """(wall s, CPU s) of one run; its output must be what a successful run prints."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        sys.exit(f"bench_startup: {' '.join(argv[:3])} ... failed ({run.returncode})")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions(argv) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "callgrind.out")
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
                             capture_output=True, text=True, check=True)
    return int(run.stderr.rsplit("refs:", 1)[1].split()[0].replace(",", ""))


def slowest_imports(argv, count, runs=5):
    """[(own µs, module)] of the `count` modules whose own import took longest, the fastest of `runs` runs each."""
    best = {}
    for _ in range(runs):
        run = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
        for own, name in re.findall(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", run.stderr):
            best[name] = min(best.get(name, 1 << 62), int(own))
    return sorted(((own, name) for name, own in best.items()), reverse=True)[:count]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capture", default=SAMPLE)
    parser.add_argument("--repeat", type=int, default=20, help="runs per contender, round robin")
    parser.add_argument("--baseline", metavar="PYTHON", help="an interpreter with another nrsack: its start-up too")
    parser.add_argument("--instructions", action="store_true", help="also count instructions under valgrind")
    parser.add_argument("--imports", type=int, default=0, metavar="N", help="list the N slowest imports of nrsack")
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    # nrsack's own command does this at its start (nrsack/cli.py); the floors get the same
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    capture = os.path.abspath(args.capture)
    contenders = commands(sys.executable, capture, args.baseline)
    for argv in contenders.values():  # warm-up: the byte-code caches written, the files in the page cache
        timed(argv)
    runs = {name: [] for name in contenders}
    for _ in range(max(1, args.repeat)):
        for name, argv in contenders.items():
            runs[name].append(timed(argv))
    print(f"start-up on {os.path.relpath(capture, REPO)}, {args.repeat} runs each, round robin; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    # ratios of the median wall (what a user waits) and of the fastest CPU time (what a loaded machine moves least)
    summary = {name: (statistics.median(w for w, _ in samples), min(c for _, c in samples)) for name, samples in runs.items()}
    print(f"{'':10}{'wall min':>10}{'median':>9}{'CPU min':>9}{'median':>9}   x python wall, CPU   x tshark wall, CPU")
    for name, samples in runs.items():
        walls, cpus = [w for w, _ in samples], [c for _, c in samples]
        ratios = "".join(f"{summary[name][0] / summary[other][0]:10.2f}{summary[name][1] / summary[other][1]:7.2f}"
                         if other in summary else f"{'-':>10}{'-':>7}" for other in ("python", "tshark"))
        print(f"{name:10}{min(walls):10.3f}{statistics.median(walls):9.3f}{min(cpus):9.3f}{statistics.median(cpus):9.3f}"
              f"   {ratios}")
    if args.instructions:
        counted = {name: instructions(contenders[name]) for name in ("python", "numpy", "nrsack", "baseline")
                   if name in contenders}
        for name, count in counted.items():
            print(f"instructions {name:9}{count / 1e6:10.1f} M{count / counted['python']:8.2f} x python")
    if args.imports:
        print("slowest own imports of nrsack (µs, fastest of 5 runs):")
        for own, name in slowest_imports(contenders["nrsack"], args.imports):
            print(f"{own:8d}  {name}")


if __name__ == "__main__":
    main()
