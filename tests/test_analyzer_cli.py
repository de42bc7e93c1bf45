"""CMT per-path figures, the views (JSON keys, csv / parquet files, Plotly HTML) and `nrsack compare`."""

import json

import pandas as pd
import pytest
from click.testing import CliRunner
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.layers.sctp import SCTP, SCTPChunkCookieAck, SCTPChunkCookieEcho, SCTPChunkData, SCTPChunkInit, SCTPChunkInitAck, SCTPChunkParamStateCookie, SCTPChunkSACK

from nrsack.analyzer import analyze
from nrsack.cli import main
from nrsack.generator.layers import SCTPChunkNRSACK, address_parameter, supported_extensions
from support.frames import write_pcap
from support.paths import SAMPLES

CONTRACT_KEYS = ["id", "protocol", "src", "dst", "nr_sack", "data_bytes", "q_s", "p_s", "b_s", "p_over_q", "b_over_q",
                 "sndbuf_bytes", "sndbuf_estimated", "max_rtxq_sack_bytes", "max_rtxq_nr_bytes", "max_rtxq_whatif_bytes",
                 "throughput_bps", "blocking_intervals", "vantage", "complete"]
A1, A2, B1, B2 = "192.0.2.1", "192.0.2.2", "198.51.100.1", "198.51.100.2"


def cmt_frames(nr):
    """A CMT association: TSNs 1..10 alternate over two paths; TSN 3 (path 1) is lost and
    retransmitted on path 2; the receiver acks on the primary path."""
    def pkt(src, dst, forward, tag, *chunks):
        layer = SCTP(sport=5000 if forward else 5001, dport=5001 if forward else 5000, tag=tag)
        for c in chunks:
            layer = layer / c
        return bytes(Ether() / IP(src=src, dst=dst) / layer)

    ext = [supported_extensions(0x10)] if nr else []
    frames = [
        pkt(A1, B1, True, 0, SCTPChunkInit(init_tag=7, init_tsn=1, params=[address_parameter(A1), address_parameter(A2)] + ext)),
        pkt(B1, A1, False, 7, SCTPChunkInitAck(init_tag=9, init_tsn=1, params=[SCTPChunkParamStateCookie(cookie=b"k" * 4),
                                                                               address_parameter(B1), address_parameter(B2)] + ext)),
        pkt(A1, B1, True, 9, SCTPChunkCookieEcho(cookie=b"k" * 4)),
        pkt(B1, A1, False, 7, SCTPChunkCookieAck()),
    ]
    for tsn in range(1, 11):
        src, dst = (A1, B1) if tsn % 2 else (A2, B2)
        frames.append(pkt(src, dst, True, 9, SCTPChunkData(tsn=tsn, data=b"p" * (100 * tsn), beginning=1, ending=1)))
        if tsn >= 4:
            blocks = [f"2:{tsn - 2}"]  # cum 2, TSN 3 missing
            ack = SCTPChunkNRSACK(cumul_tsn_ack=2, nr_gap_ack_list=blocks) if nr else SCTPChunkSACK(cumul_tsn_ack=2, gap_ack_list=blocks)
            frames.append(pkt(B1, A1, False, 7, ack))
        elif tsn <= 2:
            ack = SCTPChunkNRSACK(cumul_tsn_ack=tsn) if nr else SCTPChunkSACK(cumul_tsn_ack=tsn)
            frames.append(pkt(B1, A1, False, 7, ack))
    frames.append(pkt(A2, B2, True, 9, SCTPChunkData(tsn=3, data=b"p" * 300, beginning=1, ending=1)))
    final = SCTPChunkNRSACK(cumul_tsn_ack=10) if nr else SCTPChunkSACK(cumul_tsn_ack=10)
    frames.append(pkt(B1, A1, False, 7, final))
    return frames


