"""The hand-written expected files of the TCP, MPTCP, FSACK, CMT and broken timelines agree with
themselves: bytes with the units they list, rtxq_nr = rtxq_sack - nr_acked, blocked = B - rtxq < S,
blocking intervals = the runs of blocked, the ratios with their parts. A slip of the pen in one
number shows up here before it misleads a plugin or the analyzer."""

import json

import pytest

from nrsack.generator.timelines import (broken as timelines_broken, cmt as timelines_cmt,
                                        fsack as timelines_fsack, mptcp as timelines_mptcp,
                                        tcp as timelines_tcp)
from support.paths import SAMPLES

EXPECTED = [SAMPLES / t.options.get("subdir", "") / (t.name + ".expected.json")
            for module in (timelines_tcp, timelines_mptcp, timelines_fsack, timelines_cmt, timelines_broken)
            for t in (factory() for factory in module.TIMELINES)]


def unit_bytes(units, flow):
    """'2,4-5' (TSNs / PDUs) or '14001-19600' (relative byte ranges) -> bytes."""
    total = 0
    for part in filter(None, units.split(",")):
        first, _, last = part.partition("-")
        count = int(last or first) - int(first) + 1
        total += count if flow["unit"] in ("dsn", "seq") else count * flow["unit_bytes"]
    return total


def check_entries(flow):
    for entry in flow["rtxq"]:
        where = "frame %d" % entry["frame"]
        assert unit_bytes(entry["rtxq_sack"], flow) == entry["rtxq_sack_bytes"], where
        assert unit_bytes(entry["rtxq_nr"], flow) == entry["rtxq_nr_bytes"], where
        assert entry["rtxq_sack_bytes"] - entry["nr_acked_bytes"] == entry["rtxq_nr_bytes"], where
        assert entry["rtxq_sack_bytes"] - entry["sacked_bytes"] == entry["rtxq_whatif_bytes"], where
        assert entry["nr_acked_bytes"] <= entry["sacked_bytes"], where
        assert ("freed_bytes" in entry) == (entry["event"] == "ack"), where


@pytest.mark.parametrize("path", EXPECTED, ids=lambda p: p.name)
def test_expected_file_is_consistent(path):
    spec = json.loads(path.read_text())
    times = {p["frame"]: p["t_ms"] for p in spec["packets"]}
    assert list(times) == list(range(1, len(times) + 1))
    assert list(times.values()) == sorted(times.values())
    if "broken" in path.parts:
        assert spec["findings"] and spec["flows"] == []
        for finding in spec["findings"]:
            assert finding["frames"] == sorted(finding["frames"]) and finding["frames"][-1] in times
        return
    assert spec["findings"] == []
    for flow in spec["flows"]:
        check_entries(flow)
        for sub in flow.get("paths", []):
            check_entries(sub)
        rtxq_key = "rtxq_nr_bytes" if flow["nr_sack"] else "rtxq_sack_bytes"
        runs, start = [], None
        for entry in flow["rtxq"]:
            blocked = flow["sndbuf_bytes"] - entry[rtxq_key] < flow["max_payload_bytes"]
            assert entry["blocked"] == blocked, "frame %d" % entry["frame"]
            if blocked and start is None:
                start = entry
            elif not blocked and start is not None:
                runs.append((start["frame"], entry["frame"], start[rtxq_key]))
                start = None
        intervals = flow["blocking_intervals"]
        assert [(i["start_frame"], i["end_frame"], i["rtxq_bytes_at_start"]) for i in intervals] == runs
        for i in intervals:
            assert (times[i["start_frame"]], times[i["end_frame"]]) == (i["start_ms"], i["end_ms"])
        assert sum(i["end_ms"] - i["start_ms"] for i in intervals) == pytest.approx(flow["b_ms"])
        # p counts only the gap-open part of an interval; it is at most the gap-open intervals' length.
        assert flow["p_ms"] <= sum(i["end_ms"] - i["start_ms"] for i in intervals if i["gap_open"]) + 1e-9
        assert (flow["p_ms"] > 0) == any(i["gap_open"] for i in intervals)
        data_frames = [e["frame"] for e in flow["rtxq"] if e["event"] == "data"]
        last_ack = flow["rtxq"][-1]
        assert last_ack["rtxq_sack_bytes"] == 0 and flow["complete"]
        assert flow["q_ms"] == pytest.approx(times[last_ack["frame"]] - times[data_frames[0]])
        assert flow["p_over_q"] == pytest.approx(flow["p_ms"] / flow["q_ms"])
        assert flow["b_over_q"] == pytest.approx(flow["b_ms"] / flow["q_ms"])
        assert flow["data_bytes"] == len(data_frames) * flow["unit_bytes"]
        assert flow["throughput_bps"] == pytest.approx(flow["data_bytes"] * 8 / (flow["q_ms"] / 1000))
