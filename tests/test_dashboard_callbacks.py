"""The dashboard's callbacks called directly on real analyses of the sample captures.

Every expectation comes from the samples' hand-written expected files (sample-pcaps/*.expected.json)
or from the analyzer's own results; nothing here is mocked.
"""

import base64
import json
from pathlib import Path

import dash
import pytest

from nrsack.analyzer import analyze
from nrsack.analyzer.views import formats
from nrsack.dashboard import app as APP, library as LIB
from support.paths import SAMPLES

EXPECTED = sorted(SAMPLES.glob("*.expected.json"))


def sample_ids():
    return [p.name.removesuffix(".expected.json") for p in EXPECTED]


@pytest.fixture(scope="module")
def board():
    library = LIB.Library([SAMPLES])
    yield APP.Dashboard(library)
    library.close()


def capture_id(board, name):
    return next(c.id for c in board.library.captures.values() if c.name == name)


def select(board, name, sndbuf="", entry=None):
    rows, active, message = board.load_capture(capture_id(board, name), sndbuf)
    findings, note = board.load_findings(capture_id(board, name))
    cell = active if entry is None else {"row": 0, "column": 0, "row_id": entry}
    return board.select_entry(cell, rows), rows, findings, note


def test_every_sample_is_offered():
    assert EXPECTED
    names = {o["label"] for o in LIB.Library([SAMPLES]).options()}
    assert {p.name.removesuffix(".expected.json") + ".pcap" for p in EXPECTED} <= names


@pytest.mark.parametrize("name", sample_ids())
def test_flows_table_lists_every_sender_direction(board, name):
    spec = json.loads((SAMPLES / f"{name}.expected.json").read_text())
    selection, rows, _, _ = select(board, f"{name}.pcap", str(spec["flows"][0]["sndbuf_bytes"]))
    top = [r for r in rows if "." not in r["id"]]
    assert len(top) == len(spec["flows"])
    for row, flow in zip(top, spec["flows"]):
        assert row["sender → receiver"] == f"{flow['sender']} → {flow['receiver']}"
        assert row["protocol"].startswith(flow["protocol"])
        assert row["bytes"] == flow["data_bytes"]
        assert row["p/q"] == round(flow["p_over_q"], 4)
    assert selection["entry"] == top[0]["id"]


@pytest.mark.parametrize("name", sample_ids())
def test_rtxq_view_shades_the_expected_blocking_intervals(board, name):
    spec = json.loads((SAMPLES / f"{name}.expected.json").read_text())
    flow = spec["flows"][0]
    selection, _, _, _ = select(board, f"{name}.pcap", str(flow["sndbuf_bytes"]))
    fig = board.rtxq_view(selection, None, None, "selection")
    blocked = [s for s in fig["layout"]["shapes"] if s["name"].startswith("blocked")]
    assert len(blocked) == len(flow["blocking_intervals"]) == fig["layout"]["meta"]["blocked_intervals"]
    # x is time since the first DATA: the first data frame of the flow's expected RtxQ rows
    first_data = next(r["frame"] for r in flow["rtxq"] if r["event"] == "data")
    origin = spec["epoch_s"] + next(p["t_ms"] for p in spec["packets"] if p["frame"] == first_data) / 1e3
    for shape, interval in zip(blocked, flow["blocking_intervals"]):
        assert shape["x0"] == pytest.approx(spec["epoch_s"] + interval["start_ms"] / 1e3 - origin, abs=1e-6)
        assert shape["x1"] == pytest.approx(spec["epoch_s"] + interval["end_ms"] / 1e3 - origin, abs=1e-6)
    names = [trace["name"] for trace in fig["data"]]
    columns = [trace.get("legendgroup") for trace in fig["data"]]  # the labels are words; the columns group them
    semantics = "rtxq_nr" if flow["nr_sack"] else "rtxq_whatif"
    assert "rtxq_sack" in columns and semantics in columns
    assert any(n == f"send buffer B = {flow['sndbuf_bytes']} bytes (given)" for n in names)


