"""Figure 7's grid with usrsctp beside rfc and freebsd, seed by seed, so a run cut short by the clock
still leaves whole seeds (docs/reproduction.md, "rfc held against usrsctp").

    python scripts/usrsctp_fig7.py run RUNS.csv [--seeds 20] [--bytes 10000000] [--until HH:MM]
    python scripts/usrsctp_fig7.py table RUNS.csv [--profiles rfc,freebsd]
    python scripts/usrsctp_fig7.py ablation RUNS.csv

`run` runs usrsctp's points (drain off, up to 25 % loss) in this process, one seed's whole grid
before the next seed's, and appends each run to RUNS.csv as it ends: running it again resumes, and
`--until` stops before a new seed starts after that UTC time. `table` simulates the profiles at the
seeds every point has, then prints the gains, the throughputs and the agreement as markdown.
`ablation` adds freebsd's rules to rfc one at a time (scripts/freebsd_rules.py's steps) and prints,
per step, at how many points the gain agrees with usrsctp's and the gains where they differed most.
`nrsack reproduce 7 --profile rfc,freebsd,usrsctp` computes the same in one go, all or nothing.
"""

import argparse
import dataclasses
import datetime
import time
from pathlib import Path

import pandas as pd
from freebsd_rules import STEPS  # scripts/ is the script's own folder on sys.path

from nrsack.generator.sim import reproduce as R
from nrsack.generator.sim import sweep as sw
from nrsack.generator.sim.profiles import PROFILES


def lab_points(seeds, nbytes):
    return R.lab_points(R.FIGURES["7"].grid("rfc", seeds, False, nbytes))


