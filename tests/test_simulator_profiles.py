"""Simulator profiles: rfc is the model as it was before profiles existed, ns2 applies ns-2.35's
rules (docs/ns2-sctp-model.md), and the options the papers need (ack loss, fixed duration)."""

import json
import subprocess
import sys

import pytest

from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate
from nrsack.generator.sim.model import ACK, DATA, RTX
from nrsack.generator.sim.profiles import PROFILES


def fig7_config(sndbuf, loss, ack, profile="rfc", seed=7, **path):
    return SimConfig(protocol="sctp", ack=ack, sndbuf=sndbuf, total_bytes=1_000_000, seed=seed,
                     payload=1452, profile=profile,
                     paths=(PathConfig(bandwidth_bps=100e6, delay_s=0.045, loss=loss, **path),))


# (sndbuf, loss, ack) -> done_ns, retransmissions, timeouts, sender frames, as the model gave them
# before profiles existed (commit ad08b88, Python engine): rfc must not move them
RFC_PINS = {
    (8192, 0.05, "sack"): (24576085760, 37, 5, 1141),
    (8192, 0.05, "nrsack"): (19692645760, 37, 4, 1190),
    (32768, 0.01, "sack"): (5232360000, 5, 0, 1074),
    (32768, 0.01, "nrsack"): (5230680000, 5, 0, 1075),
    (65536, 0.002, "sack"): (1987885760, 0, 0, 1038),
}


@pytest.mark.parametrize("key", sorted(RFC_PINS))
def test_rfc_profile_is_the_model_before_profiles(key):
    for engine in ("python", "c"):
        t = simulate(fig7_config(*key), engine=engine)
        got = (t.done_ns, t.counters["retransmissions"], t.counters["timeouts"], len(t.sender))
        assert got == RFC_PINS[key], engine


def test_rfc_is_the_default_and_profiles_fill_unset_parameters():
    assert SimConfig().profile == "rfc"
    assert (SimConfig().rto_initial_s, SimConfig().initial_cwnd_packets) == (1.0, 4)
    ns2 = SimConfig(profile="ns2")
    assert (ns2.rto_initial_s, ns2.rto_min_s, ns2.rto_max_s, ns2.initial_cwnd_packets) == (3.0, 1.0, 60.0, 2)
    assert SimConfig(profile="ns2", rto_initial_s=1.5).rto_initial_s == 1.5  # explicit wins
    with pytest.raises(ValueError, match="profile"):
        SimConfig(profile="ns3")


def _receiver_acks_after_gap_fill(profile):
    """Delay (ns) between the arrival of each packet that filled the receiver's last gap and the
    next ack the receiver sent."""
    cfg = SimConfig(protocol="sctp", ack="sack", sndbuf=16000, total_bytes=300_000, seed=2,
                    payload=1452, profile=profile, drop_units=(20, 90),
                    paths=(PathConfig(bandwidth_bps=20e6, delay_s=0.01),))
    t = simulate(cfg, receiver_trace=True, engine="python")
    waits, gap = [], False
    rcum, seen = 0, set()
    for i, (now, kind, _, a, _) in enumerate(t.receiver):
        if kind not in (DATA, RTX):
            continue
        seen.add(a)
        while rcum in seen:
            rcum += 1
        if gap and not any(u > rcum for u in seen):  # the last gap just closed
            nxt = next(f[0] for f in t.receiver[i:] if f[1] == ACK)
            waits.append(nxt - now)
        gap = any(u > rcum for u in seen)
    return waits


def test_ns2_acks_the_gap_filler_by_the_delayed_ack_rule():
    rfc, ns2 = _receiver_acks_after_gap_fill("rfc"), _receiver_acks_after_gap_fill("ns2")
    assert len(rfc) == len(ns2) == 2
    assert rfc == [0, 0]  # FreeBSD / RFC 9260: at once
    # ns-2: the filler is packet 1 of a new delayed-ack round; the next packet or 200 ms acks it
    assert all(w > 0 for w in ns2)


