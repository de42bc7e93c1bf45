"""Findings of the conformance checker in the dashboard: clicking one moves the RtxQ and ladder views."""

import pytest

from nrsack.dashboard import app as APP, library as LIB
from support.frames import nr04_capture


@pytest.fixture(scope="module")
def broken_capture(tmp_path_factory):
    return nr04_capture(tmp_path_factory.mktemp("broken"))


def test_finding_click_moves_the_views_to_its_frame(broken_capture):
    library = LIB.Library([broken_capture])
    board = APP.Dashboard(library)
    rows, active, _ = board.load_capture("c0", "")
    findings, note = board.load_findings("c0")
    selection = board.select_entry(active, rows)
    table, source = library.findings("c0")
    if source != "checker":
        pytest.fail("the conformance checker (nrsack.analyzer.check) is missing: " + note)
    nr04 = [f for f in findings if f["rule"] == "NR-04"]
    assert nr04, findings
    frame = int(nr04[0]["frames"].split(",")[-1])
    focus = board.focus_on_finding(selection, {"row": 0, "column": 0, "row_id": nr04[0]["id"]}, findings)
    assert focus["frame"] == frame and focus["zoom"]
    ladder = board.ladder_view(selection, focus)[0]
    assert frame in ladder["layout"]["meta"]["frames"]
    before = board.rtxq_view(selection, None, None, "selection")["layout"]["xaxis"]["range"]
    moved = board.rtxq_view(selection, focus, None, "focus")
    after = moved["layout"]["xaxis"]["range"]
    assert moved["layout"]["annotations"][0]["text"] == f"NR-04 at frame {frame}"
    assert after[1] - after[0] < (before[1] - before[0]) / 5


def test_finding_of_the_other_direction_says_so(broken_capture):
    board = APP.Dashboard(LIB.Library([broken_capture]))
    rows, active, _ = board.load_capture("c0", "")
    selection = board.select_entry(active, rows)
    finding = {"id": 0, "rule": "NR-05", "frames": "20", "direction": "198.51.100.1:5001 -> 192.0.2.1:5000"}
    focus = board.focus_on_finding(selection, {"row": 0, "column": 0, "row_id": 0}, [finding])
    assert focus["frame"] == 20 and "a finding of 198.51.100.1:5001 -> 192.0.2.1:5000" in focus["what"]
    assert "pick that sender direction" not in board.focus_on_finding(
        selection, {"row": 0, "column": 0, "row_id": 0}, [dict(finding, direction="192.0.2.1:5000 -> 198.51.100.1:5001")])["what"]
