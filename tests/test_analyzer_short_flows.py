"""TCP connections that begin and end in one chunk are finished in one compiled pass for the summary
alone (pipeline.Pipeline._finish_short, _scoreboard.c short_tcp_entries): their summaries must be
those of the general path (a DirectionAccumulator per direction), whatever the blocks, losses, wrap, far acks or
end; a transfer that did not complete goes the general way. Those that begin in a chunk and do not end in it
are parked as their events (Pipeline._hold) and finished in the same pass, where q ends for a transfer that
did not complete given (the idle bound, the budget, the capture's end)."""

import random

import numpy as np
import pandas as pd
import pytest

from nrsack.analyzer import analyze
from nrsack.analyzer.read import events as E
from nrsack.analyzer.state import pipeline as P
from nrsack.analyzer.state.stores import DiskStore
from nrsack.analyzer.views import stream
from nrsack.analyzer.views import formats
from support import pcaps, tcp_scenario


def connection(rng, k, t0):
    """One connection k: handshake (NR-SACK permitted or not, never-renege flags), data one way or
    both with random losses, retransmissions, duplicates and acks with SACK and / or NR blocks (some
    far away), then FINs both ways acked, a RST, or a FIN never acked."""
    ends = [(f"10.1.{k % 250}.{1 + k // 250}", 1024 + k), ("10.255.0.1", 80)]
    isn = [rng.choice([rng.randrange(1 << 32), (1 << 32) - rng.randrange(1, 3000)]), rng.randrange(1 << 32)]
    permitted = [rng.random() < 0.7, rng.random() < 0.7]
    send, frames = tcp_scenario.timed_sender(ends, t0)

    def syn_options(side):
        nr = [pcaps.nr_permitted_option(rng.choice([0, 1]))] if permitted[side] else []
        return [("MSS", 1460), ("SAckOK", b"")] + nr

    send(0, isn[0], 0, "S", syn_options(0))
    send(1, isn[1], isn[0] + 1, "SA", syn_options(1), dt=rng.uniform(0.001, 0.05))
    send(0, isn[0] + 1, isn[1] + 1, "A", dt=rng.uniform(0.0001, 0.05))
    nxt = [isn[0] + 1, isn[1] + 1]
    loss = rng.choice([0, 0.2, 0.4])
    for sender in [0] if rng.random() < 0.7 else [0, 1]:
        start = pos = nxt[sender]
        pending = []
        for _ in range(rng.randrange(0, 7)):
            size = rng.randrange(1, 1400)
            pending.append((pos, size))
            pos += size
        nxt[sender], got = pos, set()
        for _ in range(5):  # rounds of (re)transmissions
            lost = []
            for seq, size in pending:
                send(sender, seq, nxt[1 - sender], "PA", payload=size)
                if rng.random() < loss:
                    lost.append((seq, size))
                    continue
                got.add((seq, size))
                cum = start
                for lo, length in sorted(got):
                    cum = max(cum, lo + length) if lo <= cum else cum
                blocks = []
                for lo, length in sorted(got):
                    if lo > cum:
                        if blocks and blocks[-1][1] == lo:
                            blocks[-1][1] = lo + length
                        else:
                            blocks.append([lo, lo + length])
                options, kind = [], rng.random()
                if blocks and kind < 0.4:
                    options.append(("SAck", tuple(x & 0xFFFFFFFF for b in blocks[:3] for x in b)))
                elif blocks and kind < 0.8:
                    options.append(pcaps.nr_blocks_option([tuple(b) for b in blocks[:3]]))
                elif blocks:
                    options += [("SAck", tuple(x & 0xFFFFFFFF for x in blocks[0])),
                                pcaps.nr_blocks_option([tuple(b) for b in blocks[1:3]])]
                far = (1 << 31) if rng.random() < 0.03 else 0
                send(1 - sender, nxt[1 - sender], cum + far, "A", options)
                if rng.random() < 0.05:
                    send(sender, seq, nxt[1 - sender], "PA", payload=size, dt=0.0001)
            pending = lost
    end = rng.random()
    if end < 0.1:
        send(rng.randrange(2), nxt[0], nxt[1], "R")
    elif end < 0.2:
        send(0, nxt[0], nxt[1], "FA")  # never acked: the connection stays open
    else:
        send(0, nxt[0], nxt[1], "FA")
        send(1, nxt[1], nxt[0] + 1, "A")
        send(1, nxt[1], nxt[0] + 1, "FA")
        send(0, nxt[0] + 1, nxt[1] + 1, "A")
    return frames


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    rng = random.Random(17)
    frames = [f for k in range(60) for f in connection(rng, k, rng.uniform(0, 1.0))]
    frames += [f for k in range(3) for f in tcp_scenario.window_transfer(k, rng.uniform(0, 1.0), window=6 + 2 * k)]
    return pcaps.write(tmp_path_factory.mktemp("short") / "short.pcap", sorted(frames, key=lambda f: float(f.time)))


