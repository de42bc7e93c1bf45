"""The experiments behind docs/reproduction.md's explanations of figure 7.

    python scripts/ns2_rules.py ablation   # add the ns2 profile's rules to rfc one at a time
    python scripts/ns2_rules.py 8k         # 8K at high loss under ns2, without and with ack loss

Both run serially on the compiled engine (about 25 s and 5 s on a shared core).
"""

import argparse
import dataclasses
import time

import pandas as pd

from nrsack.generator.sim import sweep as sw
from nrsack.generator.sim.profiles import PROFILES

STEPS = [("rfc", {}),
         ("+ gap filler acked by the delayed-ack rule", dict(gap_filler_delayed=True)),
         ("+ Max.Burst 4", dict(max_burst=4)),
         ("+ chunk-byte window, cwnd overshoot, growth test",
          dict(chunk_header_bytes=16, send_while_below_cwnd=True, grow_when_flight_reached_cwnd=True)),
         ("+ persistent HTNA", dict(persistent_htna=True)),
         ("+ initial cwnd 2, RTO 3 s", dict(initial_cwnd_packets=2, rto_initial_s=3.0)),
         ("+ timer restart, HEARTBEAT, cwnd degrade (= ns2)",
          dict(restart_timer_on_cum_ack=True, path_max_retrans=5, cwnd_degrade=True,
               cmt_delayed_ack=True))]  # DAC acts on CMT only: no effect on these SCTP runs


def ablation(steps=STEPS, target="ns2", seeds=20, nbytes=10_000_000,
             losses=(0.0009, 0.002, 0.005, 0.01, 0.02)):
    """rfc with the steps' rules added one at a time (the last step must be the target profile):
    gain % per step, 32K and 64K at 45 ms, 100 Mbit/s."""
    rules, tables = {}, []
    for i, (label, change) in enumerate(steps):
        rules.update(change)
        name = f"ablation-{i}"  # a temporary profile, in this process only
        PROFILES[name] = dataclasses.replace(PROFILES["rfc"], name=name, **rules)
        points = sw.grid(sndbufs=(32768, 65536), losses=losses, seeds=seeds,
                         delay_ms=45.0, nbytes=nbytes, payload=1452, profile=name)
        table = sw.gain_table(sw.run(points, serial=True))
        table["rules"] = label
        tables.append(table)
    assert dataclasses.replace(PROFILES[name], name=target) == PROFILES[target]
    return pivot(pd.concat(tables))


def pivot(t):
    t = t.assign(gain=t.gain_pct.map("{:.1f}".format))
    return t.pivot_table(index="rules", columns=["sndbuf", "loss"], values="gain", aggfunc="first",
                         sort=False)


def high_loss_8k():
    rows = {}
    for label, with_ack_loss in (("data lost", False), ("data and acks lost", True)):
        points = [pt for loss in (0.05, 0.1, 0.2, 0.3, 0.45, 0.65) for pt in sw.grid(
            sndbufs=(8192,), losses=(loss,), seeds=10, nbytes=2_000_000, payload=1452,
            profile="ns2", ack_loss=loss if with_ack_loss else 0.0)]
        t = sw.gain_table(sw.run(points, serial=True))
        rows[label] = {f"{x * 100:g} %": f"{g:.1f} ± {s:.1f}"
                       for x, g, s in zip(t.loss, t.gain_pct, t.gain_pct_std)}
    return pd.DataFrame(rows).T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("experiment", choices=["ablation", "8k"])
    args = ap.parse_args()
    t0 = time.perf_counter()
    print((ablation() if args.experiment == "ablation" else high_loss_8k()).to_string())
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