def test_ns2_max_burst_limits_what_leaves_after_the_fast_retransmission_is_cum_acked():
    cfg = dict(protocol="sctp", ack="sack", sndbuf=64_000, total_bytes=600_000, seed=1,
               payload=1452, drop_units=(60,), paths=(PathConfig(bandwidth_bps=1e9, delay_s=0.01),))
    bursts = {}
    for name in ("rfc", "ns2"):
        t = simulate(SimConfig(profile=name, **cfg), engine="python")
        rtx_t = next(f[0] for f in t.sender if f[1] == RTX)
        acks = [f for f in t.sender if f[1] == ACK and f[0] > rtx_t and f[3][0] > 60]
        at = acks[0][0]  # the ack that cum-acks the retransmitted unit
        bursts[name] = sum(1 for f in t.sender if f[0] == at and f[1] in (DATA, RTX))
        assert t.counters["fast_retransmits"] == 1
    assert bursts["ns2"] <= PROFILES["ns2"].max_burst < bursts["rfc"]


def test_ns2_send_window_counts_data_chunks():
    # 32K holds 22 chunks of 1468 bytes, against 22.5 payloads of 1452: the RtxQ never exceeds 22
    t = simulate(fig7_config(32768, 0.01, "sack", profile="ns2"), engine="c")
    assert max(int(r[3]) for r in t.rtxq) == 22 * 1452
    t = simulate(fig7_config(8192, 0.01, "sack", profile="ns2"), engine="c")
    assert max(int(r[3]) for r in t.rtxq) == 5 * 1452  # 8K: 5 chunks


def test_ack_loss_loses_acks_and_keeps_the_data_draws():
    lossy = simulate(fig7_config(32768, 0.01, "sack", ack_loss=0.2), receiver_trace=True)
    clean = simulate(fig7_config(32768, 0.01, "sack"), receiver_trace=True)
    sent = sum(1 for f in lossy.receiver if f[1] == ACK)
    assert lossy.counters["acks"] < 0.9 * sent  # about a fifth never arrived
    # the first transmissions that the forward path lost are the same units (common random numbers)
    def lost_units(t):
        arrived = {f[3] for f in t.receiver if f[1] == DATA}
        return {f[3] for f in t.sender if f[1] == DATA} - arrived
    assert lost_units(lossy) == lost_units(clean)


def test_duration_runs_stop_at_the_duration():
    cfg = SimConfig(protocol="sctp", sndbuf=65536, payload=1452, duration_s=3.0,
                    paths=(PathConfig(bandwidth_bps=10e6, delay_s=0.01, loss=0.01),))
    assert cfg.total_bytes > 10e6 * 3 / 8  # more data than the path can carry meanwhile
    t = simulate(cfg)
    assert t.done_ns is None and 2.9e9 < t.last_frame_ns() <= 3e9