@pytest.mark.parametrize("sndbuf", [None, 3000])
def test_short_connections_summed_as_the_general_path_does(capture, sndbuf):
    general = formats.summary_dict(analyze(capture, sndbuf=sndbuf))  # a DirectionAccumulator per direction, in memory
    assert formats.summary_dict(stream.analyze_to_files(capture, sndbuf=sndbuf)) == general
    # the same pipeline fed by hand: most connections took the one-pass way
    spill_run = P.Pipeline(DiskStore(), finish_ended=True, sndbuf=sndbuf)
    for cap in E.read_chunks(capture):
        spill_run.feed(cap)
    assert spill_run.short_flows >= 40
    complete = [f for f in general["flows"] if f["complete"]]
    assert any(f["retransmissions"] for f in complete) and any(f["nr_sack"] for f in complete)
    assert any(f["blocking_intervals"] for f in complete) and any(f["p_ns"] for f in complete)
    if sndbuf is None:  # the estimator's every verdict, on both ways
        assert {f["sndbuf_verdict"] for f in complete} == {"held back", "never", "cannot tell"}
    assert any(f.get("far_serials_ignored") for f in complete)
    assert any(not f["complete"] for f in general["flows"])  # the FINs never acked: the general path


@pytest.mark.parametrize("chunk_frames", [7, 40, 150])
def test_short_connections_in_small_chunks_match(capture, chunk_frames):
    # in chunks of 7 frames almost no connection fits in one or two: held back once, then the general path;
    # in larger ones most cut by a chunk's end end in the next (held back, then one pass): the same figures
    whole = formats.summary_dict(stream.analyze_to_files(capture))
    assert formats.summary_dict(stream.analyze_to_files(capture, chunk_frames=chunk_frames)) == whole
    spill_run = P.Pipeline(DiskStore(), finish_ended=True)
    held = 0
    for cap in E.read_chunks(capture, chunk_frames):
        spill_run.feed(cap)
        held += 0 if spill_run.pending is None else len(spill_run.pending[0])
    entries = spill_run.entries(None)
    assert held >= 5 and spill_run.parked.count == 0 and not spill_run.parked.parcels
    assert [e.summary for e in entries] == [e.summary for e in stream.analyze_to_files(capture).entries]


def test_a_long_transfer_cut_by_a_chunk_is_not_held(tmp_path):
    # more events in its first chunk than a short exchange has: replaying them would only cost (HOLD_MAX_EVENTS)
    from support import hostile

    path = tmp_path / "long.pcap"
    segments = P.HOLD_MAX_EVENTS  # data and acks: about twice as many events
    path.write_bytes(hostile.pcap_bytes(hostile.plain_records(hostile.ip_frames(hostile.tcp_transfer(segments)))))
    chunk = P.HOLD_MAX_EVENTS + 100
    run = P.Pipeline(DiskStore(), finish_ended=True)
    caps = E.read_chunks(path, chunk)
    run.feed(next(caps))
    assert run.parked.count == 0
    for cap in caps:
        run.feed(cap)
    whole = formats.summary_dict(stream.analyze_to_files(path))
    assert formats.summary_dict(stream.analyze_to_files(path, chunk_frames=chunk)) == whole
    assert whole["flows"][0]["complete"]


@pytest.mark.parametrize("chunk_frames", [None, 50, 120])
def test_parked_connections_ended_by_the_idle_bound_or_the_capture_match(tmp_path, chunk_frames, monkeypatch):
    # connections that begin in a chunk and do not end in it are parked as their events (Pipeline._hold); a
    # second burst 400 s later ends the first burst's by the idle bound: a completed transfer is finished at
    # once, one not completed at the capture's end (its q runs on), as DirectionAccumulators finish them
    rng = random.Random(30)
    frames = [f for k in range(40) for f in connection(rng, k, rng.uniform(0, 1.0))]
    frames += [f for k in range(40, 80) for f in connection(rng, k, 400 + rng.uniform(0, 1.0))]
    path = pcaps.write(tmp_path / "idle.pcap", sorted(frames, key=lambda f: float(f.time)))
    general = formats.summary_dict(analyze(path))
    compacted = []
    if chunk_frames == 120:  # parcels rebuilt as soon as most of their connections were replayed
        monkeypatch.setattr(P.ParkedFlows, "COMPACT_FROM", 2)
        compact = P.ParkedFlows._compact
        monkeypatch.setattr(P.ParkedFlows, "_compact", lambda *args: compacted.append(compact(*args)))
    assert formats.summary_dict(stream.analyze_to_files(path, chunk_frames=chunk_frames)) == general
    run = P.Pipeline(DiskStore(), finish_ended=True)
    for cap in E.read_chunks(path, chunk_frames):
        run.feed(cap)
    assert run.parked.numbered  # (in chunks of 50 most are replayed into the next chunk)
    run.late_note()  # the last chunk's parked connections open: the idle bound ends the first burst's
    parked = run.parked.parcel_of >= 0
    if chunk_frames is None:  # all parked in the one chunk: some left to the end, one of them idle, incomplete
        assert parked[40:].any() and (parked & run.released).any() and not (parked & run.released)[40:].any()
    assert len(run.entries(None)) == len(general["flows"]) and run.parked.count == 0
    assert bool(compacted) == (chunk_frames == 120)


