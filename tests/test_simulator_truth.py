"""The analyzer, given only a simulated sender-side pcap, reproduces the simulator's truth:
the RtxQ after every ack and every first transmission exactly, p and q within one packet time."""

import numpy as np
import pytest

from nrsack.analyzer import analyze
from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate, write_pcap
from nrsack.generator.sim.model import ACK
from nrsack.generator.sim.truth import Truth

B = 16000
ONE_PACKET_S = (1000 + 48) * 8 / 10e6  # serialisation time of one packet on the slowest path

CASES = [
    ("sctp", (0.02,), None),
    ("sctp", (0.05,), 2**32 - 700),  # TSNs wrap around mid-transfer
    ("tcp", (0.02,), 2**32 - 150_000),  # sequence numbers wrap around
    ("cmt", (0.002, 0.04), None),
    ("mptcp", (0.03,), None),  # one subflow: data level and subflow level differ on the wire
    ("mptcp", (0.002, 0.04), None),  # two subflows joined by MP_JOIN
    ("cmt", ((0.01, 0.005, 20e6), (0.03, 0.03, 10e6)), None),  # asymmetric paths: stale acks
]


def _path(spec):
    """A loss rate (20 Mbit/s, 10 ms), or (loss, one-way delay s, bandwidth bit/s)."""
    loss, delay, bandwidth = spec if isinstance(spec, tuple) else (spec, 0.01, 20e6)
    return PathConfig(bandwidth_bps=bandwidth, delay_s=delay, loss=loss)


def _run(tmp_path, protocol, ack, losses, isn, seed=5):
    cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=B, total_bytes=400_000, seed=seed, isn=isn,
                    paths=tuple(_path(x) for x in losses))
    trace = simulate(cfg)
    pcap = tmp_path / f"{protocol}-{ack}.pcap"
    write_pcap(trace, trace.sender, pcap)
    return Truth(trace), analyze(str(pcap), sndbuf=B)


def _top_entry(analysis):
    s = analysis.summary
    top = s[s.parent.isna()]
    assert len(top) == 1, f"expected one sender direction, got\n{s}"
    return top.iloc[0]


@pytest.mark.parametrize("ack", ["sack", "nrsack"])
@pytest.mark.parametrize("protocol,losses,isn", CASES)
def test_analyzer_reproduces_truth(tmp_path, protocol, losses, isn, ack):
    truth, analysis = _run(tmp_path, protocol, ack, losses, isn)
    top = _top_entry(analysis)
    expected = truth.rtxq_table()
    got = analysis.rtxq[analysis.rtxq.flow == top.id]
    # rows before the first DATA (a TCP SYN-ACK acks the SYN) carry an empty queue
    before = got[got.frame < expected.frame.iloc[0]]
    assert (before[["rtxq_sack_bytes", "rtxq_nr_bytes", "sacked_bytes"]].to_numpy() == 0).all()
    got = got[got.frame >= expected.frame.iloc[0]].reset_index(drop=True)
    assert truth.trace.counters["retransmissions"] > 0, "the run must include loss recovery"
    if len(losses) > 1 and isinstance(losses[0], tuple):
        cums = [f[3][0] for f in truth.trace.sender if f[1] == ACK]
        assert any(b < a for a, b in zip(cums, cums[1:])), "the paths must reorder acks"
    if protocol == "mptcp":
        # decision 12: the DSNs subflow acks cover are sacked at the data level, beyond any NR block
        assert (expected.sacked_bytes > expected.nr_acked_bytes).any()
        assert expected.gap_open.to_numpy().astype(bool).any()
    assert len(got) == len(expected)
    np.testing.assert_array_equal(got.frame.to_numpy(), expected.frame.to_numpy())
    for col in ("rtxq_sack_bytes", "rtxq_nr_bytes", "rtxq_whatif_bytes", "sacked_bytes",
                "nr_acked_bytes", "blocked", "gap_open"):
        np.testing.assert_array_equal(got[col].to_numpy().astype(np.int64),
                                      expected[col].to_numpy().astype(np.int64), err_msg=col)
    s = truth.summary()
    assert bool(top.nr_sack) == (ack == "nrsack")
    assert top.complete and s["complete"]
    assert abs(top.q_s - s["q_s"]) <= ONE_PACKET_S
    assert abs(top.p_s - s["p_s"]) <= ONE_PACKET_S
    assert abs(top.b_s - s["b_s"]) <= ONE_PACKET_S
    assert top.blocking_intervals == s["blocking_intervals"]
    got_b = analysis.blocking[analysis.blocking.flow == top.id].reset_index(drop=True)
    want_b = truth.intervals
    assert len(got_b) == len(want_b)
    np.testing.assert_allclose(got_b.start_s, want_b.start_s, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got_b.end_s, want_b.end_s, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(got_b.gap_open.astype(bool), want_b.gap_open.astype(bool))
    np.testing.assert_array_equal(got_b.rtxq_bytes_at_start, want_b.rtxq_bytes_at_start)
    assert top.max_rtxq_sack_bytes == s["max_rtxq_sack_bytes"]
    assert top.max_rtxq_nr_bytes == s["max_rtxq_nr_bytes"]


def test_nrsack_run_frees_data_and_blocks_in_recovery(tmp_path):
    """The comparison above is not vacuous: these runs do block, inside loss recovery, and
    NR-SACKs free data above the cum ack."""
    truth, _ = _run(tmp_path, "sctp", "nrsack", (0.02,), None)
    s = truth.summary()
    assert s["max_rtxq_sack_bytes"] > s["max_rtxq_nr_bytes"]
    sack_truth, _ = _run(tmp_path, "sctp", "sack", (0.02,), None)
    assert sack_truth.summary()["p_s"] > 0