def run_cli(*args):
    return subprocess.run([sys.executable, "-c", "from nrsack.cli import main; main()", "generate", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # processes started and stopped: seconds each
def test_cli_profile_ack_loss_and_duration(tmp_path):
    r = run_cli("simulate", "--profile", "ns2", "--ack-loss", "0.01", "--duration", "2",
                "--loss", "0.01", "--payload", "1452", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr  # a duration run is not an incomplete transfer
    params = json.loads((tmp_path / "truth.json").read_text())["parameters"]
    assert params["profile"] == "ns2" and params["duration_s"] == 2.0
    assert params["paths"][0]["ack_loss"] == 0.01
    for bad in (["--profile", "bsd"], ["--ack-loss", "1.5"], ["--duration", "-1"]):
        r = run_cli("simulate", *bad, "--out", str(tmp_path / "bad"))
        assert r.returncode == 2 and "Traceback" not in r.stderr, bad


def test_ns2_cmt_delays_acks_even_with_gaps_and_still_fast_retransmits():
    """CMT's DAC (ns-2's sctp-cmt.cc): no immediate SACK for out-of-order data, each SACK says how
    many packets it acks and the sender counts that many misses, so fast retransmit still works."""
    cfg = dict(protocol="cmt", ack="sack", sndbuf=64000, total_bytes=400_000, seed=4, payload=1452,
               drop_units=(40, 41, 150),
               paths=(PathConfig(bandwidth_bps=20e6, delay_s=0.01),
                      PathConfig(bandwidth_bps=20e6, delay_s=0.01)))
    runs = {name: simulate(SimConfig(profile=name, **cfg), receiver_trace=True)
            for name in ("rfc", "ns2")}
    acks = {name: sum(1 for f in t.receiver if f[1] == ACK) for name, t in runs.items()}
    data = {name: sum(1 for f in t.receiver if f[1] in (DATA, RTX)) for name, t in runs.items()}
    assert acks["rfc"] > 0.6 * data["rfc"]  # an ack per out-of-order packet
    assert acks["ns2"] < 0.6 * data["ns2"]  # about one per two packets
    for t in runs.values():
        assert t.done_ns is not None and t.counters["fast_retransmits"] >= 3
        assert t.counters["timeouts"] == 0


def cwnd_steps(profile, sndbuf=32768, loss=0.01, ack="sack"):
    """(cwnd before, cwnd after, ssthresh before, ssthresh after) of every cwnd change."""
    t = simulate(fig7_config(sndbuf, loss, ack, profile=profile), engine="python")
    rows = t.cwnd
    return [(a[2], b[2], a[3], b[3]) for a, b in zip(rows, rows[1:])]


def test_freebsd_cuts_cwnd_to_flight_plus_max_burst_before_sending():
    """usrsctp's Max.Burst: a SACK sender blocked by its send buffer has little in flight, and before
    its next output cwnd falls to flight + 4 packets while ssthresh rises to the old cwnd."""
    S = 1452
    def cuts(profile):  # cwnd down, ssthresh kept at least at the old cwnd (a loss halves both)
        return [s for s in cwnd_steps(profile) if s[1] < s[0] and s[3] == max(s[0], s[2])]
    assert len(cuts("freebsd")) >= 5 and not cuts("rfc")
    assert all(after >= PROFILES["freebsd"].max_burst_cwnd * S for _, after, _, _ in cuts("freebsd"))


def test_freebsd_slow_start_grows_up_to_two_packets_per_ack():
    S = 1452
    def growth(profile):
        return {after - before for before, after, ss, _ in cwnd_steps(profile, loss=0.0)
                if after > before and before <= ss}
    assert max(growth("freebsd")) == 2 * S and max(growth("rfc")) == S


def test_freebsd_fast_retransmits_a_lost_retransmission_again_instead_of_timing_out():
    """usrsctp strikes a fast-retransmitted chunk again once later data is acked: at 10 % loss the
    freebsd sender recovers lost retransmissions without its 1 s timer, on both engines alike."""
    import dataclasses

    PROFILES["freebsd-no-refr"] = dataclasses.replace(PROFILES["freebsd"], name="freebsd-no-refr",
                                                      refast_retransmit=False)
    try:
        runs = {name: simulate(fig7_config(32768, 0.1, "sack", profile=name), engine="python")
                for name in ("freebsd", "freebsd-no-refr")}
    finally:
        del PROFILES["freebsd-no-refr"]
    again, once = runs["freebsd"], runs["freebsd-no-refr"]
    assert again.counters["fast_retransmits"] > once.counters["fast_retransmits"]
    assert again.counters["timeouts"] < once.counters["timeouts"] and again.done_ns < once.done_ns
    resent = {}
    for f in again.sender:
        if f[1] == RTX:
            resent[f[3]] = resent.get(f[3], 0) + 1
    assert max(resent.values()) >= 2
    compiled = simulate(fig7_config(32768, 0.1, "sack", profile="freebsd"), engine="c")
    assert compiled.sender == again.sender and compiled.cwnd == again.cwnd
