"""Every sample capture against its hand-written expected file (sample-pcaps/NAME.expected.json).

The expected files come from the papers' figures, not from nrsack; each frame that changes the
scoreboard, each blocking interval and p, q, b, p/q, b/q must match (times to the nanosecond).
"""

import json
import math

import pytest

from nrsack.analyzer import analyze
from support.paths import SAMPLES

# NRSACK_SAMPLE_PCAPS points the tests at freshly generated timelines (`nrsack generate timelines`)
EXPECTED = sorted(SAMPLES.glob("*.expected.json"))
RTXQ_FIELDS = ["rtxq_sack_bytes", "rtxq_nr_bytes", "nr_acked_bytes", "sacked_bytes", "rtxq_whatif_bytes",
               "blocked", "gap_open"]


def ms_to_ns(ms):
    return round(ms * 1_000_000)


def cases():
    for path in EXPECTED:
        spec = json.loads(path.read_text())
        for index, flow in enumerate(spec["flows"]):
            yield pytest.param(path, index, id=f"{path.name.removesuffix('.expected.json')}-{index}")


def test_samples_present():
    assert EXPECTED, f"no expected files in {SAMPLES}"


@pytest.fixture(scope="module")
def analyses():
    return {}


def entry_for(analyses, path, flow):
    spec = json.loads(path.read_text())
    key = (path, flow["sndbuf_bytes"])
    if key not in analyses:
        analyses[key] = analyze(SAMPLES / spec["capture"], sndbuf=flow["sndbuf_bytes"])
    analysis = analyses[key]
    matches = [e for e in analysis.entries if e.summary["src"] == flow["sender"] and e.summary["dst"] == flow["receiver"]]
    assert len(matches) == 1, f"{flow['sender']} -> {flow['receiver']} not found once in {spec['capture']}"
    return spec, analysis, matches[0]


@pytest.mark.parametrize("path,index", list(cases()))
def test_rtxq_after_each_scoreboard_change(analyses, path, index):
    flow = json.loads(path.read_text())["flows"][index]
    _, _, entry = entry_for(analyses, path, flow)
    table = entry.rtxq.set_index("frame")
    assert list(table.index) == [row["frame"] for row in flow["rtxq"]]
    for row in flow["rtxq"]:
        got = table.loc[row["frame"]]
        assert got["event"] == row["event"], row["frame"]
        for name in RTXQ_FIELDS:
            assert got[name] == row[name], (row["frame"], name, got[name], row[name])
        if row["event"] == "ack":
            assert got["freed_bytes"] == row["freed_bytes"], row["frame"]
        if flow.get("unit") == "tsn":
            unit = flow["unit_bytes"]
            assert got["rtxq_sack_tsns"] * unit == row["rtxq_sack_bytes"]
            assert got["rtxq_nr_tsns"] * unit == row["rtxq_nr_bytes"]


@pytest.mark.parametrize("path,index", list(cases()))
def test_blocking_intervals_and_ratios(analyses, path, index):
    flow = json.loads(path.read_text())["flows"][index]
    spec, _, entry = entry_for(analyses, path, flow)
    epoch_ns = spec["epoch_s"] * 1_000_000_000
    s = entry.summary
    got = [(r.start_frame, None if r.end_frame is None or r.end_frame != r.end_frame else int(r.end_frame),
            r.start_ns - epoch_ns, r.end_ns - epoch_ns, r.rtxq_bytes_at_start, bool(r.gap_open))
           for r in entry.blocking.itertuples()]
    want = [(b["start_frame"], b["end_frame"], ms_to_ns(b["start_ms"]), ms_to_ns(b["end_ms"]),
             b["rtxq_bytes_at_start"], b["gap_open"])
            for b in flow["blocking_intervals"]]
    assert got == want
    assert s["blocking_intervals"] == len(want)
    assert s["q_ns"] == ms_to_ns(flow["q_ms"])
    assert s["p_ns"] == ms_to_ns(flow["p_ms"])
    assert s["b_ns"] == ms_to_ns(flow["b_ms"])
    assert math.isclose(s["p_over_q"], flow["p_over_q"], rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(s["b_over_q"], flow["b_over_q"], rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(s["throughput_bps"], flow["throughput_bps"], rel_tol=1e-12)
    assert s["complete"] is flow["complete"]
    assert s["nr_sack"] is flow["nr_sack"]
    assert s["max_payload_bytes"] == flow["max_payload_bytes"]
    assert s["data_bytes"] == flow["data_bytes"]
    assert s["vantage"] == spec["timing"]["vantage"]
    assert s["sndbuf_estimated"] is False and s["sndbuf_bytes"] == flow["sndbuf_bytes"]


@pytest.mark.parametrize("path", EXPECTED, ids=lambda p: p.name)
def test_cli_json_prints_expected_ratio(path, tmp_path):
    from click.testing import CliRunner

    from nrsack.cli import main

    spec = json.loads(path.read_text())
    flow = spec["flows"][0]
    result = CliRunner().invoke(main, ["analyze", str(SAMPLES / spec["capture"]), "--sndbuf",
                                       str(flow["sndbuf_bytes"]), "--format", "json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    entry = next(f for f in summary["flows"] if f["src"] == flow["sender"] and f["dst"] == flow["receiver"])
    assert math.isclose(entry["p_over_q"], flow["p_over_q"], rel_tol=1e-12, abs_tol=1e-15)
    for key in ("id", "protocol", "src", "dst", "nr_sack", "data_bytes", "q_s", "p_s", "b_s", "p_over_q", "b_over_q",
                "sndbuf_bytes", "sndbuf_estimated", "max_rtxq_sack_bytes", "max_rtxq_nr_bytes", "max_rtxq_whatif_bytes",
                "throughput_bps", "blocking_intervals", "vantage", "complete"):
        assert key in entry, key
