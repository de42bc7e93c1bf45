"""Chunked and streaming analysis give exactly the results of the whole capture at once.

The pipeline carries its state (flows, unwrapping, scoreboards, first-path tables) from chunk to
chunk, so cutting a capture anywhere, down to one frame per chunk, must change no figure, no row
and no event; `nrsack analyze --stream` must write the files the in-memory analysis writes.
"""

import json
import subprocess

import pandas as pd
import pytest

from nrsack.analyzer import CaptureError, analyze
from nrsack.analyzer.views import stream
from nrsack.analyzer.views import formats
from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate, write_pcap
from support.samples import PCAPS

TABLES = ("summary", "rtxq", "blocking", "events", "flows")

# (protocol, ack, losses per path, first TSN / sequence number): loss recovery on every path,
# and sequence spaces that wrap in the middle of the transfer
SIMULATED = [
    ("sctp", "nrsack", (0.04,), 2**32 - 300),
    ("cmt", "nrsack", (0.02, 0.05), None),
    ("cmt", "sack", (0.03, 0.01), 2**32 - 100),
    ("tcp", "nrsack", (0.04,), 2**32 - 90_000),
    ("mptcp", "nrsack", (0.01, 0.05), None),
    ("mptcp", "sack", (0.03,), 2**32 - 50_000),
]


def _analyses_or_none(path, **kw):
    try:
        return analyze(path, **kw)
    except CaptureError:
        return None


def _same(whole, part):
    assert (whole is None) == (part is None)
    if whole is None:
        return
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(whole, name), getattr(part, name), obj=name)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sim")
    out = {}
    for protocol, ack, losses, isn in SIMULATED:
        cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=12000, total_bytes=400_000, seed=3, isn=isn,
                        paths=tuple(PathConfig(bandwidth_bps=20e6, delay_s=0.01, loss=x) for x in losses))
        trace = simulate(cfg, receiver_trace=True)
        for side, frames in (("sender", trace.sender), ("receiver", trace.receiver)):
            path = folder / f"{protocol}-{ack}-{len(losses)}-{side}.pcap"
            write_pcap(trace, frames, path)
            out[path.stem] = str(path)
    # SCTP and TCP in one capture: the TSN columns are NA for TCP rows
    mixed = folder / "mixed.pcapng"
    subprocess.run(["mergecap", "-w", str(mixed), out["sctp-nrsack-1-sender"], out["tcp-nrsack-1-sender"]], check=True)
    out["mixed"] = str(mixed)
    return out


@pytest.mark.parametrize("pcap", PCAPS, ids=lambda p: p.name)
def test_samples_do_not_depend_on_the_chunk_size(pcap):
    whole = _analyses_or_none(pcap)
    for frames in (1, 5):
        _same(whole, _analyses_or_none(pcap, chunk_frames=frames))


@pytest.mark.parametrize("name", [f"{p}-{a}-{len(l)}-{s}" for p, a, l, _ in SIMULATED for s in ("sender", "receiver")]
                         + ["mixed"])
def test_simulated_transfers_do_not_depend_on_the_chunk_size(simulated, name):
    whole = analyze(simulated[name])
    assert len(whole.rtxq) > 300 and whole.rtxq["gap_open"].any(), "the transfer must include loss recovery"
    for frames in (1, 37, 1000):
        _same(whole, analyze(simulated[name], chunk_frames=frames))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("name", ["cmt-nrsack-2-receiver", "mptcp-nrsack-2-sender", "mixed"])
def test_streamed_files_are_the_in_memory_files(simulated, tmp_path, monkeypatch, name, fmt):
    monkeypatch.setattr(stream.TableWriter, "ROWS_PER_WRITE", 250)  # many writes, mixing entries
    whole = analyze(simulated[name], sndbuf=9000)
    written = formats.write_tables(whole, tmp_path / "memory", fmt)
    result = stream.analyze_to_files(simulated[name], tmp_path / "stream", fmt, sndbuf=9000, chunk_frames=101)
    assert [p.name for p in result.files] == [p.name for p in written]
    for path in written:
        streamed = tmp_path / "stream" / path.name
        if fmt == "csv":
            assert streamed.read_bytes() == path.read_bytes(), path.name
        else:
            pd.testing.assert_frame_equal(pd.read_parquet(streamed), pd.read_parquet(path), obj=path.name)
    assert formats.summary_dict(result) == formats.summary_dict(whole)
    assert not list((tmp_path / "stream").glob("nrsack-rows-*")), "the spill file is removed"


