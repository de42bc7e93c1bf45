"""Board.feed_acks: a TCP direction without data, in a chunk that brings it only acks without blocks (the
receiver's direction of a bulk transfer), feeds its Board the first row of the highest ack alone and counts
the rest. The Board must be left as feeding every row leaves it (the rows after it give the same records),
the count must be the rows the level keeps, and every figure of a capture must be the one of feeding all."""

import sys

import numpy as np
import pandas as pd
import pytest
from support.paths import REPO

from nrsack.analyzer.read import events as E
from nrsack.analyzer.state import flows as F
from nrsack.analyzer.state.scoreboard import ROW_DTYPE
from nrsack.analyzer.views import formats, stream
from nrsack.analyzer import _native, analyze

EV_ACK = 1 << 1
BK_TCP_SACK = 4


def chunk(rows, blocks=()):
    """(events, blocks, rows, sides) of one TCP connection (conn 0): rows of (side, seq, ack, len, time_ns), every
    one with ACK set; blocks: (row, lo, hi) SACK edges."""
    ev = np.zeros(len(rows), E.EVENT_DTYPE)
    for i, (side, seq, ack, length, time_ns) in enumerate(rows):
        ev[i] = 0
        ev[i]["time_ns"], ev[i]["frame"], ev[i]["seq"], ev[i]["ack"], ev[i]["len"] = time_ns, i + 1, seq, ack, length
        ev[i]["flags"], ev[i]["proto"], ev[i]["chunk"], ev[i]["tcp_flags"], ev[i]["dir"] = EV_ACK, 6, 255, 0x10, side
    bk = np.zeros(len(blocks), E.BLOCK_DTYPE)
    for k, (row, lo, hi) in enumerate(blocks):
        bk[k]["event"], bk[k]["lo"], bk[k]["hi"], bk[k]["kind"] = row, lo, hi, BK_TCP_SACK
        if not ev[row]["blk_count"]:
            ev[row]["blk_start"] = k
        ev[row]["blk_count"] += 1
    return ev, bk, np.arange(len(rows), dtype=np.int64), ev["dir"].astype(np.int8)


def level_args(c, state, sender=1):
    ev, bk, rows, sides = c
    return ev, bk, rows, sides, F.LEVEL_TCP, 0, sender, state, False


# side 1 (the receiver, sender of the level under test) acks side 0's data; side 0's segments ack side 1's
# serials: repeated, stale, higher, a wrap of 32 bits, and one far away (left out, counted apart)
QUIET = [(0, 100 + 10 * i, ack, 10, 1000 * i) if i % 2 == 0 else (1, ack, 100 + 10 * i, 0, 1000 * i)
         for i, ack in enumerate([7000, 7000, 6999, 7000, 7001, 7001, 0xFFFFFFF0, 0xFFFFFFF0, 0x7000_0000, 7001,
                                  7001, 7001])]
QUIET = [(side, seq, ack, length, t) if side == 0 else (side, seq, ack, 0, t) for side, seq, ack, length, t in QUIET]
# then the receiver sends data, and side 0's acks carry SACK blocks of it
LATER = [(1, 7001, 200, 100, 20_000), (1, 7101, 200, 100, 21_000), (0, 200, 7001, 0, 22_000),
         (0, 200, 7001, 0, 23_000), (0, 200, 7201, 0, 24_000)]
LATER_BLOCKS = [(2, 7101, 7201)]


@pytest.mark.parametrize("state", [None, (6990, None)])
def test_the_board_is_left_as_feeding_every_ack_leaves_it(state):
    quiet = chunk(QUIET)
    every, skipped = _native.Board(), _native.Board()
    records, _, every_state, _, every_far = every.feed_level(*level_args(quiet, state))
    kept, skipped_state, skipped_far, pos, serial = skipped.feed_acks(*level_args(quiet, state), True)
    assert kept == len(np.frombuffer(records, ROW_DTYPE)) > 0
    assert (skipped_state, skipped_far) == (every_state, every_far)
    # the kept rows' positions and serials, as the level's part has them (the in-memory analysis keeps them)
    part, _, _, _, _ = _native.level_part(*level_args(quiet, state))
    assert bytes(pos) == bytes(part[0]) and bytes(serial) == bytes(part[2])
    assert _native.Board().feed_acks(*level_args(quiet, state))[3:] == (None, None)
    assert every_far[0] > 0  # the far ack was left out by both
    later = chunk(LATER, LATER_BLOCKS)
    after_every = every.feed_level(*level_args(later, every_state))
    after_skipped = skipped.feed_level(*level_args(later, skipped_state))
    assert after_skipped[0] == after_every[0] and after_skipped[1:] == after_every[1:]
    flags = np.frombuffer(after_every[0], ROW_DTYPE)["flags"]
    assert flags.any()  # the later rows depend on the state the acks left (changed, gap open)