def test_estimated_send_buffer_is_labelled_so(board):
    selection, _, _, _ = select(board, "sctp-sack-fig2.pcap", "")
    names = [trace["name"] for trace in board.rtxq_view(selection, None, None, "selection")["data"]]
    # a figure's few packets: too few waits for an ack to tell B, and the label says so
    summary = board._entry(selection)[1].summary
    assert summary["sndbuf_verdict"] == "cannot tell" and summary["sndbuf_reason"]
    assert f"send buffer B: cannot tell: {summary['sndbuf_reason']}" in names


@pytest.mark.parametrize("name", sample_ids())
def test_ladder_labels_are_the_papers_notation(board, name):
    """Over the whole capture the ladder lists every frame of the flow with the figure's label; the
    first transmission of every retransmitted DATA is marked lost."""
    spec = json.loads((SAMPLES / f"{name}.expected.json").read_text())
    selection, _, _, _ = select(board, f"{name}.pcap")
    analysis, entry = board._entry(selection)
    from nrsack.dashboard.ladder import ladder_rows

    rows, total = ladder_rows(*analysis.flow_view(entry), 0, 4e9, limit=1000)
    expected = {p["frame"]: p["label"] for p in spec["packets"]}
    assert total == len(rows) == len(expected)
    assert dict(zip(rows["frame"], rows["label"])) == expected
    # multi-path flows: each packet names the path / subflow it took, as the figure's addresses say
    endpoints = {p.summary["id"]: {p.summary["src"], p.summary["dst"]} for p in entry.paths}
    packets = {p["frame"]: {p["src"], p["dst"]} for p in spec["packets"]}
    for frame, path in zip(rows["frame"], rows["path"]):
        if not endpoints:
            assert path == ""
        elif path in endpoints:
            assert endpoints[path] == packets[frame]
        else:  # a path without data: named by its addresses
            assert set(path.split("→")) == {e.rpartition(":")[0] for e in packets[frame]}
    lost = set(rows.loc[rows["style"] == "lost", "frame"])
    retransmitted = {label.removesuffix(" rtx") for label in expected.values() if label.endswith(" rtx")}
    first_sent = {min(f for f, l in expected.items() if l == label) for label in retransmitted}
    assert lost == first_sent
    assert bool(lost) == bool(retransmitted)


def test_blocking_interval_click_moves_both_views(board):
    spec = json.loads((SAMPLES / "sctp-nrsack-fig4.expected.json").read_text())
    selection, _, _, _ = select(board, "sctp-nrsack-fig4.pcap", "8000")
    _, blocking = board.kpis(selection)
    third = spec["flows"][0]["blocking_intervals"][2]
    assert len(blocking) == 3 and blocking[2]["frames"] == f"{third['start_frame']}-{third['end_frame']}"
    focus = board.focus_on_blocking(selection, {"row": 2, "column": 0, "row_id": blocking[2]["id"]})
    fig = board.rtxq_view(selection, focus, None, "focus")
    x0, x1 = fig["layout"]["xaxis"]["range"]
    start = third["start_ms"] / 1e3 - 0.3  # first DATA at 300 ms
    assert x0 < start < x1 and x1 - x0 < 0.05
    ladder, caption = board.ladder_view(selection, focus)
    frames = ladder["layout"]["meta"]["frames"]
    assert third["start_frame"] in frames and third["end_frame"] in frames and len(frames) < 15
    assert caption.startswith("blocking interval 3")


def test_click_on_the_plot_opens_the_blocking_interval_under_it(board):
    selection, _, _, _ = select(board, "sctp-sack-fig2.pcap", "8000")
    focus = board.focus_on_click(selection, {"points": [{"x": 0.1}]})  # inside 307 .. 503.1 ms
    assert focus["what"] == "blocking interval 1" and not focus["zoom"]
    frames = board.ladder_view(selection, focus)[0]["layout"]["meta"]["frames"]
    assert 12 in frames and 21 in frames


def test_zoom_is_decimated_per_level_and_reset_returns_the_whole_transfer(board):
    selection, _, _, _ = select(board, "sctp-nrsack-fig4.pcap")
    zoomed = board.rtxq_view(selection, None, {"xaxis.range[0]": 0.1, "xaxis.range[1]": 0.11}, "relayout")
    assert list(zoomed["layout"]["xaxis"]["range"]) == [0.1, 0.11]
    whole = board.rtxq_view(selection, None, {"xaxis.autorange": True}, "relayout")
    assert whole["layout"]["xaxis"]["range"][1] == pytest.approx(0.3042, abs=1e-6)  # q of figure 4
    assert board.rtxq_view(selection, None, {"yaxis.range[0]": 0}, "relayout") is dash.no_update