@pytest.mark.parametrize("name", ["cmt-nrsack-2-receiver", "tcp-nrsack-1-sender", "mixed"])
def test_parquet_written_from_arrays_is_the_frames_bytes(simulated, tmp_path, monkeypatch, name):
    """The writes after the first are made from the entries' arrays (stream.arrow_table), not DataFrames:
    the same Parquet bytes as the frames' path, many writes of several entries, SCTP and TCP mixed."""
    monkeypatch.setattr(stream.TableWriter, "ROWS_PER_WRITE", 250)
    made = []
    arrays = stream.arrow_table
    monkeypatch.setattr(stream, "arrow_table", lambda *args: made.append(arrays(*args)) or made[-1])
    stream.analyze_to_files(simulated[name], tmp_path / "arrays", "parquet", chunk_frames=101)
    assert len(made) >= 2 and None not in made, "every write after a table's first is made of the arrays"
    monkeypatch.setattr(stream, "arrow_table", lambda *args: None)
    stream.analyze_to_files(simulated[name], tmp_path / "frames", "parquet", chunk_frames=101)
    for table in ("rtxq", "blocking"):
        written = (tmp_path / "frames" / f"{table}.parquet").read_bytes()
        assert (tmp_path / "arrays" / f"{table}.parquet").read_bytes() == written, table


@pytest.mark.parametrize("writes", ["arrays", "frames"])
def test_parquet_row_groups_carry_every_id_first_then_the_ids_present(simulated, tmp_path, monkeypatch, writes):
    """The `flow` dictionary of rtxq.parquet (decisions.md 108): the first row group's holds every entry id, each
    later one's the ids of its rows in their order (not a million ids a row group); read whole, the file gives
    every id as the categories, as the in-memory file does."""
    import pyarrow.parquet as pq

    monkeypatch.setattr(stream.TableWriter, "ROWS_PER_WRITE", 250)
    if writes == "frames":  # (a later write made through a DataFrame, where the arrays' columns do not fit)
        monkeypatch.setattr(stream, "arrow_table", lambda *args: None)
    whole = analyze(simulated["mixed"])
    result = stream.analyze_to_files(simulated["mixed"], tmp_path, "parquet", chunk_frames=101)
    every_id = result.summary["id"].tolist()
    file = pq.ParquetFile(tmp_path / "rtxq.parquet")
    assert file.metadata.num_row_groups > 3
    for k in range(file.metadata.num_row_groups):
        flow = file.read_row_group(k, columns=["flow"]).column("flow").combine_chunks()
        present = list(dict.fromkeys(flow.to_pylist()))
        assert flow.dictionary.to_pylist() == (every_id if k == 0 else present), k
    assert len(set(present)) < len(every_id)  # (a later row group without every id)
    read = pd.read_parquet(tmp_path / "rtxq.parquet")
    assert read["flow"].cat.categories.tolist() == every_id
    pd.testing.assert_frame_equal(read, whole.rtxq.reset_index(drop=True))


def test_summary_columns_make_the_frame_of_the_dicts():
    """The streamed summary's frame (stream.SummaryColumns: columns packed a batch at a time, strings made as Arrow
    arrays from them) is the frame pandas makes of the summaries' dicts: distinct strings (joined), repeated ones
    (coded), non-ASCII ones (a character more than a byte), over several batches."""
    from types import SimpleNamespace

    from nrsack.analyzer.state import scoreboard as A

    base = analyze(next(p for p in PCAPS if p.name == "sctp-nrsack-fig4.pcap")).summary.iloc[0].to_dict()
    summaries = []
    for k in range(3000):
        summary = {key: (None if pd.isna(value) else value.item() if hasattr(value, "item") else value)
                   for key, value in base.items()}
        summary.update(id=f"{k}a", src=f"10.0.{k % 7}.{k}:{k}" if k % 5 else f"[fe80::{k}%ethé]:80",
                       sndbuf_reason="déjà" if k % 3 == 0 else "plain")
        summaries.append(summary)
    columns = stream.SummaryColumns()
    for start in (0, 1000, 2500):
        columns.add([A.summary_row(s) for s in summaries[start:start + {0: 1000, 1000: 1500, 2500: 500}[start]]])
    made = columns.frame()
    pd.testing.assert_frame_equal(made, A.summary_frame([SimpleNamespace(summary=s) for s in summaries]))
    assert made["src"].iloc[5] == "[fe80::5%ethé]:80" and made["sndbuf_reason"].iloc[3] == "déjà"


@pytest.mark.slow  # seconds: not in the inner loop (make test-fast)
def test_stream_cli_keeps_the_flow_filter(simulated, tmp_path):
    capture = simulated["cmt-nrsack-2-sender"]
    for mode, folder in (([], "memory"), (["--stream"], "stream")):
        subprocess.run(["nrsack", "analyze", capture, "--flow", "0a.1", "--out", str(tmp_path / folder), *mode],
                       check=True, capture_output=True)
    for name in ("summary.csv", "rtxq.csv", "blocking.csv"):
        assert (tmp_path / "stream" / name).read_bytes() == (tmp_path / "memory" / name).read_bytes()
    summary = pd.read_csv(tmp_path / "stream" / "summary.csv")
    assert summary["id"].tolist() == ["0a.1"]


