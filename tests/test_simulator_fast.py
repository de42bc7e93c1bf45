"""The compiled event loop gives exactly the Python model's trace (single-path SCTP and TCP)."""

import itertools

import numpy as np
import pytest

from nrsack.generator.sim import fast
from nrsack.generator.sim.model import PathConfig, SimConfig, simulate
from nrsack.generator.sim.truth import Truth
from nrsack.generator.sim.wire import write_pcap

FIELDS = ("sender", "cwnd", "recovery", "counters", "first_data_ns", "done_ns")


def test_the_compiled_loop_is_installed_beside_its_loader():
    # built by setup.py at install, never at first use: a wheel must carry it
    assert fast._installed_path().parent == fast.Path(fast.__file__).parent
    assert fast.library().fastsim_run is not None


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
    np.testing.assert_array_equal(np.asarray(compiled.rtxq, dtype=np.int64),
                                  np.asarray(reference.rtxq, dtype=np.int64))
    assert reference.counters["retransmissions"] > 0
    assert Truth(compiled).summary() == Truth(reference).summary()


@pytest.mark.parametrize("protocol,ack", itertools.product(("sctp", "tcp"), ("sack", "nrsack")))
def test_compiled_writer_writes_the_python_writers_bytes(tmp_path, protocol, ack):
    cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=16000, total_bytes=200_001, seed=3,
                    isn=2**32 - 60, paths=(PathConfig(bandwidth_bps=30e6, delay_s=0.01, loss=0.03),))
    compiled = simulate(cfg, receiver_trace=True, engine="c")
    assert compiled.columns is not None  # so write_pcap takes the compiled writer
    reference = simulate(cfg, receiver_trace=True, engine="python")
    assert compiled.receiver == reference.receiver
    for side in ("sender", "receiver"):
        write_pcap(compiled, getattr(compiled, side), tmp_path / f"c-{side}.pcap")
        write_pcap(reference, getattr(reference, side), tmp_path / f"py-{side}.pcap")
        assert (tmp_path / f"c-{side}.pcap").read_bytes() == (tmp_path / f"py-{side}.pcap").read_bytes()


def test_engine_c_refuses_what_it_does_not_model():
    cfg = SimConfig(protocol="cmt", paths=(PathConfig(), PathConfig()))
    with pytest.raises(RuntimeError):
        simulate(cfg, engine="c")
