"""Lab speed: the wall time of a usrsctp transfer over the emulated link, against baselines measured
in the same run: the transfer's own q (the least a real-time run can take; a virtual-time run is
CPU-bound and may take less) and the simulator on the same parameters (model time, not real time).

    python bench/bench_lab.py [--bytes 5000000] [--sndbuf 4194304] [--delay 5] [--bandwidth 100]
                              [--clock virtual|real]

Prints wall seconds, the lab's overhead over q, and the ratio to the simulator.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", type=int, default=5_000_000)
    ap.add_argument("--sndbuf", type=int, default=4 << 20)
    ap.add_argument("--delay", type=float, default=5.0)
    ap.add_argument("--bandwidth", type=float, default=100.0)
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--clock", choices=["virtual", "real"], default="virtual")
    a = ap.parse_args()
    common = ["--ack", "nrsack", "--sndbuf", str(a.sndbuf), "--loss", str(a.loss), "--delay", str(a.delay),
              "--bandwidth", str(a.bandwidth), "--bytes", str(a.bytes)]
    nrsack = [sys.executable, "-c", "from nrsack.cli import main; main()"]
    with tempfile.TemporaryDirectory() as tmp:
        lab_wall = timed([*nrsack, "lab", "run", *common, "--clock", a.clock, "--out", f"{tmp}/lab"])
        truth = json.loads(Path(f"{tmp}/lab/truth.json").read_text())
        sim_wall = timed([*nrsack, "generate", "simulate", *common, "--out", f"{tmp}/sim"])
        sim = json.loads(Path(f"{tmp}/sim/truth.json").read_text())
    print(f"{a.bytes / 1e6:g} MB at {a.bandwidth:g} Mbit/s, {a.delay:g} ms one way, send buffer {a.sndbuf}")
    print(f"lab (usrsctp, {a.clock} time):  wall {lab_wall:.2f} s; q {truth['q_s']:.2f} s, stack run {truth['wall_s']:.2f} s, "
          f"throughput {truth['throughput_bps'] / 1e6:.1f} Mbit/s; wall / q {lab_wall / truth['q_s']:.2f}")
    print(f"simulator:      wall {sim_wall:.2f} s; q {sim['q_s']:.2f} s, "
          f"throughput {sim['throughput_bps'] / 1e6:.1f} Mbit/s")
    print(f"lab / simulator wall: {lab_wall / sim_wall:.2f}")


if __name__ == "__main__":
    main()
