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


def analyzer_level_rows(pcap, folder):
    """Like analyzer_rows, for the flows' own levels only (no path or subflow entries, whose labels an
    MPTCP connection's initial subflow shares with its data level)."""
    result = CliRunner().invoke(main, ["analyze", "--format", "csv", "--out", str(folder), str(pcap)])
    assert result.exit_code == 0, result.output
    with open(folder / "summary.csv") as f:
        label = {row["id"]: f"{row['src']} -> {row['dst']}" for row in csv.DictReader(f) if not row["parent"]}
    rows = {}
    with open(folder / "rtxq.csv") as f:
        for row in csv.DictReader(f):
            if row["flow"] in label:
                rows[(int(row["frame"]), label[row["flow"]])] = {c: int(row[c]) for c in FIGURES.values()}
    return rows


def states_after_frames(rows, frames):
    """(frame, direction) -> figures, as each tool gives them (on the frames that changed a direction)
    -> frame -> {direction: its figures after that frame}, for every frame in `frames`: tools that
    report different frames of a direction still compare figure for figure."""
    state, out, by_frame = {}, {}, {}
    for (frame, direction), figures in rows.items():
        by_frame.setdefault(frame, []).append((direction, figures))
    for frame in sorted(set(frames)):
        for direction, figures in by_frame.get(frame, ()):
            state[direction] = figures
        out[frame] = dict(state)
    return out


def lua_rows(golden):
    """(frame, direction) -> Lua's figures on that frame, for every direction it updated."""
    rows = {}
    for row in golden.rows:
        for i, direction in enumerate(row["nrsack.direction"]):
            rows[(int(row["frame.number"][0]), direction)] = {FIGURES[f]: int(row[f][i]) for f in FIGURES}
    return rows


def assert_same(expected: str, got: str, what: str, expected_name="C plugin", got_name="Lua plugin"):
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
