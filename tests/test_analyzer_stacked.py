"""analyze() writes pass 2's RtxQ and blocking rows straight into capture-wide columns (results.StackedTables):
its tables must be the ones stacking the entries' columns makes (scoreboard.rtxq_frame / blocking_frame), values
and dtypes, and each entry's own tables unchanged."""

import numpy as np
import pandas as pd
import pytest

from nrsack.analyzer import analyze
from nrsack.analyzer import results as R
from nrsack.analyzer.state import scoreboard as A
from support.paths import SAMPLES

# one protocol each, CMT paths, MPTCP subflows; TCP beside SCTP makes the TSN columns nullable
CAPTURES = ["sctp-nrsack-fig4.pcap", "tcp-nrsack-fig2.pcap", "cmt-nrsack.pcap", "mptcp-nrsack-fig2.pcap",
            "fsack-multihomed.pcap"]


def same(frame, expected):
    pd.testing.assert_frame_equal(frame, expected, check_exact=True)
    assert list(frame.dtypes) == list(expected.dtypes)


@pytest.mark.parametrize("name", CAPTURES)
def test_stacked_tables_are_the_entries_stacked(name):
    analysis = analyze(SAMPLES / name)
    assert analysis.rtxq_columns is not None and analysis.blocking_columns is not None  # the stacked path ran
    entries = list(analysis.all_entries())
    assert len(analysis.rtxq) > 0
    same(analysis.rtxq, A.rtxq_frame(entries))
    same(analysis.blocking, A.blocking_frame(entries))
    for entry in entries:  # views of the stacked rows, as finish() would have kept them
        assert set(entry.rtxq_columns) >= set(A.RTXQ_COLUMNS)
        assert set(entry.blocking_columns) == set(A.BLOCKING_COLUMNS)


def test_mixed_protocols_make_nullable_tsn_columns():
    """Entries of several protocols: the TSN columns NA on the TCP rows, 0 beneath, as _stack makes them."""
    stacked = R.StackedColumns(4)
    tcp = {"time_ns": np.array([1, 2], np.int64)}
    sctp = {"time_ns": np.array([3, 4, 5], np.int64), "rtxq_sack_tsns": np.array([7, 8, 9], np.int64)}
    stacked.sink("0a")(tcp)
    stacked.sink("1a")(sctp)  # grows past capacity 4
    cols = stacked.stacked(["0a", "1a"])
    assert cols["time_ns"].tolist() == [1, 2, 3, 4, 5]
    tsns = cols["rtxq_sack_tsns"]
    assert isinstance(tsns, pd.arrays.IntegerArray)
    assert tsns.isna().tolist() == [True, True, False, False, False]
    assert tsns.to_numpy(na_value=-1).tolist() == [-1, -1, 7, 8, 9]
    assert tsns._data[:2].tolist() == [0, 0]
    assert list(cols["flow"]) == ["0a", "0a", "1a", "1a", "1a"]


def test_an_entry_without_rows_leaves_the_stacking_to_read_time():
    """An entry without RtxQ rows makes every column nullable in _stack: the stacked columns step aside (None)."""
    stacked = R.StackedColumns(8)
    stacked.sink("0a")({"time_ns": np.array([1], np.int64)})
    stacked.sink("0b")
    assert stacked.stacked(["0a", "0b"]) is None
    assert stacked.entry_columns("0b") == {}
    blocking = R.StackedColumns(8, A.NO_INTERVALS)
    blocking.sink("0a")
    cols = blocking.stacked(["0a"])  # no rows anywhere: finish()'s empty columns
    assert set(cols) == {"flow", *A.BLOCKING_COLUMNS} and all(len(v) == 0 for v in cols.values())
    assert {k: v.dtype for k, v in blocking.entry_columns("0a").items()} == \
        {k: v.dtype for k, v in A.NO_INTERVALS.items()}