@pytest.mark.parametrize("content", [b"", b"not a capture at all", None])
def test_stream_cli_bad_input_is_one_line(tmp_path, content):
    capture = tmp_path / "bad.pcap"
    if content is None:  # a capture cut in the middle of its first record: nothing whole to analyse
        good = next(p for p in PCAPS if p.name == "sctp-nrsack-fig4.pcap").read_bytes()
        content = good[:24 + 16 + 7]
    capture.write_bytes(content)
    proc = subprocess.run(["nrsack", "analyze", str(capture), "--stream", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("nrsack: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["fs06-legal-negotiated.pcap", "tcp-sack-fig1.pcap", "sctp-nrsack-fig4.pcap"])
def test_streamed_files_of_samples(tmp_path, name):
    """Also a capture whose flows sent no data: empty tables with their columns."""
    capture = next(p for p in PCAPS if p.name == name)
    for fmt in ("csv", "parquet"):
        written = formats.write_tables(analyze(capture), tmp_path / f"memory-{fmt}", fmt)
        stream.analyze_to_files(capture, tmp_path / f"stream-{fmt}", fmt)
        for path in written:
            streamed = tmp_path / f"stream-{fmt}" / path.name
            if fmt == "csv":
                assert streamed.read_bytes() == path.read_bytes(), path.name
            else:
                pd.testing.assert_frame_equal(pd.read_parquet(streamed), pd.read_parquet(path), obj=path.name)


@pytest.mark.parametrize("name", ["cmt-nrsack-2-sender", "mptcp-sack-1-receiver", "mixed"])
def test_stream_summary_only(simulated, tmp_path, name):
    """Without an output folder nothing is written and no table is made, and the summary (p, q, b,
    B estimated from the whole transfer) is the in-memory one. `nrsack analyze` streams so whenever
    only the summary is asked for (json / table, no --out)."""
    capture = simulated[name]
    result = stream.analyze_to_files(capture, sndbuf=None)
    assert result.files == []
    assert formats.summary_dict(result) == formats.summary_dict(analyze(capture))
    for sndbuf in (None, 9000):
        option = [] if sndbuf is None else ["--sndbuf", str(sndbuf)]
        for mode in ([], ["--stream"]):
            cli = subprocess.run(["nrsack", "analyze", capture, "--format", "json", *option, *mode], cwd=tmp_path,
                                 check=True, capture_output=True, text=True)
            in_memory = formats.dump_json(formats.summary_dict(analyze(capture, sndbuf=sndbuf)))
            assert json.loads(cli.stdout) == json.loads(in_memory)
    assert list(tmp_path.iterdir()) == [], "json without --out writes no file"


def test_a_writer_given_runs_of_pieces_cuts_row_groups_where_one_piece_at_a_time_does(tmp_path, monkeypatch):
    # TableWriter.write_many (a parcel's flows replayed from the spill at once) must write the file write() writes
    # piece by piece: a row group ends after the piece that brings ROWS_PER_WRITE rows or ENTRIES_PER_WRITE entries
    # (an entry's consecutive pieces are one entry; after a write, its next piece starts it again)
    import random

    import numpy as np
    import pyarrow.parquet as pq

    from nrsack.analyzer.state import scoreboard as A

    monkeypatch.setattr(stream.TableWriter, "ROWS_PER_WRITE", 9)
    monkeypatch.setattr(stream.TableWriter, "ENTRIES_PER_WRITE", 4)
    rng = random.Random(5)
    ids, lengths, entry = [], [], 0
    for _ in range(300):  # pieces: some empty, an entry's pieces one after another
        entry += rng.random() < 0.6
        ids.append(f"{entry}a")
        lengths.append(rng.choice([0, 1, 1, 2, 3, 7, 12]))
    rows = sum(lengths)
    columns = {name: (np.arange(rows) % 2 == 0) if dtype is bool else np.arange(rows, dtype=dtype) * 3
               for name, dtype in A.RTXQ_COLUMNS.items()}
    every = pd.Index(dict.fromkeys(ids))
    at = np.cumsum([0] + lengths)
    one = stream.TableWriter(tmp_path / "one.parquet", "parquet", "rtxq", every, False)
    for k, entry_id in enumerate(ids):
        one.write(entry_id, {name: v[at[k]:at[k + 1]] for name, v in columns.items()})
    one.close()
    runs = stream.TableWriter(tmp_path / "runs.parquet", "parquet", "rtxq", every, False)
    k = 0
    while k < len(ids):
        stop = min(len(ids), k + rng.randrange(1, 40))
        runs.write_many(ids[k:stop], A.TablePieces(None, np.array(lengths[k:stop], np.int64),
                                                   {name: v[at[k]:at[stop]] for name, v in columns.items()}))
        k = stop
    runs.close()
    assert (tmp_path / "runs.parquet").read_bytes() == (tmp_path / "one.parquet").read_bytes()
    # the row groups where the rule above ends them
    expected, group_rows, group_entries, last = [], 0, 0, None
    for entry_id, n in zip(ids, lengths):
        group_entries += entry_id != last
        group_rows, last = group_rows + n, entry_id
        if group_rows >= 9 or group_entries >= 4:
            expected.append(group_rows)
            group_rows, group_entries, last = 0, 0, None
    expected += [group_rows] if group_entries else []
    meta = pq.ParquetFile(tmp_path / "runs.parquet").metadata
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == expected
