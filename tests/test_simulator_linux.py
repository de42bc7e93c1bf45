"""The linux profile's rules act as the kernel's do (docs/simulator.md cites each)."""

from dataclasses import replace

import numpy as np
import pytest

from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate
from nrsack.generator.sim.model import CTRL, DATA, NS, RTX, Simulation
from nrsack.generator.sim.profiles import profile

PATH = PathConfig(bandwidth_bps=20e6, delay_s=0.01, loss=0.0)


def config(**kw):
    base = dict(protocol="tcp", sndbuf=16384, total_bytes=400_000, payload=1448, profile="linux",
                seed=2, paths=(PATH,))
    return SimConfig(**{**base, **kw})


def test_the_send_buffer_is_so_sndbuf_doubled_in_truesize():
    cfg = config()
    trace = simulate(cfg)
    rtxq = np.asarray(trace.rtxq, dtype=np.int64)[:, 3]
    segments = -(-rtxq // cfg.payload)
    truesize = cfg.payload + profile("linux").skb_overhead_bytes
    # a write goes in while the queue is below 2 x SO_SNDBUF: it may overshoot by one segment
    assert segments.max() == -(-2 * cfg.sndbuf // truesize)
    # payload, not truesize, would have allowed more than the doubled buffer in segments
    assert segments.max() < 2 * cfg.sndbuf // cfg.payload


def test_a_blocked_writer_wakes_when_a_third_of_the_buffer_is_free():
    cfg = config()
    trace = simulate(cfg)
    rows = np.asarray(trace.rtxq, dtype=np.int64)
    truesize = cfg.payload + profile("linux").skb_overhead_bytes
    queued = -(-rows[:, 3] // cfg.payload) * truesize
    blocked = rows[:, 7].astype(bool)
    wakes = np.flatnonzero(blocked[:-1] & ~blocked[1:]) + 1
    assert len(wakes) > 5
    buffer = 2 * cfg.sndbuf
    assert (buffer - queued[wakes] >= queued[wakes] // 2).all()
    # and not before: blocked rows below the buffer but short of a third free exist
    waiting = blocked & (queued < buffer)
    assert waiting.any() and (buffer - queued[waiting] < queued[waiting] // 2).all()


def test_rto_is_srtt_plus_the_larger_of_the_variance_and_200_ms_from_the_handshake():
    sim = Simulation(config(paths=(PathConfig(bandwidth_bps=20e6, delay_s=0.03),)))
    sim._handshake()
    rtt = int(0.06 * NS)
    assert sim.srtt[0] == rtt
    assert sim.rto[0] == rtt + max(4 * (rtt // 2), int(0.2 * NS))  # 60 + 200 ms, not 1 s
    rfc = Simulation(config(profile="rfc"))
    rfc._handshake()
    assert rfc.srtt[0] is None and rfc.rto[0] == NS


def test_rack_repairs_every_hole_in_the_first_round_of_recovery():
    drops = (40, 42, 44, 46, 48)
    for prof in ("linux", "rfc"):
        trace = simulate(config(profile=prof, sndbuf=1 << 20, drop_units=drops))
        rtx = [f for f in trace.sender if f[1] == RTX]
        assert sorted(f[3] for f in rtx) == list(drops), prof
        assert trace.counters["timeouts"] == 0
        spread = rtx[-1][0] - rtx[0][0]
        if prof == "linux":  # all five marked lost on the ack that began recovery
            assert spread < 0.02 * NS
        else:  # three misses per hole: the holes come out over acks spread in time
            assert spread > 0
    assert spread > 0


@pytest.mark.parametrize("cc", ["linux", "linux-reno"])
def test_cubic_and_reno_reduce_cwnd_by_their_factors(cc):
    trace = simulate(config(profile=cc, sndbuf=1 << 20, total_bytes=2_000_000, drop_units=(600,)))
    recovery = [r for r in trace.recovery if r[1] == "fast"]
    assert len(recovery) == 1
    start = recovery[0][2]
    before = [c for c in trace.cwnd if c[0] < start][-1][2]
    at = [c for c in trace.cwnd if c[0] == start][-1]
    factor = 0.7 if cc == "linux" else 0.5
    segs = before // 1448
    assert at[3] == max(int(segs * factor) if cc == "linux-reno" else segs * 717 >> 10, 2) * 1448


def test_cubic_grows_faster_than_reno_far_below_its_last_maximum():
    kw = dict(sndbuf=1 << 22, total_bytes=6_000_000, drop_units=(300,),
              paths=(PathConfig(bandwidth_bps=200e6, delay_s=0.04, queue_packets=10_000),))
    done = {p: simulate(config(profile=p, **kw)).done_ns for p in ("linux", "linux-reno")}
    assert done["linux"] < done["linux-reno"]


@pytest.mark.parametrize("cc", ["linux", "linux-reno"])
def test_congestion_avoidance_never_jumps_by_credit_kept_through_a_reduction(cc):
    """tcp_init_cwnd_reduction and tcp_enter_loss clear snd_cwnd_cnt, and tcp_cong_avoid_ai turns
    credit gathered at a larger count into one segment: a reduction leaves no credit, and no ack
    outside slow start adds more than two segments (the credit's one, and one for an ack of at most
    two segments at a count of at least two: tcp_cong_avoid_ai gives as much), even after cubic's
    plateau and several reductions."""
    # the first transmissions a kernel run lost (lab linux-tcp, 131072 x 2 % x 10 ms): small
    # windows and reductions close together
    drops = (35, 97, 158, 195, 298, 354, 383, 419, 463, 465, 476, 481, 485, 543, 554)
    trace = simulate(config(profile=cc, sndbuf=1 << 20, total_bytes=1_000_000, drop_units=drops))
    assert len([r for r in trace.recovery if r[1] == "fast"]) >= 10
    steps = [(b[2] - a[2]) for a, b in zip(trace.cwnd, trace.cwnd[1:]) if a[2] >= a[3] and b[3] == a[3]]
    assert steps and max(steps) <= 2 * 1448
    sim = Simulation(config(profile=cc, sndbuf=1 << 20, total_bytes=1_000_000))
    sim.cwnd[0], sim.ca_acked[0] = 10 * 1448, 100 * 10 * 1448  # cubic's plateau: 100 cwnd a segment
    sim._fast_retransmit(0, sim.spaces[0], 0, 0)
    assert sim.ca_acked[0] == 0


def test_cubic_counts_whole_segments_as_the_kernel_does():
    """tcp_cubic.c keeps W_max, the origin and the target in whole segments: after a loss at a
    cwnd of w segments W_max is w, and after a second loss below it (fast convergence)
    w * (1024 + 717) / 2048 rounded down."""
    sim = Simulation(config(sndbuf=1 << 20, total_bytes=2_000_000))
    sim.cwnd[0] = 11 * 1448
    sim._linux_ssthresh(0)
    assert sim.cubic[0]["w_max"] == 11
    sim.cwnd[0] = 7 * 1448
    assert sim._linux_ssthresh(0) == (7 * 717 >> 10) * 1448
    assert sim.cubic[0]["w_max"] == 7 * 1741 // 2048


def test_linux_profiles_are_for_tcp_and_mptcp_only():
    with pytest.raises(ValueError, match="profile linux is for tcp and mptcp only, not sctp"):
        config(protocol="sctp")
    assert config(protocol="mptcp", payload=1400).profile == "linux"


def test_a_linux_profile_on_sctp_is_one_line_in_every_command(tmp_path):
    from click.testing import CliRunner

    from nrsack.cli import main

    for args in (["generate", "simulate", "--protocol", "sctp", "--profile", "linux"],
                 ["generate", "sweep", "--protocol", "sctp", "--profile", "linux", "--serial"],
                 ["reproduce", "7", "--profile", "rfc,linux", "--quick", "--serial"]):
        result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / args[1])])
        assert result.exit_code in (1, 2) and isinstance(result.exception, SystemExit)
        assert "profile linux is for tcp and mptcp only, not sctp" in result.output
        assert "Traceback" not in result.output


def test_sweep_rows_carry_retransmissions_and_timeouts():
    from nrsack.generator.sim import sweep

    row = sweep.run_point(sweep.point(protocol="tcp", profile="linux", sndbuf=16384, loss=0.03,
                                      bandwidth_mbps=20, delay_ms=10, nbytes=300_000, payload=1448))
    assert row["retransmissions"] > 0 and row["timeouts"] >= 0


def test_hystart_ends_slow_start_before_any_loss():
    kw = dict(sndbuf=1 << 21, total_bytes=2_000_000,
              paths=(PathConfig(bandwidth_bps=20e6, delay_s=0.01, queue_packets=2000),))
    cubic, reno = (simulate(config(profile=p, **kw)) for p in ("linux", "linux-reno"))
    assert not cubic.recovery and not reno.recovery and cubic.counters["retransmissions"] == 0
    exits = [c for c in cubic.cwnd if c[3] < cubic.config.rcvbuf]
    assert exits and exits[0][2] == exits[0][3]  # ssthresh = cwnd: HyStart's exit
    bdp_segments = 2 * 0.01 * 20e6 / 8 / 1448
    assert 16 <= exits[0][2] // 1448 <= 2 * bdp_segments
    assert all(c[3] == reno.config.rcvbuf for c in reno.cwnd)  # reno: slow start until the end


def test_a_buffer_limited_sender_grows_cwnd_to_twice_its_flight_in_slow_start():
    trace = simulate(config(sndbuf=8192, total_bytes=300_000))
    segments_in_buffer = -(-2 * 8192 // (1448 + profile("linux").skb_overhead_bytes))
    largest = max(c[2] for c in trace.cwnd) // 1448
    # tcp_is_cwnd_limited: past the buffer's segments, but no further than twice them
    assert segments_in_buffer < largest <= 2 * segments_in_buffer


def test_a_spinning_writer_writes_as_soon_as_one_segment_fits():
    spin, poll = (simulate(config(writer=w)) for w in ("spin", "poll"))
    truesize = 1448 + profile("linux").skb_overhead_bytes
    for trace, writer in ((spin, "spin"), (poll, "poll")):
        rows = np.asarray(trace.rtxq, dtype=np.int64)
        queued = -(-rows[:, 3] // 1448) * truesize
        blocked = rows[:, 7].astype(bool)
        if writer == "spin":  # blocked exactly while the queue is at or above the buffer
            assert (blocked == (queued >= 2 * 16384)).all()
        else:
            assert (blocked & (queued < 2 * 16384)).any()
    assert spin.done_ns < poll.done_ns
    with pytest.raises(ValueError, match="writer must be one of"):
        config(writer="busy")


TWO_PATHS = (PathConfig(bandwidth_bps=20e6, delay_s=0.01), PathConfig(bandwidth_bps=20e6, delay_s=0.01))


def first_path_of(trace):
    """unit -> the subflow of its first transmission."""
    return {f[3]: f[2] for f in trace.sender if f[1] == DATA}


def test_mptcp_subflows_follow_the_linux_rules_each():
    # three holes on each subflow, taken from where a loss-free run of the same seed put its data
    cfg = config(protocol="mptcp", payload=1400, sndbuf=16384, paths=TWO_PATHS)
    placed = first_path_of(simulate(cfg))
    drops = tuple(sorted([u for u in range(100, 280) if placed[u] == 0][:3]
                         + [u for u in range(100, 280) if placed[u] == 1][:3]))
    trace = simulate(config(protocol="mptcp", payload=1400, sndbuf=16384, paths=TWO_PATHS, drop_units=drops))
    assert sorted(f[3] for f in trace.sender if f[1] == RTX) == list(drops)
    assert trace.counters["timeouts"] == 0
    assert {r[0] for r in trace.recovery if r[1] == "fast"} == {0, 1}
    reduced = [c[3] for c in trace.cwnd if c[3] < trace.config.rcvbuf]
    assert reduced and all(x % 1400 == 0 and x >= 2 * 1400 for x in reduced)  # whole segments


def test_the_mptcp_writer_waits_on_the_connections_buffer_of_payload():
    # mptcp_sendmsg: the connection holds each write's payload and a frag header against 2 x SO_SNDBUF,
    # more segments than a TCP socket's skbs would (8 of 2232 bytes of truesize in 16 KB)
    cfg = config(protocol="mptcp", payload=1400, sndbuf=8192, paths=TWO_PATHS)
    rows = np.asarray(simulate(cfg).rtxq, dtype=np.int64)
    held = -(-rows[:, 3] // cfg.payload)
    per_write = cfg.payload + profile("linux").mptcp_dfrag_overhead_bytes
    assert held.max() == -(-2 * cfg.sndbuf // per_write) == 12


def test_the_mptcp_scheduler_hands_each_write_to_the_subflow_that_drains_soonest():
    # before the second subflow joins, every write goes to the first, far beyond its initial cwnd
    # of 10, until its skbs fill its buffer (sk_stream_memory_free: 59 skbs of 2232 bytes in
    # 2 x 65536); the rest waits at the connection and goes where the scheduler says once both are up
    placed = first_path_of(simulate(config(protocol="mptcp", payload=1400, sndbuf=65536, paths=TWO_PATHS)))
    skb = 1400 + profile("linux").skb_overhead_bytes
    first = -(-2 * 65536 // skb)
    assert [placed[u] for u in range(first)] == [0] * first and 1 in placed.values()
    # a subflow 5 times farther away drains its queue 5 times slower: it gets far less of the data
    # than round robin gives it
    far = (TWO_PATHS[0], PathConfig(bandwidth_bps=20e6, delay_s=0.05))
    shares = {}
    for prof in ("linux", "rfc"):
        placed = first_path_of(simulate(config(protocol="mptcp", payload=1400, sndbuf=65536, paths=far,
                                               total_bytes=1_000_000, profile=prof)))
        shares[prof] = sum(placed.values()) / len(placed)
    assert shares["linux"] < 0.15 < shares["rfc"]


def test_slow_start_goes_on_during_rto_recovery():
    # a whole buffer's worth lost: nothing is SACKed, the RTO fires and every segment is resent
    trace = simulate(config(sndbuf=8192, drop_units=tuple(range(40, 48))))
    assert trace.counters["timeouts"] == 1
    (_, kind, start, end), = [r for r in trace.recovery if r[1] == "rto"]
    during = [c[2] // 1448 for c in trace.cwnd if start <= c[0] < end]
    assert during[0] == 1 and max(during) > 1  # tcp_may_raise_cwnd: growth in the Loss state


def test_a_joining_subflow_sends_once_fully_established_after_the_add_addr():
    # the ADD_ADDR leaves the receiver when the third ACK reaches it (3 d) and is at the sender at
    # 4 d; the join's SYN, SYN-ACK, ACK and the receiver's ack of that ACK take 4 d more
    d = int(0.01 * NS)
    # (rfc: the join right after the first handshake, data after its three frames)
    for prof, join, first_on_second in (("linux", 4 * d, 8 * d), ("rfc", 2 * d, 4 * d)):
        trace = simulate(config(protocol="mptcp", payload=1400, paths=TWO_PATHS, profile=prof))
        joins = {f[3]: f[0] for f in trace.sender if f[1] == CTRL and f[2] == 1}
        assert joins["JOIN-SYN"] == join
        assert min(f[0] for f in trace.sender if f[1] == DATA and f[2] == 1) == first_on_second


def test_a_lab_runs_losses_replay_segment_by_segment_on_each_path():
    """drop_path_packets loses the k-th first transmission of a path (its subflow's k-th segment)
    and nothing else; a run with them stays on the Python engine, which alone knows them."""
    from nrsack.generator.sim import fast

    drops = ((0, 5), (1, 3), (1, 40))
    cfg = config(protocol="mptcp", payload=1400, paths=TWO_PATHS, drop_path_packets=drops, sndbuf=65536)
    assert not fast.eligible(replace(cfg, profile="rfc"), False)
    trace = simulate(cfg)
    firsts = {(f[2], f[4]) for f in trace.sender if f[1] == DATA}
    resent = {unit for _, kind, _, unit, _ in trace.sender if kind == RTX}
    lost_units = {u for _, kind, p, u, k in trace.sender if kind == DATA and (p, k) in drops}
    assert set(drops) <= firsts and len(lost_units) == 3
    assert trace.counters["random_drops"] == 3 and resent >= lost_units


def test_a_lab_runs_join_replays_when_the_second_subflow_first_sends():
    d = int(0.01 * NS)
    for after, first in ((0.3, 2 * d + int(0.3 * NS)), (None, None)):
        trace = simulate(config(protocol="mptcp", payload=1400, paths=TWO_PATHS, join_after_s=(after,)))
        on_second = [f[0] for f in trace.sender if f[1] == DATA and f[2] == 1]
        assert (min(on_second) if on_second else None) == first
        assert trace.done_ns is not None


def test_a_window_that_filled_cwnd_stays_cwnd_limited_until_acked():
    """tcp_cwnd_validate: once the pipe reaches cwnd, the path is cwnd-limited (cwnd may grow)
    until the ack passes what was sent then, even if the pipe falls below cwnd meanwhile."""
    sim = Simulation(config())
    sp, S = sim.spaces[0], sim.S
    sim.cwnd[0], sim.flight[0], sp.sent, sp.cum = 4 * S, 4 * S, 10, 6
    sim._validate_cwnd()
    assert sim.cwnd_limited[0] and sim.cwnd_usage_seq[0] == 10
    sim.flight[0], sp.sent, sp.cum = 2 * S, 11, 9
    sim._validate_cwnd()
    assert sim.cwnd_limited[0] and sim.cwnd_usage_seq[0] == 10
    sp.cum = 10
    sim._validate_cwnd()
    assert not sim.cwnd_limited[0] and sim.cwnd_usage_seq[0] == 11


@pytest.mark.parametrize("reorder_timer", [True, False])
def test_a_hole_with_one_segment_sacked_above_is_lost_after_racks_reordering_window(reorder_timer):
    """tcp_rack_detect_loss with no reordering seen and fewer than three segments SACKed: the hole is
    lost once it has been out the SACKed segment's RTT plus min_rtt / 4, when the reorder timer fires
    (tcp_rack_reo_timeout), not at the RTO. Eleven segments: the first ten leave at once, the ninth
    is lost, the tenth alone is SACKed above it before the eleventh can be."""
    sim = Simulation(config(sndbuf=1 << 20, total_bytes=11 * 1448, drop_units=(8,)))
    sim.prof = replace(sim.prof, rack_reorder_timer=reorder_timer)
    trace = sim.run()
    sent = {u: t for t, kind, _, u, _ in trace.sender if kind == DATA}
    resent = [t for t, kind, _, u, _ in trace.sender if kind == RTX and u == 8]
    rtt = int(2 * PATH.delay_s * NS)
    waited = resent[0] - sent[8]
    if reorder_timer:
        assert rtt < waited < 2 * rtt and trace.counters["timeouts"] == 0  # its RTT, queue included, + 5 ms
    else:  # the RTO: at least rto_min (no tail-loss probe in the profile)
        assert waited > 0.2 * NS and trace.counters["timeouts"] == 1
