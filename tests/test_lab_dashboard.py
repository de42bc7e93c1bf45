"""The dashboard on lab run folders (`nrsack lab run --out DIR`), through its callbacks on real usrsctp
runs (no root)."""

import pytest

from nrsack.dashboard import app as APP, library as LIB
from support.lab import lab_run

pytestmark = pytest.mark.slow

ARGS = ["--sndbuf", "16384", "--loss", "0.02", "--delay", "2", "--bytes", "200000", "--seed", "1", "--no-drain"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("labdash")
    truths = {ack: lab_run(root / ack, *ARGS, "--ack", ack) for ack in ("sack", "nrsack")}
    library = LIB.Library([root / "sack", root / "nrsack"])
    yield APP.Dashboard(library), truths
    library.close()


def test_each_run_folders_captures_are_offered_by_folder(runs):
    board, _ = runs
    labels = sorted(o["label"] for o in board.library.options())
    assert labels == ["nrsack/receiver.pcap", "nrsack/sender.pcap", "sack/receiver.pcap", "sack/sender.pcap"]


@pytest.mark.parametrize("ack", ["sack", "nrsack"])
def test_sender_capture_opens_with_the_runs_flow_and_buffer(runs, ack):
    board, truths = runs
    truth = truths[ack]
    capture = next(c.id for c in board.library.captures.values() if c.name == f"{ack}/sender.pcap")
    rows, active, message = board.load_capture(capture, str(truth["sndbuf_bytes"]))
    assert "sender direction" in message
    row = next(r for r in rows if r["id"] == active["row_id"])
    assert row["sender → receiver"] == f"{truth['src']} → {truth['dst']}" and row["protocol"] == "sctp"
    assert row["NR-SACK"] == ("yes" if ack == "nrsack" else "no") and row["bytes"] == truth["data_bytes"]
    selection = board.select_entry(active, rows)
    _, blocking = board.kpis(selection)
    assert len(blocking) > 0  # a 16 KB buffer under 2 % loss blocks the writer
    traces = board.rtxq_view(selection, None, None, "selection")["data"]
    assert f"send buffer B = {truth['sndbuf_bytes']} bytes (given)" in [t["name"] for t in traces]
    assert ("rtxq_nr" if ack == "nrsack" else "rtxq_whatif") in [t.get("legendgroup") for t in traces]
