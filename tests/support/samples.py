"""The sample captures (sample-pcaps/) as the plugin tests read them, and the checks that hold a
plugin's golden output (tests/support/tshark.py format) to the hand-written NAME.expected.json files.

The C plugin's tests (test_dissector_samples.py) and the Lua plugin's (test_lua_*.py) both use these,
so that both plugins are held to one reading of the expected files.

A `goldens` argument is any callable goldens(pcap, sndbuf=None) -> golden text, sndbuf None meaning
golden_sndbuf(pcap).
"""

import json
from pathlib import Path

import pytest

from support import tshark
from support.paths import LAB_SAMPLES, REPO, SAMPLES

GOLDEN = REPO / "tests" / "golden"
PCAPS = sorted(p for p in SAMPLES.rglob("*.pcap*") if not p.name.endswith(".json") and LAB_SAMPLES not in p.parents)

# expected-file key -> nrsack field
RTXQ_FIELDS = {
    "rtxq_sack_bytes": "nrsack.rtxq.sack_bytes",
    "rtxq_nr_bytes": "nrsack.rtxq.nr_bytes",
    "nr_acked_bytes": "nrsack.rtxq.nr_acked_bytes",
    "sacked_bytes": "nrsack.rtxq.sacked_bytes",
    "rtxq_whatif_bytes": "nrsack.rtxq.whatif_bytes",
    "blocked": "nrsack.blocked",
    "gap_open": "nrsack.gap_open",
}

# FS-02 is judged at the receiver's next FSACK-INIT or at the end of the capture but belongs to an
# earlier frame (docs/decisions.md 20): a single pass in frame order cannot mark it. Only `nrsack check`.
NOT_ONE_PASS = {"FS-02"}


def expected_of(pcap: Path):
    path = pcap.with_name(pcap.name.rsplit(".", 1)[0] + ".expected.json")
    return json.loads(path.read_text()) if path.exists() else None


def golden_sndbuf(pcap: Path) -> int:
    """The golden run pins nrsack.sndbuf to the first flow's B (0 when the capture has no expected file)."""
    spec = expected_of(pcap)
    flows = spec.get("flows", []) if spec else []
    return int(flows[0].get("sndbuf_bytes") or 0) if flows else 0


def ident(pcap: Path) -> str:
    return str(pcap.relative_to(SAMPLES))


def golden_path(pcap: Path) -> Path:
    """The checked-in golden file of a sample capture (sub-folders flattened with "__")."""
    return GOLDEN / (ident(pcap).replace("/", "__") + ".golden")


def as_field(value) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


def flow_cases():
    for pcap in PCAPS:
        spec = expected_of(pcap)
        for index, flow in enumerate(spec.get("flows", []) if spec else []):
            yield pytest.param(pcap, index, id=f"{ident(pcap)}-{index}")


def updates_by_frame(golden_text: str, direction: str) -> dict:
    """frame -> {field: value} of the RtxQ update of one direction (nrsack.direction occurrence)."""
    g = tshark.parse_golden(golden_text)
    out = {}
    for frame, row in enumerate(g.rows, 1):
        dirs = row["nrsack.direction"]
        if direction not in dirs:
            continue
        i = dirs.index(direction)
        values = {f: row[f][i] for f in RTXQ_FIELDS.values() if len(row[f]) > i}
        values["nrsack.rtxq.bytes"] = row["nrsack.rtxq.bytes"][i]
        # freed_bytes occurs on acks only: one per direction when a frame acks both ways, else the ack's
        freed = row["nrsack.freed_bytes"]
        values["nrsack.freed_bytes"] = freed[i] if len(freed) == len(dirs) else (freed[0] if len(freed) == 1 else None)
        out[frame] = values
    return out


def check_rtxq_equals_expected(goldens, pcap: Path, index: int) -> None:
    """The RtxQ fields after each scoreboard change of flow `index` equal its expected file's figures,
    on exactly the expected frames (run with -o nrsack.sndbuf:<flows[index].sndbuf_bytes>)."""
    flow = expected_of(pcap)["flows"][index]
    text = goldens(pcap, sndbuf=int(flow.get("sndbuf_bytes") or 0))
    got = updates_by_frame(text, f"{flow['sender']} -> {flow['receiver']}")
    assert sorted(got) == [row["frame"] for row in flow["rtxq"]], "frames carrying the RtxQ fields"
    for row in flow["rtxq"]:
        values = got[row["frame"]]
        for key, field in RTXQ_FIELDS.items():
            assert values.get(field) == as_field(row[key]), (row["frame"], key)
        semantics = "rtxq_nr_bytes" if flow["nr_sack"] else "rtxq_sack_bytes"
        assert values["nrsack.rtxq.bytes"] == as_field(row[semantics]), (row["frame"], "nrsack.rtxq.bytes")
        if row["event"] == "ack":
            assert values["nrsack.freed_bytes"] == as_field(row["freed_bytes"]), (row["frame"], "freed_bytes")


def check_findings_equal_expected(goldens, pcap: Path) -> None:
    """Each expected finding is raised on the frame that breaks the rule (its last frame), with the
    severity the expected file gives (else rules.md's), and nothing else."""
    findings = [f for f in expected_of(pcap)["findings"] if f["rule"] not in NOT_ONE_PASS]
    g = tshark.parse_golden(goldens(pcap))
    got = {(rule, frame): severity for frame, rule, severity in g.expert}
    assert set(got) == {(f["rule"], f["frames"][-1]) for f in findings}
    for f in findings:
        if "severity" in f:
            assert got[(f["rule"], f["frames"][-1])] == f["severity"], f
    assert sum(g.summary.values()) == len(g.expert), "-z expert counts agree with the per-frame findings"
