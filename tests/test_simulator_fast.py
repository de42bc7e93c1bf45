"""The compiled event loop gives exactly the Python model's trace (single-path SCTP and TCP, MPTCP
over 1-3 subflows)."""

import ast
import dataclasses
import itertools
import subprocess
import sys

import numpy as np
import pytest

from nrsack.generator.sim import fast
from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate, write_pcap
from nrsack.generator.sim.model import Simulation
from nrsack.generator.sim.truth import Truth

FIELDS = ("sender", "cwnd", "recovery", "counters", "first_data_ns", "done_ns")


def test_the_compiled_loop_is_installed_beside_its_loader():
    # built by setup.py at install, never at first use: a wheel must carry it
    assert fast._installed_path().parent == fast.Path(fast.__file__).parent
    assert fast.library().fastsim_run is not None


def sim_imports():
    """generator/sim's own import graph, module -> the sibling modules it imports anywhere in its
    source (inside functions too: the cycle engine.py removed hid in function-level imports)."""
    here = fast.Path(fast.__file__).parent
    modules = {p.stem for p in here.glob("*.py")}
    graph = {}
    for name in modules:
        imported = set()
        for node in ast.walk(ast.parse((here / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    imported.add(node.module.split(".")[0])
                else:
                    imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nrsack.generator.sim."):
                imported.add(node.module.split(".")[3])
        graph[name] = imported & modules
    return graph


def test_the_simulator_modules_import_each_other_without_a_cycle():
    graph = sim_imports()
    assert {"model", "wire"} <= graph["fast"]  # the compiled path builds on both
    assert {"fast", "model", "wire"} <= graph["engine"]  # the facade that chooses between them

    def cycle_from(name, path):
        if name in path:
            return path[path.index(name):] + [name]
        for child in sorted(graph[name]):
            found = cycle_from(child, path + [name])
            if found:
                return found
        return None

    for name in sorted(graph):
        assert cycle_from(name, []) is None, " -> ".join(cycle_from(name, []))


def test_the_python_engine_and_wire_load_without_the_compiled_one():
    # a fresh interpreter: what importing model.py and wire.py alone pulls in
    code = ("import sys; import nrsack.generator.sim.model, nrsack.generator.sim.wire; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('nrsack.generator.sim.'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = loaded.stdout.split()
    assert "nrsack.generator.sim.model" in names and "nrsack.generator.sim.wire" in names
    assert "nrsack.generator.sim.fast" not in names and "nrsack.generator.sim.engine" not in names


@pytest.mark.parametrize("profile", ["rfc", "ns2", "freebsd"])
@pytest.mark.parametrize("protocol,ack,loss_model", itertools.product(
    ("sctp", "tcp"), ("sack", "nrsack"), ("bernoulli", "gilbert")))
@pytest.mark.parametrize("loss,sndbuf,queue", [(0.0, 8000, 100), (0.02, 8000, 100),
                                               (0.05, 64000, 10), (0.2, 16000, 100)])
def test_compiled_loop_equals_the_python_model(protocol, ack, loss_model, loss, sndbuf, queue,
                                               profile):
    cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=sndbuf, total_bytes=200_001, seed=3,
                    loss_model=loss_model, drop_units=(5,), isn=2**32 - 60, profile=profile,
                    paths=(PathConfig(bandwidth_bps=30e6, delay_s=0.01, loss=loss,
                                      queue_packets=queue),))
    assert_engines_agree(cfg)


@pytest.mark.parametrize("profile", ["rfc", "ns2", "freebsd"])
@pytest.mark.parametrize("ack", ["sack", "nrsack"])
def test_engines_agree_with_ack_loss_and_a_fixed_duration(profile, ack):
    cfg = SimConfig(protocol="sctp", ack=ack, sndbuf=32768, total_bytes=3_000_000, seed=5,
                    payload=1452, profile=profile, duration_s=2.5,
                    paths=(PathConfig(bandwidth_bps=30e6, delay_s=0.02, loss=0.01, ack_loss=0.05),))
    reference = assert_engines_agree(cfg)
    assert reference.done_ns is None  # the duration, not the transfer, ended the run
    assert reference.last_frame_ns() <= 2.5e9


# switches model.py turns into the numbers fast.run hands to _fastsim.c (grow_margin, U, ...), or CMT's
COMPILED_BY_FAMILY = {"send_while_below_cwnd", "grow_when_flight_reached_cwnd", "cwnd_mtu_over_chunk_bytes",
                      "cmt_delayed_ack"}


def test_a_profile_with_any_switch_the_compiled_engine_lacks_runs_on_python():
    """Every profile switch fast.py never hands to _fastsim.c, set away from its default by some profile,
    is either one the C engine reads through model.py's numbers (COMPILED_BY_FAMILY) or makes that
    profile Python-only: a new switch cannot silently run compiled and wrong."""
    import re
    from pathlib import Path
    from nrsack.generator.sim import profiles
    glue = Path(fast.__file__).read_text()
    default = profiles.Profile(name="default")
    for name, profile in profiles.PROFILES.items():
        for field in dataclasses.fields(profiles.Profile):
            if field.name == "name" or re.search(rf"\b{field.name}\b", glue):
                continue
            if getattr(profile, field.name) != getattr(default, field.name):
                assert field.name in profiles._PYTHON_ONLY_SWITCHES or field.name in COMPILED_BY_FAMILY, (name, field.name)
                if field.name in profiles._PYTHON_ONLY_SWITCHES:
                    assert name in profiles.PYTHON_ONLY


@pytest.mark.parametrize("profile", ["linux", "linux-reno"])
def test_linux_profiles_run_on_the_python_engine_and_say_so(profile):
    # their send buffer, RACK and cubic are in model.py only (docs/simulator.md)
    cfg = SimConfig(protocol="tcp", sndbuf=16384, total_bytes=200_001, seed=3, payload=1448,
                    profile=profile, paths=(PathConfig(bandwidth_bps=30e6, delay_s=0.01, loss=0.02),))
    assert not fast.eligible(cfg, False)
    with pytest.raises(RuntimeError, match="does not apply"):
        simulate(cfg, engine="c")
    auto, python = simulate(cfg), simulate(cfg, engine="python")
    assert auto.columns is None and auto.counters["retransmissions"] > 0
    assert list(auto.sender) == list(python.sender) and auto.rtxq == python.rtxq


# MPTCP: its ack (subflow SACK blocks beside the DSS's data-level NR blocks), decision 12's data
# level and the subflows (round robin, per-subflow spaces and delayed acks) are its own, so it has
# its own grid over 1-3 subflows of different rates, delays and queues; seeds vary with the point
MPTCP_PATHS = [PathConfig(bandwidth_bps=30e6, delay_s=0.01), PathConfig(bandwidth_bps=10e6, delay_s=0.02,
                                                                         queue_packets=20),
               PathConfig(bandwidth_bps=6e6, delay_s=0.035, queue_packets=50)]


def mptcp_paths(subflows, loss, ack_loss=0.0, queue=None):
    return tuple(dataclasses.replace(p, loss=loss, ack_loss=ack_loss,
                                     queue_packets=queue or p.queue_packets)
                 for p in MPTCP_PATHS[:subflows])


@pytest.mark.parametrize("profile", ["rfc", "ns2", "freebsd"])
@pytest.mark.parametrize("subflows", [1, 2, 3])
@pytest.mark.parametrize("ack,loss_model", itertools.product(("sack", "nrsack"), ("bernoulli", "gilbert")))
@pytest.mark.parametrize("loss,sndbuf,queue,seed", [(0.0, 8000, None, 1), (0.02, 16000, None, 2),
                                                    (0.05, 64000, 10, 3), (0.2, 16000, None, 4)])
def test_compiled_loop_equals_the_python_model_for_mptcp(subflows, ack, loss_model, loss, sndbuf, queue,
                                                         seed, profile):
    cfg = SimConfig(protocol="mptcp", ack=ack, sndbuf=sndbuf, total_bytes=200_001, seed=seed,
                    loss_model=loss_model, drop_units=(5,), isn=2**32 - 60, profile=profile, payload=1400,
                    paths=mptcp_paths(subflows, loss, queue=queue))
    assert fast.eligible(cfg, False)
    reference = assert_engines_agree(cfg)
    acks = [f[3] for f in reference.sender if f[1] == 2]
    # the run exercised what is MPTCP's own: subflow blocks, with NR-SACK the DSS's NR blocks,
    # and data on every subflow
    assert any(a[4] for a in acks)
    assert any(a[1] for a in acks) == (ack == "nrsack")
    assert {f[2] for f in reference.sender if f[1] == 0} == set(range(subflows))


@pytest.mark.parametrize("profile", ["rfc", "ns2", "freebsd"])
@pytest.mark.parametrize("ack", ["sack", "nrsack"])
def test_mptcp_engines_agree_with_ack_loss_and_a_fixed_duration(profile, ack):
    cfg = SimConfig(protocol="mptcp", ack=ack, sndbuf=32768, total_bytes=3_000_000, seed=5,
                    payload=1400, profile=profile, duration_s=2.5,
                    paths=mptcp_paths(2, 0.01, ack_loss=0.05))
    reference = assert_engines_agree(cfg)
    assert reference.done_ns is None
    assert reference.last_frame_ns() <= 2.5e9


@pytest.mark.parametrize("subflows,ack", [(1, "sack"), (2, "nrsack"), (3, "sack")])
def test_mptcp_pcaps_of_a_compiled_run_are_the_python_runs_bytes(tmp_path, subflows, ack):
    # the compiled run's frames go through wire.py's writer (the DSS options are wire.py's only)
    cfg = SimConfig(protocol="mptcp", ack=ack, sndbuf=16000, total_bytes=200_001, seed=3, payload=1400,
                    isn=2**32 - 60, paths=mptcp_paths(subflows, 0.03))
    compiled, reference = assert_pcaps_agree(cfg, tmp_path)
    assert compiled.columns is not None and reference.columns is None


def test_a_compiled_run_leaves_the_python_models_streams_as_it_found_them():
    # engine.simulate falls back to model.py on the same Simulation when the C loop gives up (its
    # draws ran out): that run must be the Python run, so its random streams must be untouched
    cfg = SimConfig(protocol="mptcp", ack="nrsack", sndbuf=16000, total_bytes=200_001, seed=3,
                    payload=1400, loss_model="gilbert", paths=mptcp_paths(2, 0.05, ack_loss=0.05))
    sim = Simulation(cfg)
    streams = sim.rng_paths + sim.rng_acks
    before = [g.bit_generator.state for g in streams]
    assert fast.run(sim).counters["retransmissions"] > 0
    assert [g.bit_generator.state for g in streams] == before


@pytest.mark.parametrize("profile", ["linux", "linux-reno"])
def test_mptcp_under_the_linux_profiles_stays_on_the_python_engine(profile):
    cfg = SimConfig(protocol="mptcp", sndbuf=16000, total_bytes=100_000, seed=3, payload=1400,
                    profile=profile, paths=mptcp_paths(2, 0.02))
    assert not fast.eligible(cfg, False)
    with pytest.raises(RuntimeError, match="does not apply"):
        simulate(cfg, engine="c")
    assert simulate(cfg).columns is None


def assert_engines_agree(cfg):
    reference = simulate(cfg, engine="python")
    compiled = simulate(cfg, engine="c")
    for name in FIELDS:
        assert getattr(compiled, name) == getattr(reference, name), name
    np.testing.assert_array_equal(np.asarray(compiled.rtxq, dtype=np.int64),
                                  np.asarray(reference.rtxq, dtype=np.int64))
    assert reference.counters["retransmissions"] > 0
    assert Truth(compiled).summary() == Truth(reference).summary()
    return reference


@pytest.mark.parametrize("protocol,ack", itertools.product(("sctp", "tcp"), ("sack", "nrsack")))
def test_compiled_writer_writes_the_python_writers_bytes(tmp_path, protocol, ack):
    cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=16000, total_bytes=200_001, seed=3,
                    isn=2**32 - 60, paths=(PathConfig(bandwidth_bps=30e6, delay_s=0.01, loss=0.03),))
    compiled, _ = assert_pcaps_agree(cfg, tmp_path)
    assert compiled.columns is not None  # so write_pcap took the compiled writer


def assert_pcaps_agree(cfg, tmp_path):
    """Both engines' runs of `cfg`, their receiver frames and both sides' pcaps the same."""
    compiled = simulate(cfg, receiver_trace=True, engine="c")
    reference = simulate(cfg, receiver_trace=True, engine="python")
    assert compiled.receiver == reference.receiver
    for side in ("sender", "receiver"):
        write_pcap(compiled, getattr(compiled, side), tmp_path / f"c-{side}.pcap")
        write_pcap(reference, getattr(reference, side), tmp_path / f"py-{side}.pcap")
        assert (tmp_path / f"c-{side}.pcap").read_bytes() == (tmp_path / f"py-{side}.pcap").read_bytes()
    return compiled, reference


def test_engine_c_refuses_what_it_does_not_model():
    cfg = SimConfig(protocol="cmt", paths=(PathConfig(), PathConfig()))
    with pytest.raises(RuntimeError):
        simulate(cfg, engine="c")


# each ns-2 rule alone on top of rfc, and taken out of ns2, in a run where it fires ((loss, seed)
# found by trying seeds 1-10): the rule changes the trace, and the two engines still agree on it.
# The cum-ack timer restart coincides with R3 on one path (the cum ack passes the earliest
# outstanding unit whenever it passes data), so there it must leave the trace as it was.
NS2_RULES = {"restart": (dict(restart_timer_on_cum_ack=True), (0.2, 1), (0.2, 1), False),
             "heartbeat": (dict(path_max_retrans=5), (0.7, 2), (0.7, 1), True),
             "degrade": (dict(cwnd_degrade=True), (0.1, 6), (0.2, 6), True)}


@pytest.mark.parametrize("rule", sorted(NS2_RULES))
def test_each_ns2_timer_rule_changes_the_run_and_engines_agree(rule, monkeypatch):
    from nrsack.generator.sim.profiles import PROFILES

    change, on_rfc, on_ns2, changes = NS2_RULES[rule]
    off = {k: type(v)(0) for k, v in change.items()}
    monkeypatch.setitem(PROFILES, "with", dataclasses.replace(PROFILES["rfc"], name="with", **change))
    monkeypatch.setitem(PROFILES, "without", dataclasses.replace(PROFILES["ns2"], name="without", **off))
    for base, variant, (loss, seed) in (("rfc", "with", on_rfc), ("ns2", "without", on_ns2)):
        runs = [assert_engines_agree(SimConfig(
            protocol="sctp", ack="sack", sndbuf=8192, total_bytes=60_000, seed=seed, payload=1452,
            profile=prof, paths=(PathConfig(bandwidth_bps=30e6, delay_s=0.02, loss=loss),)))
            for prof in (base, variant)]
        differ = runs[0].sender != runs[1].sender or runs[0].cwnd != runs[1].cwnd
        assert differ == changes, (rule, base)
        if rule == "heartbeat":
            # the HEARTBEAT's ack undoes the RTO backoff without any data being acked: only with
            # the rule does a timeout retransmission follow one at the 60 s maximum sooner, with no
            # ack between them
            with_hb, without_hb = (runs[0], runs[1]) if base == "ns2" else (runs[1], runs[0])
            assert backoff_undone_without_acks(with_hb) and not backoff_undone_without_acks(without_hb)


def backoff_undone_without_acks(trace, rto_max_ns=60 * 10**9):
    """Three timeout retransmissions a, b, c with no ack among them (so no RTT sample), b a full
    60 s after a, c sooner after b."""
    rtx = []  # the retransmissions since the last ack
    for t, kind, *_ in trace.sender:
        if kind == 2:  # ACK
            rtx = []
        elif kind == 1:  # RTX
            rtx.append(t)
            if len(rtx) >= 3 and rtx[-2] - rtx[-3] >= rto_max_ns and rtx[-1] - rtx[-2] < rto_max_ns:
                return True
    return False