@pytest.mark.parametrize("chunk_frames, sndbuf", [(None, None), (None, 3000), (120, None), (120, 3000)])
def test_parked_connections_tables_are_the_general_paths(tmp_path, chunk_frames, sndbuf, monkeypatch):
    # the streamed files park as the summary does and make the parked connections' RtxQ and blocking rows in the
    # same compiled pass (short_tcp_entries with by_sender, scoreboard.short_tcp_pieces): the files must be the
    # in-memory analysis's, where every direction goes through DirectionAccumulator.finish
    rng = random.Random(29)
    frames = [f for k in range(40) for f in connection(rng, k, rng.uniform(0, 1.0))]
    frames += [f for k in range(40, 80) for f in connection(rng, k, 400 + rng.uniform(0, 1.0))]
    path = pcaps.write(tmp_path / "parked.pcap", sorted(frames, key=lambda f: float(f.time)))
    written = formats.write_tables(analyze(path, sndbuf=sndbuf), tmp_path / "memory", "csv")
    with_tables = []
    finish = P.ParkedFlows.finish
    monkeypatch.setattr(P.ParkedFlows, "finish", lambda self, *args, **kw: with_tables.append(kw.get("tables"))
                        or finish(self, *args, **kw))
    stream.analyze_to_files(path, tmp_path / "stream", "csv", sndbuf=sndbuf, chunk_frames=chunk_frames)
    assert with_tables and all(with_tables)  # (the parked connections' tables came from the compiled pass)
    for table in written:
        assert (tmp_path / "stream" / table.name).read_bytes() == table.read_bytes(), table.name
    if sndbuf is not None:  # blocking runs, ended and open at the end of q, were compared
        assert (tmp_path / "stream" / "blocking.csv").read_text().count("\n") > 2


def test_parked_connections_tables_keep_the_flow_order_whatever_finishes_them(tmp_path, monkeypatch):
    # flows finished a parcel at a time (the budget, the idle bound, the capture's end) are written from the spill
    # a run of them at once (EntrySpill.put_batch, TableWriter.write_many) between those finished alone (a long
    # transfer, a connection replayed into a later chunk): the rows stay in flow order and the Parquet row groups
    # are cut where a piece at a time cut them, whichever way each flow went
    rng = random.Random(31)
    frames = [f for k in range(120) for f in connection(rng, k, rng.uniform(0, 3.0))]
    frames += [f for k in range(3) for f in tcp_scenario.window_transfer(200 + k, rng.uniform(0, 3.0), window=6 + k)]
    frames += [f for k in range(120, 160) for f in connection(rng, k, 400 + rng.uniform(0, 1.0))]
    path = pcaps.write(tmp_path / "mixed.pcap", sorted(frames, key=lambda f: float(f.time)))
    whole = analyze(path, sndbuf=3000, max_open_flows=30)
    written = formats.write_tables(whole, tmp_path / "memory", "parquet")
    monkeypatch.setattr(stream.TableWriter, "ROWS_PER_WRITE", 37)
    monkeypatch.setattr(stream.TableWriter, "ENTRIES_PER_WRITE", 5)
    batches = []
    put_batch = P.EntrySpill.put_batch
    monkeypatch.setattr(P.EntrySpill, "put_batch", lambda self, fids, *rest: batches.append(len(fids))
                        or put_batch(self, fids, *rest))
    stream.analyze_to_files(path, tmp_path / "stream", "parquet", sndbuf=3000, chunk_frames=90, max_open_flows=30)
    assert len(batches) > 3 and max(batches) > 1  # (parcels of several flows, besides the flows finished alone)
    import pyarrow.parquet as pq

    for table in written:
        streamed = tmp_path / "stream" / table.name
        pd.testing.assert_frame_equal(pd.read_parquet(streamed), pd.read_parquet(table), obj=table.name)
    assert pq.ParquetFile(tmp_path / "stream" / "blocking.parquet").metadata.num_row_groups > 1
    assert pq.ParquetFile(tmp_path / "stream" / "rtxq.parquet").metadata.num_row_groups > 10
