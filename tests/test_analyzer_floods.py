"""Floods of flows that never end (issue 29; docs/decisions.md 67, "A budget of open flows"): past
--max-open-flows the flows without data are released first, then those idle longest are finished at their
last event (incomplete), with one GEN-01 note counting them; the flows held stay within the budget. The
captures come from support.hostile.write_flood; the bench (bench/bench_floods.py) measures time and memory."""

import json

import pandas as pd
import pytest
from support.cli import invoke as run
from support.hostile import write_flood

from nrsack.analyzer.read import events as E
from nrsack.analyzer.state.pipeline import Pipeline
from nrsack.analyzer.state.stores import DiskStore

SYN_FLOWS = 100_000
DATA_FLOWS = 20_000
BUDGET = 2_000
CHUNK = 1 << 14


@pytest.fixture(scope="module")
def floods(tmp_path_factory):
    folder = tmp_path_factory.mktemp("floods")
    paths = {}
    for kind, flows in (("syn", SYN_FLOWS), ("data", DATA_FLOWS), ("unacked", DATA_FLOWS)):
        paths[kind] = folder / f"{kind}.pcap"
        write_flood(paths[kind], flows, kind)
    return paths


def budget_notes(findings):
    return [f for f in findings if "--max-open-flows" in f["message"]]


def test_a_syn_flood_holds_no_more_flows_than_the_budget(floods):
    store = DiskStore(None)
    pipeline = Pipeline(store, finish_ended=True, max_open_flows=BUDGET)
    try:
        for cap in E.read_chunks(str(floods["syn"]), CHUNK):
            pipeline.feed(cap)
            # what a flow costs is gone once it is released: its accumulators, and its Flow (but those of the
            # connections new in the chunk, held back into the next: Pipeline._hold)
            assert len(pipeline.senders) <= BUDGET
            assert sum(flow is not None for flow in pipeline.table.flows) <= BUDGET + CHUNK
        assert 0 < pipeline.peak_open <= BUDGET
        (note,) = pipeline.late_note()  # (after the connections held back from the last chunk: they count too)
        without, with_data = pipeline.cut
        assert with_data == 0 and SYN_FLOWS - BUDGET <= without < SYN_FLOWS
        assert note[1] == "GEN-01.note" and f"{without} flows were released" in note[2]
        assert len(pipeline.entries(None)) == 0  # one SYN sends no data: no rows, with or without the budget
    finally:
        store.close()


def test_under_the_budget_nothing_is_released(floods):
    store = DiskStore(None)
    pipeline = Pipeline(store, finish_ended=True, max_open_flows=SYN_FLOWS)
    try:
        for cap in E.read_chunks(str(floods["syn"])):
            pipeline.feed(cap)
        assert pipeline.cut == [0, 0] and pipeline.late_note() == []
        assert pipeline.peak_open == SYN_FLOWS
    finally:
        store.close()


def test_check_notes_the_flows_of_a_syn_flood_it_released(floods):
    checked = run("check", floods["syn"], "--format", "json", "--max-open-flows", BUDGET)
    assert checked.exit_code == 0, checked.output
    (note,) = budget_notes(json.loads(checked.stdout)["findings"])
    assert SYN_FLOWS - BUDGET <= int(note["message"].split()[0]) < SYN_FLOWS