def test_kpis_answer_what_nr_sack_would_have_saved(board):
    selection, _, _, _ = select(board, "sctp-sack-fig2.pcap", "8000")
    cards, _ = board.kpis(selection)
    text = json.dumps(cards.to_plotly_json(), default=lambda o: o.to_plotly_json())
    # figure 2: SACKed TSNs 12-18 (7000 bytes) sit in the buffer until S:18
    assert "7,000 B" in text and "0.3334" in text and "sender" in text


def test_cmt_and_mptcp_kpis_list_each_subflow(board):
    selection, _, _, _ = select(board, "mptcp-nrsack-fig2.pcap")
    cards, _ = board.kpis(selection)
    text = json.dumps(cards.to_plotly_json(), default=lambda o: o.to_plotly_json())
    analysis, entry = board._entry(selection)
    assert entry.paths and all(p.summary["id"] in text for p in entry.paths)


def test_compare_reports_the_analyzers_gain(board):
    a, b = capture_id(board, "sctp-nrsack-fig4.pcap"), capture_id(board, "sctp-sack-fig2.pcap")
    fig, rows, _ = board.compare(a, b, "8000")
    # the analyzer's own (in-memory) analysis of each capture, not the dashboard's streamed one
    result = formats.compare_dict(*(formats.summary_dict(analyze(board.library.captures[c].path, 8000)) for c in (a, b)))
    assert rows[0]["gain %"] == round(result["pairs"][0]["gain_percent"], 2) and rows[0]["gain %"] > 0
    assert len(fig.data) == 4


def test_export_csv_is_the_analyzers_table(board):
    selection, _, _, _ = select(board, "sctp-nrsack-fig4.pcap", "8000")
    sent = board.export_csv("blocking", selection)
    assert sent["filename"] == "nrsack-0a-blocking.csv"
    lines = sent["content"].strip().splitlines()
    assert lines[0].startswith("flow,start_s,end_s,duration_s,rtxq_bytes_at_start,gap_open") and len(lines) == 4


def test_bad_send_buffer_text_is_a_message(board):
    rows, _, message = board.load_capture(capture_id(board, "sctp-sack-fig2.pcap"), "lots")
    assert rows == [] and "whole number of bytes" in message


