#!/usr/bin/env bash
# Fuzz the nrsack plugin's ASan + UBSan build in tshark over >= 1M corrupted packets: every sample
# capture, concatenated COPIES times, corrupted by `editcap -E PROBABILITY --seed N` for N = 1, 2, ...
# until PACKETS packets were read. Exits 1 on any crash or sanitizer report (printed).
#   bench/fuzz_dissector.sh                 # defaults: PACKETS=1000000 COPIES=28 PROBABILITY=0.02
#   PACKETS=200000 bench/fuzz_dissector.sh
#   NRSACK_WIRESHARK=forky PACKETS=200000 bench/fuzz_dissector.sh   # against Wireshark 4.6 (chroot, root)
set -euo pipefail
cd "$(dirname "$0")/.."
export PACKETS="${PACKETS:-1000000}" COPIES="${COPIES:-28}" PROBABILITY="${PROBABILITY:-0.02}"
PYTHONPATH=tests exec python3 - <<'PY'
import itertools, os, shutil, sys, tempfile, time
from pathlib import Path
from support import fuzz, tshark

target, copies, probability = int(os.environ["PACKETS"]), int(os.environ["COPIES"]), float(os.environ["PROBABILITY"])
plugin_dir = tshark.c_plugin_folder(tshark.build_c_plugin(sanitize=True))
work = Path(tempfile.mkdtemp(prefix="nrsack-fuzz-"))
try:
    base, per_run = fuzz.corpus(work, copies)
    runs = -(-target // per_run)
    print(f"corpus: {len(fuzz.sample_captures())} sample captures x {copies} = {per_run} packets per run; "
          f"{runs} seeds, editcap -E {probability}", flush=True)
    start = time.monotonic()
    def progress(seed, report):
        print(f"  seed {seed}: {report.packets} packets, {len(report.problems)} problems, "
              f"{time.monotonic() - start:.0f} s", flush=True)
    report = fuzz.run(tshark.Plugin.c(plugin_dir), base, per_run, range(1, runs + 1), probability, work, progress)
    elapsed = time.monotonic() - start
finally:
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(plugin_dir, ignore_errors=True)
for seed, code, text in report.problems:
    print(f"--- seed {seed}: {text}")
print(f"fuzz: {report.packets} packets in {report.runs} tshark runs, {elapsed:.0f} s "
      f"({report.packets / elapsed:.0f} packets/s under ASan+UBSan); crashes or sanitizer reports: {len(report.problems)}")
sys.exit(1 if report.problems else 0)
PY
