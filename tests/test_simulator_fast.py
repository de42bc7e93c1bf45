"""The compiled event loop gives exactly the Python model's trace (single-path SCTP and TCP)."""

import itertools

import pytest

from nrsack.generator.sim import fast
from nrsack.generator.sim.model import PathConfig, SimConfig, simulate

FIELDS = ("sender", "rtxq", "cwnd", "recovery", "counters", "first_data_ns", "done_ns")


def test_the_compiled_loop_builds():
    assert fast.library() is not None, "cc could not build generator/sim/_fastsim.c"


@pytest.mark.parametrize("protocol,ack,loss_model", itertools.product(
    ("sctp", "tcp"), ("sack", "nrsack"), ("bernoulli", "gilbert")))
@pytest.mark.parametrize("loss,sndbuf,queue", [(0.0, 8000, 100), (0.02, 8000, 100),
                                               (0.05, 64000, 10), (0.2, 16000, 100)])
def test_compiled_loop_equals_the_python_model(protocol, ack, loss_model, loss, sndbuf, queue):
    cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=sndbuf, total_bytes=200_001, seed=3,
                    loss_model=loss_model, drop_units=(5,), isn=2**32 - 60,
                    paths=(PathConfig(bandwidth_bps=30e6, delay_s=0.01, loss=loss,
                                      queue_packets=queue),))
    reference = simulate(cfg, engine="python")
    compiled = simulate(cfg, engine="c")
    for name in FIELDS:
        assert getattr(compiled, name) == getattr(reference, name), name
    assert reference.counters["retransmissions"] > 0


def test_engine_c_refuses_what_it_does_not_model():
    cfg = SimConfig(protocol="cmt", paths=(PathConfig(), PathConfig()))
    with pytest.raises(RuntimeError):
        simulate(cfg, engine="c")