def run(path, seeds, nbytes, until):
    done = set()
    if path.exists():
        old = pd.read_csv(path)
        done = set(zip(old.seed, old.ack, old.sndbuf, old.loss))
    stop_at = None
    if until:
        hour, minute = map(int, until.split(":"))
        now = datetime.datetime.now(datetime.timezone.utc)
        stop_at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    points = sorted(lab_points(seeds, nbytes), key=lambda p: p["seed"])
    for seed in range(1, seeds + 1):
        if stop_at and datetime.datetime.now(datetime.timezone.utc) >= stop_at:
            print(f"stopped before seed {seed} ({until} UTC)", flush=True)
            return
        t0 = time.perf_counter()
        for pt in (p for p in points if p["seed"] == seed):
            if (pt["seed"], pt["ack"], pt["sndbuf"], pt["loss"]) in done:
                continue
            row = pd.DataFrame([R.run_point(pt)])
            row.to_csv(path, mode="a", header=not path.exists(), index=False)
        print(f"seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)


def whole_seeds(path):
    """The usrsctp runs of the seeds that have every point; -> (runs, seeds, bytes)."""
    lab = pd.read_csv(path)
    per_seed = lab.groupby("seed").size()
    full = per_seed[per_seed == per_seed.max()].index
    lab = lab[lab.seed.isin(full)]
    seeds = int(full.max())
    assert list(full) == list(range(1, seeds + 1)), f"seeds with every point: {list(full)}"
    return lab, seeds, int(lab.bytes.iloc[0])


def held_against(lab, profiles, seeds, nbytes):
    """Each profile's gains held against usrsctp's (reproduce.agreement) on the lab's points."""
    points = [pt for prof in profiles for pt in R.FIGURES["7"].grid(prof, seeds, False, nbytes)
              if pt["loss"] <= R.LAB_MAX_LOSS]
    sim = sw.run(points, serial=True, task=R.run_point)
    return R.agreement(sw.gain_table(pd.concat([sim, lab], ignore_index=True)))


def ablation(path, shown=((8192, 0.02), (8192, 0.1), (8192, 0.2), (32768, 0.005), (32768, 0.1), (65536, 0.002))):
    lab, seeds, nbytes = whole_seeds(path)
    rules, names = {}, []
    for i, (label, change) in enumerate(STEPS):
        rules.update(change)
        name = f"ablation-{i}"  # a temporary profile, in this process only
        PROFILES[name] = dataclasses.replace(PROFILES["rfc"], name=name, **rules)
        names.append((name, label))
    assert dataclasses.replace(PROFILES[name], name="freebsd") == PROFILES["freebsd"]
    held = held_against(lab, [n for n, _ in names], seeds, nbytes).set_index(["profile", "sndbuf", "loss"])
    head = ["rules", "agrees"] + [f"{b // 1024}K {x * 100:g} %" for b, x in shown]
    print(f"{seeds} seeds of {nbytes} bytes; gain %, T (SACK, Mbit/s) in brackets\n")
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for name, label in names:
        part = held.loc[name]
        cells = [f"{part.loc[k].gain_pct:.1f} ({part.loc[k].T_sack_mbps:.2f})" for k in shown]
        print(f"| {label} | {int(part.agrees.sum())} of {len(part)} | " + " | ".join(cells) + " |")
    ref = held.loc[names[0][0]]
    cells = [f"{ref.loc[k].gain_pct_usrsctp:.1f} ({ref.loc[k].T_sack_mbps_usrsctp:.2f})" for k in shown]
    print("| usrsctp 0.9.5 (lab, no drain) | | " + " | ".join(cells) + " |")


def table(path, profiles):
    lab, seeds, nbytes = whole_seeds(path)
    held = held_against(lab, profiles, seeds, nbytes)
    wide = held.pivot_table(index=["sndbuf", "loss"], columns="profile", values=["T_sack_mbps", "gain_pct",
                                                                                "gain_pct_std", "agrees"],
                            aggfunc="first")
    ref = held.drop_duplicates(["sndbuf", "loss"]).set_index(["sndbuf", "loss"])
    cells = lambda g, s: f"{g:.1f} ± {s:.1f}"  # noqa: E731
    head = ["buffer", "loss %"]
    for prof in profiles:
        head += [f"{prof} T", f"{prof} gain"]
    head += ["usrsctp T", "usrsctp gain"] + [f"{prof} agrees" for prof in profiles]
    print(f"{seeds} seeds of {nbytes} bytes; T: mean SACK throughput, Mbit/s; gain: % ± SD over the seeds\n")
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for (buf, loss), r in wide.iterrows():
        row = [f"{buf // 1024}K", f"{loss * 100:g}"]
        for prof in profiles:
            row += [f"{r[('T_sack_mbps', prof)]:.2f}", cells(r[("gain_pct", prof)], r[("gain_pct_std", prof)])]
        u = ref.loc[(buf, loss)]
        row += [f"{u.T_sack_mbps_usrsctp:.2f}", cells(u.gain_pct_usrsctp, u.gain_pct_std_usrsctp)]
        row += ["yes" if r[("agrees", prof)] else "**no**" for prof in profiles]
        print("| " + " | ".join(row) + " |")
    share = held.groupby("profile", sort=False).agrees.agg(["sum", "size"])
    print("\n" + ", ".join(f"{p} agrees at {int(s['sum'])} of {int(s['size'])} points "
                           f"({s['sum'] / s['size']:.0%})" for p, s in share.iterrows()))
    incomplete = lab[~lab.complete.astype(bool)]
    if len(incomplete):
        print(f"{len(incomplete)} usrsctp runs did not complete")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("run", "table", "ablation"))
    ap.add_argument("runs", type=Path)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--bytes", type=int, default=10_000_000)
    ap.add_argument("--until", help="UTC HH:MM: start no seed after it")
    ap.add_argument("--profiles", default="rfc,freebsd")
    args = ap.parse_args()
    if args.what == "run":
        run(args.runs, args.seeds, args.bytes, args.until)
    elif args.what == "table":
        table(args.runs, args.profiles.split(","))
    else:
        ablation(args.runs)


if __name__ == "__main__":
    main()
