"""Comparing the Lua plugin with the C plugin and with the analyzer (shared by the Lua suites)."""

from __future__ import annotations

import csv
import difflib

import pytest
from click.testing import CliRunner

from nrsack.cli import main
from support import tshark

FIGURES = {  # Lua field -> analyzer rtxq.csv column
    "nrsack.rtxq.sack_bytes": "rtxq_sack_bytes",
    "nrsack.rtxq.nr_bytes": "rtxq_nr_bytes",
    "nrsack.rtxq.whatif_bytes": "rtxq_whatif_bytes",
    "nrsack.rtxq.sacked_bytes": "sacked_bytes",
    "nrsack.rtxq.nr_acked_bytes": "nr_acked_bytes",
}


def analyzer_rows(pcap, folder):
    """(frame, "src -> dst") -> the analyzer's figures after the frame's last event of that direction."""
    result = CliRunner().invoke(main, ["analyze", "--format", "csv", "--out", str(folder), str(pcap)])
    assert result.exit_code == 0, result.output
    with open(folder / "summary.csv") as f:
        label = {row["id"]: f"{row['src']} -> {row['dst']}" for row in csv.DictReader(f)}
    rows = {}
    with open(folder / "rtxq.csv") as f:
        for row in csv.DictReader(f):
            rows[(int(row["frame"]), label[row["flow"]])] = {c: int(row[c]) for c in FIGURES.values()}
    return rows


def lua_rows(golden):
    """(frame, direction) -> Lua's figures on that frame, for every direction it updated."""
    rows = {}
    for row in golden.rows:
        for i, direction in enumerate(row["nrsack.direction"]):
            rows[(int(row["frame.number"][0]), direction)] = {FIGURES[f]: int(row[f][i]) for f in FIGURES}
    return rows


# Frames where the Lua plugin already follows the scoreboard core (core/, docs/scoreboard.md) and the
# C plugin of main does not yet (the plugin branch ports it): capture -> {frame: what Lua must show}.
# - "no update": a chunk that fails its own length check (block counts vs chunk length) feeds nothing,
#   so no figures and none of the ack's other findings (NR-07) on that frame;
# - "gap closed": an empty or inverted block (left >= right) is dropped when the core sorts and merges
#   the blocks, so it opens no gap (the C plugin of main counts its end).
# Elsewhere the outputs must be equal; on these frames C may already agree (then nothing is excused).
CORE_AHEAD = {
    "broken/nr05-malformed-blocks.pcap": {11: "no update"},
    "conformance/broken/nr05-counts-disagree-with-length.pcap": {8: "no update", 9: "no update"},
    "broken/tn05-malformed-option.pcap": {9: "gap closed"},
    "conformance/tn05-malformed-nr-option.pcap": {9: "gap closed"},
    "sctp-rules": {20: "no update"},
    "tcp-rules-wrap": {16: "gap closed"},
}


def lua_shows(row: dict, what: str) -> bool:
    if what == "no update":
        return not row["nrsack.direction"] and not row["nrsack.rtxq.bytes"]
    return row["nrsack.gap_open"] == ["0"]


def excuse_core_ahead(expected: str, got: str, key: str):
    """-> (expected, got) with the frames of CORE_AHEAD[key] where they differ taken out of both, after
    checking that Lua shows there what the core says."""
    ahead = CORE_AHEAD.get(key)
    if not ahead or expected == got:
        return expected, got
    c, lua = table_rows(expected), table_rows(got)
    differing = {f for f in ahead if c.get(f) != lua.get(f) or c.get(("expert", f)) != lua.get(("expert", f))}
    for f in differing:
        assert lua_shows(lua[f], ahead[f]), f"{key} frame {f}: Lua should show {ahead[f]}: {lua[f]}"

    def without(text):
        keep, section = [], "table"
        for line in text.splitlines(True):
            if line.startswith("# expert summary"):
                section = "summary"  # counts include the excused frames' findings
            elif line.startswith("# expert"):
                section = "expert"
            first = line.split("\t", 1)[0]
            if section == "summary" and not line.startswith("#"):
                continue
            if section != "summary" and first.isdigit() and int(first) in differing:
                continue
            keep.append(line)
        return "".join(keep)
    return without(expected), without(got)


def assert_same(expected: str, got: str, what: str, expected_name="C plugin", got_name="Lua plugin", key=None):
    expected, got = excuse_core_ahead(expected, got, key)
    if expected != got:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), got.splitlines(True), expected_name, got_name, n=1))
        pytest.fail(f"{what}: Lua output differs from the C plugin's\n{diff}")


def table_rows(golden_text: str) -> dict:
    """frame number -> its row of the golden table (the expert lines keyed by ('expert', frame))."""
    g = tshark.parse_golden(golden_text)
    rows = {int(r["frame.number"][0]): r for r in g.rows}
    for frame, rule, severity in g.expert:
        rows.setdefault(("expert", frame), []).append((rule, severity))
    return rows
