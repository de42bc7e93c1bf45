"""The lab's sample captures (sample-pcaps/lab/: `nrsack lab run` sender captures, each with the
stack's truth as NAME.truth.json) hold the truth file's contract: the analyzer's key names with the
analyzer's meaning (b: the writer blocked on a buffer full of sent data, p: that with a gap open),
the writer's whole wait under names of its own, and 0 <= p <= b <= the writer's wait <= q."""

import json

import pytest

from nrsack.analyzer import analyze
from support.paths import LAB_SAMPLES

CAPTURES = sorted(LAB_SAMPLES.glob("*.pcap"))
KEYS = ("q_s", "b_s", "p_s", "b_over_q", "p_over_q", "app_blocked_s", "app_blocked_unsent_s", "app_blocked_over_q",
        "stack", "complete", "parameters", "data_bytes")


def truth_of(pcap):
    return json.loads(pcap.with_name(pcap.stem + ".truth.json").read_text())


def test_every_lab_sample_has_its_truth_and_stays_small():
    truths = {p.name.removesuffix(".truth.json") for p in LAB_SAMPLES.glob("*.truth.json")}
    assert truths == {p.stem for p in CAPTURES} and len(CAPTURES) >= 3
    assert {truth_of(p)["stack"] for p in CAPTURES} >= {"linux-tcp", "linux-mptcp", "usrsctp"}
    assert all(p.stat().st_size < 300_000 for p in CAPTURES)


@pytest.mark.parametrize("pcap", CAPTURES, ids=lambda p: p.stem)
def test_truth_keys_and_invariants(pcap):
    t = truth_of(pcap)
    assert set(KEYS) <= set(t), set(KEYS) - set(t)
    assert t["complete"] and t["q_s"] > 0
    eps = 1e-6
    assert -eps <= t["p_s"] <= t["b_s"] + eps <= t["app_blocked_s"] + 2 * eps <= t["q_s"] + 3 * eps, t
    assert t["b_s"] + t["app_blocked_unsent_s"] == pytest.approx(t["app_blocked_s"], abs=eps)
    for name in ("b", "p", "app_blocked"):
        assert t[f"{name}_over_q"] == pytest.approx(t[f"{name}_s"] / t["q_s"]), name
    # the retired names, whose b meant the writer's whole wait, are gone
    assert not {"b_sent_full_s", "b_unsent_s", "b_wakeup_s"} & set(t)


@pytest.mark.parametrize("pcap", CAPTURES, ids=lambda p: p.stem)
def test_the_analyzer_reads_the_senders_direction(pcap):
    t = truth_of(pcap)
    (flow,) = [e.summary for e in analyze(pcap).entries if e.summary["src"].startswith("10.0.0.1:")]
    assert flow["complete"] and flow["protocol"] == {"usrsctp": "sctp", "linux-tcp": "tcp"}.get(t["stack"], "mptcp")
    # q from the sender's first write against the capture's first data: the same transfer (MPTCP's
    # capture q runs on to the DATA_FIN's ack, docs/lab.md)
    assert flow["q_s"] == pytest.approx(t["q_s"], abs=0.005 if t["stack"] != "linux-mptcp" else 0.1)


@pytest.mark.parametrize("pcap", [p for p in CAPTURES if truth_of(p)["stack"] == "usrsctp"], ids=lambda p: p.stem)
def test_usrsctp_samples_agree_with_the_analyzer_given_the_buffer(pcap):
    """usrsctp's buffer counts payload (less 16 bytes a chunk), so given SO_SNDBUF the analyzer's b/q
    and p/q are the truth's, under the same names."""
    t = truth_of(pcap)
    flow = analyze(pcap, sndbuf=t["sndbuf_bytes"]).summary.iloc[0]
    assert flow["b_over_q"] == pytest.approx(t["b_over_q"], abs=0.05)
    assert flow["p_over_q"] == pytest.approx(t["p_over_q"], abs=0.05)