@pytest.fixture(scope="module")
def cmt(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmt")
    return {nr: write_pcap(d / f"cmt-{'nr' if nr else 'sack'}.pcap", cmt_frames(nr), 1) for nr in (True, False)}


def test_cmt_association_with_two_paths(cmt):
    analysis = analyze(cmt[True], sndbuf=4000)
    flows = analysis.flows
    assert len(flows) == 1 and flows.loc[0, "paths"] == 2
    assert flows.loc[0, "addresses_0"] == f"{A1} {A2}" and flows.loc[0, "addresses_1"] == f"{B1} {B2}"
    [entry] = analysis.entries
    assert entry.summary["src"] == f"{A1}:5000" and entry.summary["data_bytes"] == 5500
    paths = {(p.summary["src"], p.summary["dst"]): p for p in entry.paths}
    assert set(paths) == {(f"{A1}:5000", f"{B1}:5001"), (f"{A2}:5000", f"{B2}:5001")}
    # each TSN counts on the path of its first transmission: odd TSNs on path 1
    assert paths[(f"{A1}:5000", f"{B1}:5001")].summary["data_bytes"] == sum(100 * t for t in range(1, 11, 2))
    assert sum(p.summary["data_bytes"] for p in entry.paths) == entry.summary["data_bytes"]
    # at every ack the paths' queues add up to the association's (a path has no rows before its
    # first DATA: its queue is empty there)
    whole = entry.rtxq.set_index("frame")
    acks = whole[whole["event"] == "ack"].index
    for column in ("rtxq_sack_bytes", "sacked_bytes", "nr_acked_bytes"):
        total = sum(p.rtxq.set_index("frame")[column].reindex(acks, fill_value=0) for p in entry.paths)
        assert (total == whole.loc[acks, column]).all(), column
    assert all(p.summary["complete"] for p in entry.paths)


def test_json_has_the_contract_keys_in_order_with_paths(cmt):
    result = CliRunner().invoke(main, ["analyze", str(cmt[True]), "--format", "json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    [flow] = summary["flows"]
    assert list(flow)[: len(CONTRACT_KEYS)] == CONTRACT_KEYS
    assert [list(p)[: len(CONTRACT_KEYS)] for p in flow["paths"]] == [CONTRACT_KEYS] * 2
    # a capture between the ends: its timing cannot tell the buffer (docs/metrics.md, Estimating B)
    assert flow["sndbuf_estimated"] is True and flow["sndbuf_source"] == "estimated" and flow["vantage"] == "middle"
    assert flow["sndbuf_verdict"] == "cannot tell" and flow["sndbuf_reason"] == "the capture is not by the sender (vantage middle)"
    assert flow["sndbuf_bytes"] is None and flow["b_over_q"] is None and flow["p_over_q"] is None
    assert isinstance(flow["complete"], bool) and flow["vantage"] in ("sender", "receiver", "middle", "unknown")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_files_have_the_contract_columns(cmt, tmp_path, fmt):
    result = CliRunner().invoke(main, ["analyze", str(cmt[False]), "--format", fmt, "--out", str(tmp_path), "--sndbuf", "3000"])
    assert result.exit_code == 0, result.output
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    summary, rtxq, blocking = (read(tmp_path / f"{name}.{fmt}") for name in ("summary", "rtxq", "blocking"))
    assert list(summary.columns[: len(CONTRACT_KEYS)]) == CONTRACT_KEYS
    assert list(rtxq.columns[:9]) == ["flow", "time_s", "rtxq_sack_bytes", "rtxq_nr_bytes", "rtxq_whatif_bytes",
                                      "sacked_bytes", "nr_acked_bytes", "blocked", "gap_open"]
    assert list(blocking.columns[:6]) == ["flow", "start_s", "end_s", "duration_s", "rtxq_bytes_at_start", "gap_open"]
    assert set(rtxq["flow"].astype(str)) == set(summary["id"].astype(str))
    assert len(blocking) == summary["blocking_intervals"].sum() > 0


def test_flow_filter(cmt):
    result = CliRunner().invoke(main, ["analyze", str(cmt[True]), "--format", "json", "--flow", "0a.1"])
    assert result.exit_code == 0
    assert [f["id"] for f in json.loads(result.output)["flows"]] == []  # a path id selects no direction
    result = CliRunner().invoke(main, ["analyze", str(cmt[True]), "--format", "json", "--flow", "0"])
    assert [f["id"] for f in json.loads(result.output)["flows"]] == ["0a"]
    result = CliRunner().invoke(main, ["analyze", str(cmt[True]), "--flow", "7"])
    assert result.exit_code == 2 and "no flow '7'" in result.output


def test_plot_draws_the_dashboards_figure_of_every_entry(cmt, tmp_path):
    """One figure per sender direction and path, at the dashboard's height, labelled in words, with the
    loss-recovery (gap open) band and the blocked shading."""
    out = tmp_path / "cmt.html"
    result = CliRunner().invoke(main, ["plot", str(SAMPLES / "cmt-nrsack.pcap"), "--sndbuf", "8000", "--out", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    for name in ("RtxQ had the SACKs been renegable", "RtxQ this NR-SACK sender kept", "loss recovery (a gap open)",
                 "blocked: send buffer full", "send buffer B = 8000 bytes (given)", "RtxQ of 0a.0: ", "RtxQ of 0a.1: "):
        assert name in html, name
    assert '"name":"rtxq_' not in html  # no column names as legend labels
    assert html.count('"height":430') == 3 and html.count("plotly.js v") == 1
    result = CliRunner().invoke(main, ["plot", str(cmt[False]), "--flow", "0a", "--out", str(out)])
    assert result.exit_code == 0 and "RtxQ had every SACK been an NR-SACK" in out.read_text()


def test_compare_gives_the_gain(cmt):
    result = CliRunner().invoke(main, ["compare", str(cmt[True]), str(cmt[False]), "--sndbuf", "3000", "--format", "json"])
    assert result.exit_code == 0, result.output
    [pair] = json.loads(result.output)["pairs"]
    a, b = analyze(cmt[True], sndbuf=3000).summary, analyze(cmt[False], sndbuf=3000).summary
    ta, tb = a["throughput_bps"].iloc[0], b["throughput_bps"].iloc[0]
    assert pair["gain_percent"] == pytest.approx((ta - tb) / tb * 100, rel=1e-12)


def test_compare_reads_json_summaries(tmp_path):
    fig4, fig2 = SAMPLES / "sctp-nrsack-fig4.pcap", SAMPLES / "sctp-sack-fig2.pcap"
    paths = []
    for capture in (fig4, fig2):
        result = CliRunner().invoke(main, ["analyze", str(capture), "--sndbuf", "8000", "--format", "json"])
        paths.append(tmp_path / (capture.stem + ".json"))
        paths[-1].write_text(result.output)
    result = CliRunner().invoke(main, ["compare", *map(str, paths), "--format", "json"])
    [pair] = json.loads(result.output)["pairs"]
    expected = [json.loads((SAMPLES / f"{c.stem}.expected.json").read_text())["flows"][0]["throughput_bps"] for c in (fig4, fig2)]
    assert pair["gain_percent"] == pytest.approx((expected[0] - expected[1]) / expected[1] * 100, rel=1e-12)


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_the_summary_starts_without_pandas(fmt):
    """pandas and pyarrow take a quarter second to import, longer than a small capture's whole analysis
    (issue 28's start-up bar): the summary's table and JSON never need them."""
    import subprocess
    import sys

    sample = SAMPLES / "sctp-nrsack-fig4.pcap"
    child = ("import contextlib, io, sys\nfrom nrsack.cli import main\n"
             f"sys.argv = ['nrsack', 'analyze', {str(sample)!r}, '--format', {fmt!r}]\n"
             "try:\n    with contextlib.redirect_stdout(io.StringIO()):\n        main()\nexcept SystemExit as end:\n"
             "    assert not end.code, end.code\n"
             "print(sorted(m for m in ('pandas', 'pyarrow') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["[]"]
