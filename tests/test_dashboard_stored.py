"""The dashboard's streamed analyses (dashboard/stored.py) show what the analyzer's in-memory analyze() does:
on every sample and usable hostile capture the same entries in the same order, the same summaries, RtxQ and
blocking tables, reader findings and ladder rows; and on a flood past the open-flow budget, where flows are
finished early (their tables written then), the same again with the budget's note."""

import pandas as pd
import pytest

from nrsack.analyzer import analyze
from nrsack.dashboard.ladder import ladder_rows
from nrsack.dashboard.stored import analyze_stored
from support.hostile import build_all, write_flood
from support.paths import SAMPLES

CAPTURES = {path.name: path.read_bytes() for path in sorted(SAMPLES.glob("*.pcap*"))}
CAPTURES.update({f"hostile-{name}.pcap": data for name, data, expectation in build_all() if expectation == "usable"})


def assert_same(memory, stored, ladders=True):
    expected, got = list(memory.all_entries()), list(stored.all_entries())
    assert [e.summary for e in got] == [e.summary for e in expected]
    assert (stored.capture.findings, stored.capture.rule_findings) == (memory.capture.findings, memory.capture.rule_findings)
    assert stored.capture.frames == memory.capture.frames
    for want, have in zip(expected, got):
        pd.testing.assert_frame_equal(have.rtxq, want.rtxq)
        pd.testing.assert_frame_equal(have.blocking, want.blocking)
        assert stored.entry(have.summary["id"]).summary == want.summary
        if ladders:  # the ladder reads the flow analysed again alone: the same rows, paths named by the same ids
            view, alone = stored.flow_view(have)
            pd.testing.assert_frame_equal(ladder_rows(view, alone, 0, 4e9, limit=10**6)[0],
                                          ladder_rows(memory, want, 0, 4e9, limit=10**6)[0])


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_a_stored_analysis_is_the_analyzers(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(CAPTURES[name])
    assert_same(analyze(path), analyze_stored(path))


@pytest.mark.parametrize("sndbuf", [None, 6000])
def test_flows_finished_early_by_the_budget_are_stored_as_the_analyzer_finishes_them(tmp_path, sndbuf):
    path = tmp_path / "flood.pcap"
    write_flood(path, 3000, "unacked")
    memory, stored = analyze(path, sndbuf, max_open_flows=1000), analyze_stored(path, sndbuf, max_open_flows=1000)
    assert any("--max-open-flows" in reason for _, _, reason in stored.capture.rule_findings)
    assert len(stored.entries) == 3000
    assert_same(memory, stored, ladders=False)
    for k in (0, 1500, 2999):  # (a flow each: every flow is the same four packets)
        view, alone = stored.flow_view(stored.entries[k])
        pd.testing.assert_frame_equal(ladder_rows(view, alone, 0, 4e9)[0],
                                      ladder_rows(memory, memory.entries[k], 0, 4e9)[0])