def test_not_a_quiet_chunk_is_left_alone():
    board = _native.Board()
    # a data row of the direction, a SACK block on an ack: the usual way
    assert board.feed_acks(*level_args(chunk(QUIET + LATER[:1]), None)) is None
    assert board.feed_acks(*level_args(chunk(QUIET[:1] * 3, [(1, 5, 9)]), None)) is None
    # the Board untouched: fed the usual way afterwards, it matches a fresh one
    fresh = _native.Board()
    assert board.feed_level(*level_args(chunk(QUIET), None))[0] == fresh.feed_level(*level_args(chunk(QUIET), None))[0]
    # a Board with data: the usual way even for acks alone
    board.feed_level(*level_args(chunk(LATER, LATER_BLOCKS), None))
    assert board.feed_acks(*level_args(chunk(QUIET), None)) is None


@pytest.fixture(scope="module")
def bulk(tmp_path_factory):
    """bench_analyzer's capture: interleaved long TCP (SACK) and SCTP transfers, each TCP receiver quiet; a
    flow's rows in a chunk of 2500 frames more than FUSED_ROWS (fed alone, DirectionAccumulator.feed)."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_analyzer import build_capture

    path = tmp_path_factory.mktemp("quiet") / "bulk.pcap"
    build_capture(str(path), 20_000, 4, seed=7)
    return path


def feed_every_row(monkeypatch):
    """Turns the quiet way off: every chunk fed row by row, as before Board.feed_acks."""
    monkeypatch.setattr(F.TcpLevel, "feed_acks", lambda self, board, events, positions=False: None)


@pytest.fixture
def quiet_chunks(monkeypatch):
    """How many chunks went the quiet way."""
    taken = []
    feed_acks = F.TcpLevel.feed_acks

    def counted(self, board, events, positions=False):
        quiet = feed_acks(self, board, events, positions)
        taken.append(quiet is not None)
        return quiet
    monkeypatch.setattr(F.TcpLevel, "feed_acks", counted)
    return taken


@pytest.mark.parametrize("chunk_frames", [97, 2500, None])
def test_bulk_transfers_summary_and_tables_are_the_same(bulk, chunk_frames, tmp_path, monkeypatch, quiet_chunks):
    quiet = tmp_path / "quiet"
    summary = formats.summary_dict(stream.analyze_to_files(bulk, quiet, "parquet", chunk_frames=chunk_frames))
    # (in chunks of 97 frames each flow's rows are few: fed with the others in one call, feed_fused)
    assert (sum(quiet_chunks) > 0) == (chunk_frames != 97)
    feed_every_row(monkeypatch)
    every = tmp_path / "every"
    assert formats.summary_dict(stream.analyze_to_files(bulk, every, "parquet", chunk_frames=chunk_frames)) == summary
    for name in ("summary", "rtxq", "blocking"):
        pd.testing.assert_frame_equal(pd.read_parquet(quiet / f"{name}.parquet"),
                                      pd.read_parquet(every / f"{name}.parquet"))


@pytest.mark.parametrize("chunk_frames", [2500, None])
def test_bulk_transfers_in_memory_are_the_same(bulk, chunk_frames, monkeypatch, quiet_chunks):
    # the in-memory analysis keeps every row's serials (Serials): the quiet rows' too
    quiet = analyze(bulk, chunk_frames=chunk_frames)
    assert sum(quiet_chunks) > 0
    feed_every_row(monkeypatch)
    every = analyze(bulk, chunk_frames=chunk_frames)
    for table in ("summary", "rtxq", "blocking"):
        pd.testing.assert_frame_equal(getattr(quiet, table), getattr(every, table))
    assert quiet.serials.keys() == every.serials.keys()
    for entry, kept in every.serials.items():
        for name, column in kept._asdict().items():
            np.testing.assert_array_equal(getattr(quiet.serials[entry], name), column, err_msg=f"{entry} {name}")
            assert getattr(quiet.serials[entry], name).dtype == column.dtype