def upload_payload(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


@pytest.fixture()
def small_library(tmp_path):
    library = LIB.Library([SAMPLES], upload_limit=32768, upload_dir=tmp_path / "uploads")
    yield library
    library.close()


def test_upload_of_a_non_capture_is_refused_with_a_message(small_library, tmp_path):
    board = APP.Dashboard(small_library)
    options, value, message, css = board.upload(upload_payload(b"hello, this is a text file\n"), "notes.txt")
    assert options is dash.no_update and "notes.txt: not a capture" in message and "error" in css
    assert not any((tmp_path / "uploads").iterdir())


def test_upload_cut_in_its_first_record_is_refused_with_a_message(small_library, tmp_path):
    board = APP.Dashboard(small_library)
    data = (SAMPLES / "sctp-sack-fig2.pcap").read_bytes()[:24 + 16 + 10]
    _, _, message, css = board.upload(upload_payload(data), "cut.pcap")
    assert message.startswith("cut.pcap: cannot be analysed") and "error" in css
    assert str(tmp_path) not in message  # the app's folder is not shown
    assert not any((tmp_path / "uploads").iterdir())


def test_upload_cut_short_later_is_analysed_up_to_its_last_whole_record(small_library, tmp_path):
    board = APP.Dashboard(small_library)
    data = (SAMPLES / "sctp-sack-fig2.pcap").read_bytes()[:700]
    _, chosen, message, css = board.upload(upload_payload(data), "cut.pcap")
    assert "cut short" in message and "analysed up to frame" in message and "warning" in css, message
    assert small_library.captures[chosen].name == "cut.pcap"
    assert str(tmp_path) not in message


def test_oversized_upload_is_refused(small_library, tmp_path):
    board = APP.Dashboard(small_library)
    data = (SAMPLES / "sctp-sack-fig2.pcap").read_bytes() * 3
    assert len(data) > 32768
    _, _, message, css = board.upload(upload_payload(data), "big.pcap")
    assert "refused" in message and "upload limit of 32.0 KB" in message and "error" in css
    assert not any((tmp_path / "uploads").iterdir())


def test_uploaded_name_with_dotdot_stays_inside_the_apps_folder(small_library, tmp_path):
    board = APP.Dashboard(small_library)
    data = (SAMPLES / "sctp-sack-fig2.pcap").read_bytes()
    options, value, message, css = board.upload(upload_payload(data), "../../escape.pcap")
    assert "ok" in css and value in {o["value"] for o in options}
    stored = Path(small_library.captures[value].path)
    assert stored.parent == tmp_path / "uploads" and stored.name == "upload-0001.pcap"
    assert small_library.captures[value].name == "escape.pcap"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["upload-0001.pcap", "uploads"]
    rows, _, _ = board.load_capture(value, "")
    assert rows and rows[0]["sender → receiver"] == "192.0.2.1:5000 → 198.51.100.1:5001"


def test_sweep_heat_map_outlines_the_regions_of_gain(tmp_path):
    from nrsack.generator.sim import sweep

    runs = sweep.run(sweep.grid(sndbufs=(8192, 32768), losses=(0.0, 0.01, 0.05), seeds=1, nbytes=100_000), serial=True)
    gain = sweep.gain_table(runs)
    regions = sweep.regions_of_gain(gain)
    gain.to_csv(tmp_path / "gain.csv", index=False)
    regions.to_csv(tmp_path / "regions.csv", index=False)
    library = LIB.Library([tmp_path])
    assert list(library.sweeps.values()) == [tmp_path] and library.captures  # the samples stay available
    board = APP.Dashboard(library)
    options, group = board.sweep_groups("0")
    fig, _ = board.sweep_view("0", group)
    assert fig.data[0].type == "heatmap"
    z = fig.data[0].z
    assert [[round(v, 6) for v in row] for row in z] == [
        [round(v, 6) for v in gain[gain.sndbuf == b].sort_values("loss").gain_pct] for b in (8192, 32768)]
    outlined = sum(1 for r in regions.itertuples() if r.loss_from == r.loss_from)  # not NaN
    assert fig.layout.meta["regions"] == outlined


def test_layout_has_every_view():
    app = APP.create_app([SAMPLES])
    ids = set()

    def walk(node):
        if hasattr(node, "id") and isinstance(getattr(node, "id", None), str):
            ids.add(node.id)
        children = getattr(node, "children", None)
        for child in children if isinstance(children, list) else [children] if children is not None else []:
            walk(child)

    walk(app.layout)
    assert {"capture", "upload", "sndbuf", "flows", "kpis", "rtxq-graph", "ladder-graph", "blocking", "findings",
            "svg-rtxq", "csv-rtxq", "download", "compare-a", "compare-b", "compare-graph"} <= ids
    assert app.server.config["MAX_CONTENT_LENGTH"] > LIB.DEFAULT_UPLOAD_LIMIT


def test_trace_type_follows_the_points_drawn(board):
    from nrsack.dashboard import figures as FIG

    selection, _, _, _ = select(board, "sctp-sack-fig2.pcap")
    _, entry = board._entry(selection)
    assert {t["type"] for t in FIG.rtxq_figure(entry)["data"]} == {"scatter"}  # a few points: SVG
    assert {t["type"] for t in FIG.rtxq_figure(entry, webgl=True)["data"]} == {"scattergl"}
    full = FIG.rtxq_figure(entry, decimated=False)
    assert full["layout"]["meta"]["points"] == 2 * len(FIG.series(entry).t)


def test_unreadable_capture_given_on_the_command_line_is_a_message(tmp_path):
    notes = tmp_path / "notes.pcap"
    notes.write_text("not a capture at all\n")
    board = APP.Dashboard(LIB.Library([notes]))
    rows, active, message = board.load_capture("c0", "")
    assert rows == [] and active is None and message.startswith("Cannot analyse this capture:")
    findings, note = board.load_findings("c0")
    assert findings == [] and note.startswith("Cannot check this capture:")
    assert board.kpis(None)[1] == [] and board.rtxq_view(None, None, None, "selection") == APP.EMPTY_FIGURE
