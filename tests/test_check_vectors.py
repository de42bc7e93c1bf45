"""`nrsack check` on its conformance vectors (sample-pcaps/conformance/, generator/timelines/conformance.py),
on every clean sample capture and on the broken vectors of sample-pcaps/broken/.

Each vector's findings (rule, frames, severity) are declared by hand in the timeline module and stated
in its NAME.expected.json; the checker must report exactly those, no more, no fewer."""

import json

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from nrsack.analyzer import check
from nrsack.analyzer.rules import REGISTRY
from nrsack.generator.timelines import conformance as T
from support.paths import SAMPLES

VECTORS = {t.name: t for t in (factory() for factory in T.TIMELINES)}


def vector_path(timeline, suffix):
    return SAMPLES / timeline.options["subdir"] / (timeline.name + suffix)


def reported(path):
    frame = check(path)
    return sorted((row.rule, list(row.frames), row.severity) for row in frame.itertuples())


def declared(findings):
    return sorted((f["rule"], f["frames"], f.get("severity", REGISTRY[f["rule"]].severity)) for f in findings)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_expected_file_states_the_declared_findings(name):
    timeline = VECTORS[name]
    on_disk = json.loads(vector_path(timeline, ".expected.json").read_text())
    assert on_disk == T.expected_file(timeline)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_vector_raises_exactly_its_findings(name):
    timeline = VECTORS[name]
    assert reported(vector_path(timeline, ".pcap")) == declared(timeline.options["findings"])


# GEN-02 (capture clock stepped) is about the capture file, not the traffic: its raising and
# close-but-legal captures are made in tests/support/hostile.py (decisions.md 30)
CAPTURE_RULES = {"GEN-02"}


@pytest.mark.parametrize("rule_id", sorted(set(REGISTRY) - CAPTURE_RULES))
def test_every_rule_has_a_raising_and_a_close_but_legal_vector(rule_id):
    prefix = rule_id.lower().replace("-", "")
    mine = [t for name, t in VECTORS.items() if name.startswith(prefix)]
    raising = [t for t in mine if any(f["rule"] == rule_id and "severity" not in f for f in t.options["findings"])]
    legal = [t for t in mine if "-legal-" in t.name]
    assert raising, f"no vector raises {rule_id} at its severity"
    assert legal, f"no close-but-legal vector for {rule_id}"
    for t in legal:
        assert all(f["rule"] != rule_id for f in t.options["findings"]), t.name


def sample_expected(kind):
    paths = sorted(SAMPLES.rglob("*.expected.json"))
    broken = [p for p in paths if "broken" in p.relative_to(SAMPLES).parts]
    if kind == "broken":
        return [p for p in broken if "conformance" not in p.relative_to(SAMPLES).parts]
    return [p for p in paths if p not in broken and "conformance" not in p.relative_to(SAMPLES).parts]


@pytest.mark.parametrize("path", sample_expected("clean"), ids=lambda p: p.name)
def test_clean_samples_raise_no_error(path):
    spec = json.loads(path.read_text())
    frame = check(path.parent / spec["capture"])
    assert list(frame.loc[frame.severity == "error", "message"]) == []
    if "findings" in spec:
        assert sorted(frame.rule) == sorted(f["rule"] for f in spec["findings"])


def broken_vector_findings(path):
    """Rule IDs and breaking frames as the expected file states; its other frames must be among ours."""
    spec = json.loads(path.read_text())
    frame = check(path.parent / spec["capture"])
    got = sorted((row.rule, row.frames[-1]) for row in frame.itertuples())
    assert got == sorted((f["rule"], f["frames"][-1]) for f in spec["findings"])
    for f in spec["findings"]:
        ours = [row.frames for row in frame.itertuples() if row.rule == f["rule"] and row.frames[-1] == f["frames"][-1]]
        assert any(set(f["frames"]) <= set(frames) for frames in ours), (f, ours)


BROKEN = sample_expected("broken")


def test_the_broken_vectors_are_there():
    assert len(BROKEN) >= 5, "sample-pcaps/broken/ lost its vectors"


@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.name)
def test_broken_vectors_raise_exactly_their_findings(path):
    broken_vector_findings(path)


def test_wrong_nr_option_length_is_tn05_not_gen01(tmp_path):
    """TN-05's 'wrong length' (the notation cannot write one: Scapy recomputes option lengths)."""
    option = (253, bytes.fromhex("4e52") + bytes(6))  # kind, length 10, ExID, 6 bytes: not 4 + 8n
    packets = [Ether() / IP(src="192.0.2.1", dst="198.51.100.1") / TCP(sport=40000, dport=5001, flags="A",
                                                                      options=[option])]
    packets[0].time = 1_700_000_000
    wrpcap(str(tmp_path / "length.pcap"), packets)
    frame = check(tmp_path / "length.pcap")
    assert [(r.rule, list(r.frames)) for r in frame.itertuples()] == [("TN-05", [1])]
    assert "option length 10" in frame.message[0]
