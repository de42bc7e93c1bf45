"""Behaviour of the model itself: the papers' figure 2 / figure 4 contrast, the send buffer bound,
the loss processes."""

import numpy as np
import pytest

from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate
from nrsack.generator.sim.model import ACK, DATA, RTX

PATH = PathConfig(bandwidth_bps=20e6, delay_s=0.01)


def _cum_covering(trace, unit):
    return next(i for i, f in enumerate(trace.sender) if f[1] == ACK and f[3][0] > unit)


@pytest.mark.parametrize("protocol", ["sctp", "tcp"])
def test_one_loss_blocks_a_sack_sender_but_not_an_nrsack_sender(protocol):
    """Figures 2 and 4 of the SCTP paper: unit 20 is lost with a full 8-packet buffer. With SACKs
    no new data leaves between the first gap report and the cum ack that covers 20; with
    NR-SACKs new data leaves during the recovery."""
    sent_in_recovery = {}
    for ack in ("sack", "nrsack"):
        tr = simulate(SimConfig(protocol=protocol, ack=ack, sndbuf=8000, total_bytes=60_000,
                                paths=(PATH,), drop_units=(20,), isn=0))
        first_gap = next(i for i, f in enumerate(tr.sender) if f[1] == ACK and f[3][1])
        done = _cum_covering(tr, 20)
        sent_in_recovery[ack] = [f[3] for f in tr.sender[first_gap:done] if f[1] == DATA]
        assert [f[3] for f in tr.sender if f[1] == RTX] == [20]
        assert tr.counters["fast_retransmits"] == 1 and tr.counters["timeouts"] == 0
    assert sent_in_recovery["sack"] == []
    assert len(sent_in_recovery["nrsack"]) >= 4


@pytest.mark.parametrize("protocol,paths", [("sctp", 1), ("cmt", 2), ("tcp", 1), ("mptcp", 2)])
@pytest.mark.parametrize("ack", ["sack", "nrsack"])
def test_the_send_buffer_bounds_the_rtxq(protocol, paths, ack):
    tr = simulate(SimConfig(protocol=protocol, ack=ack, sndbuf=12000, total_bytes=300_000, seed=2,
                            paths=tuple(PathConfig(bandwidth_bps=20e6, delay_s=0.01, loss=0.03)
                                        for _ in range(paths))))
    rows = np.array(tr.rtxq)
    rtxq = rows[:, 4] if ack == "nrsack" else rows[:, 3]
    assert rtxq.max() <= 12000
    assert (rows[:, 4] <= rows[:, 3]).all()  # rtxq_nr <= rtxq_sack
    if ack == "sack":
        assert (rows[:, 6] == 0).all()  # nothing NR-acked without NR-SACKs
    else:
        assert rows[:, 6].max() > 0
    assert tr.done_ns is not None and tr.counters["acked_bytes"] == 300_000


@pytest.mark.parametrize("protocol", ["sctp", "tcp"])
def test_lossless_transfer_has_no_recovery(protocol):
    tr = simulate(SimConfig(protocol=protocol, ack="nrsack", sndbuf=64000, total_bytes=500_000,
                            paths=(PATH,)))
    assert tr.counters["retransmissions"] == 0 and tr.recovery == []
    rows = np.array(tr.rtxq)
    assert (rows[:, 5] == 0).all() and not rows[:, 8].any()  # nothing gap-acked, never gap_open


def _drops(trace):
    """Per transmission on the single path: was it lost (the receiver never saw it)?"""
    sent = [f[3] for f in trace.sender if f[1] in (DATA, RTX)]
    arrived = [f[3] for f in trace.receiver if f[1] == DATA]
    lost, j = [], 0
    for u in sent:
        if j < len(arrived) and arrived[j] == u:
            lost.append(False)
            j += 1
        else:
            lost.append(True)
    assert j == len(arrived)
    return np.array(lost)


@pytest.mark.parametrize("model,burst", [("bernoulli", 1.0), ("gilbert", 4.0)])
def test_loss_processes(model, burst):
    tr = simulate(SimConfig(protocol="sctp", ack="nrsack", sndbuf=64000, total_bytes=15_000_000,
                            seed=9, loss_model=model, burst=burst,
                            paths=(PathConfig(bandwidth_bps=20e6, delay_s=0.005, loss=0.04),)),
                  receiver_trace=True)
    lost = _drops(tr)
    assert abs(lost.mean() - 0.04) < 0.012
    after_loss = lost[1:][lost[:-1]].mean()  # P(lost | previous lost): 1 - 1/burst for Gilbert
    assert abs(after_loss - (1 - 1 / burst if model == "gilbert" else 0.04)) < 0.1