def analyze_json(path, *args):
    result = run("analyze", path, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_completed_transfers_keep_their_figures_when_released_early(floods):
    bound = analyze_json(floods["data"], "--max-open-flows", BUDGET)
    free = analyze_json(floods["data"])
    assert bound["flows"] == free["flows"] and len(free["flows"]) == DATA_FLOWS
    assert budget_notes(free["findings"]) == []
    (note,) = budget_notes(bound["findings"])
    assert note["severity"] == "note" and "0 without data" in note["message"]


def test_open_transfers_released_early_end_at_their_last_event(floods, tmp_path):
    summary = analyze_json(floods["unacked"], "--max-open-flows", BUDGET)
    (note,) = budget_notes(summary["findings"])
    cut = int(note["message"].split()[1])
    assert DATA_FLOWS - BUDGET <= cut < DATA_FLOWS
    entries = sorted(summary["flows"], key=lambda e: e["flow"])
    assert len(entries) == DATA_FLOWS and not any(e["complete"] for e in entries)
    # the oldest are released: their q ends at their last event, their one data segment; the rest run to the end
    assert all(e["q_ns"] == 0 for e in entries[:cut])
    assert all(e["q_ns"] > 0 for e in entries[cut:-1])
    # the streamed tables finish the same flows at the same place
    out = tmp_path / "tables"
    streamed = run("analyze", floods["unacked"], "--stream", "--format", "parquet", "--out", out,
                   "--max-open-flows", BUDGET)
    assert streamed.exit_code == 0, streamed.output
    # the files carry no findings: what the budget left out is said on the terminal
    assert any(line.startswith("GEN-01 note") and "--max-open-flows" in line for line in streamed.output.splitlines())
    table = pd.read_parquet(out / "summary.parquet").sort_values("flow")
    assert table["q_s"].tolist() == [e["q_s"] for e in entries]
    checked = run("check", floods["unacked"], "--format", "json", "--max-open-flows", BUDGET)
    assert checked.exit_code == 0, checked.output
    assert len(budget_notes(json.loads(checked.stdout)["findings"])) == 1


def test_streamed_files_past_the_budget_are_the_in_memory_files(floods, tmp_path):
    # a connection whose first chunk held only its SYN is open from the next chunk on in the streamed files too
    # (decision 102): read as open in its own chunk, it was cut as a flow without data and its data came late
    for mode in ("memory", "stream"):
        done = run("analyze", floods["data"], "--format", "csv", "--out", tmp_path / mode, "--max-open-flows", BUDGET,
                   *(["--stream"] if mode == "stream" else []))
        assert done.exit_code == 0, done.output
        assert "after their flow ended" not in done.output
    for name in ("summary.csv", "rtxq.csv", "blocking.csv"):
        assert (tmp_path / "stream" / name).read_bytes() == (tmp_path / "memory" / name).read_bytes(), name


def test_the_flag_states_the_default_it_gets():
    from nrsack.analyzer.state.pipeline import MAX_OPEN_FLOWS

    for command in ("analyze", "check"):
        assert f"default {MAX_OPEN_FLOWS}" in " ".join(run(command, "--help").output.split())


def test_a_flow_whose_syn_came_alone_in_a_chunk_is_anchored_on_it(tmp_path):
    """A flow whose chunk holds only its SYN gets no DirectionAccumulator there (Pipeline._dormant); the
    SYN's ISN still anchors its level when the rest comes. Here the segment after the SYN lies FAR beyond
    it: anchored on the SYN it is refused, as when the whole capture is one chunk (else it became data)."""
    from support import pcaps
    from test_analyzer_anchor import tcp_far_first

    from nrsack.analyzer.results import analyze

    pcap = pcaps.write(tmp_path / "far.pcap", tcp_far_first())
    whole, frame_by_frame = analyze(str(pcap)), analyze(str(pcap), chunk_frames=1)
    assert whole.summary["data_bytes"].tolist() == [4000]
    assert frame_by_frame.summary.equals(whole.summary) and frame_by_frame.rtxq.equals(whole.rtxq)


def test_flows_without_data_released_for_the_budget_keep_their_far_serial_note(tmp_path):
    """check judges a flow the budget releases without data at once (decisions.md 85): its note on acks far
    outside any window is among its end's findings, as when nothing is released."""
    from support import pcaps

    from nrsack.analyzer.rules.checker import check_path

    flows, far_ack = 8, 1000 + 2**31
    packets = [pcaps.tcp_packet(i / 100 + dt, "10.0.0.2", "10.0.0.1", 80, 5000 + i, 7000, ack, "A")
               for i in range(flows) for dt, ack in ((0, 1000), (0.001, far_ack))]
    path = pcaps.write(tmp_path / "acks.pcap", packets)

    def far_notes(**budget):
        _, _, found = check_path(str(path), **budget)
        return sorted(f["flow"] for f in found if "far outside any window" in f["message"])

    assert far_notes() == list(range(flows))
    assert far_notes(max_open_flows=4) == list(range(flows))
