"""SummaryStore (state/stores.py): the summary's pass-1 rows, narrowed on disk, read back as they went in."""

import numpy as np

from nrsack.analyzer.state.stores import ROW_DTYPE, SummaryStore


def _columns(n, rng, span):
    sack = rng.integers(0, span, n)
    return {"time_ns": 1_700_000_000 * 10**9 + np.sort(rng.integers(0, span, n)), "sack": sack,
            "nr": sack // 2, "acked": np.cumsum(rng.integers(0, 3000, n)), "sacked": rng.integers(0, 2, n) * sack,
            "flags": rng.integers(0, 1 << 11, n).astype(np.int32), "is_data": rng.integers(0, 2, n).astype(bool),
            "frame": np.arange(n, dtype=np.uint32), "freed": np.zeros(n, np.int64)}


def test_rows_come_back_as_finish_reads_them_narrow_or_wide():
    rng = np.random.default_rng(7)
    store = SummaryStore()
    # a piece whose values fit 32 bits above their least, one whose time spans more than 2^32 ns, an empty one
    pieces = [_columns(1000, rng, 1 << 20), _columns(500, rng, 1 << 40), _columns(0, rng, 1)]
    for piece in pieces:
        store.append("k", piece)
    store.flush()
    pieces.append(_columns(10, rng, 1 << 20))
    store.append("k", pieces[-1])  # still waiting: read from memory
    got = list(store.batches("k"))
    assert len(got) == 1  # 1510 rows: one batch
    rows = got[0]
    sent = {name: np.concatenate([piece[name] for piece in pieces]) for name in pieces[0]}
    for name in ("time_ns", "sack", "nr", "acked"):
        assert rows[name].dtype == np.int64 and np.array_equal(rows[name], sent[name])
    assert np.array_equal(rows["flags"], sent["flags"] & 3)
    assert np.array_equal(rows["is_data"], sent["is_data"])
    assert np.array_equal(rows["sacked"] > 0, sent["sacked"] > 0)
    assert list(store.batches("k")) == []  # taken
    store.close()


def test_batches_join_pieces_up_to_a_bound_in_order():
    rng = np.random.default_rng(9)
    store = SummaryStore()
    store.BATCH_ROWS = 250
    pieces = [_columns(100, rng, 1 << 20) for _ in range(7)]
    for piece in pieces:
        store.append("k", piece)
        store.flush()
    got = list(store.batches("k"))
    assert [len(rows["sack"]) for rows in got] == [300, 300, 100]
    assert np.array_equal(np.concatenate([rows["time_ns"] for rows in got]),
                          np.concatenate([piece["time_ns"] for piece in pieces]))
    store.close()


def test_a_forked_key_reads_the_same_rows_and_a_discarded_one_none():
    rng = np.random.default_rng(8)
    store = SummaryStore()
    store.append("a", _columns(100, rng, 1 << 20))
    store.flush()
    store.fork("a", "b")
    store.append("c", _columns(5, rng, 10))
    store.discard("c")
    a, b = list(store.batches("a")), list(store.batches("b"))
    assert len(a) == len(b) == 1 and np.array_equal(a[0]["sack"], b[0]["sack"])
    assert list(store.batches("c")) == []
    store.close()


def _records(columns):
    """The same rows as Board.feed_level writes them (ROW_DTYPE records)."""
    records = np.zeros(len(columns["time_ns"]), ROW_DTYPE)
    for name in columns:
        records[name] = columns[name]
    return records


def test_records_and_column_dicts_of_several_keys_come_back_per_key():
    # one chunk packs both kinds of part (Board.feed_level's records, a level's column dicts) of two keys,
    # two pieces a key; the next chunk swaps the kinds and its values lie above another base (time spans
    # more than 2^32 ns there: wide): each key's rows come back whole, in the order they went in
    rng = np.random.default_rng(11)
    store = SummaryStore()
    sent = {"a": [], "b": []}
    for chunk, span in enumerate((1 << 20, 1 << 36)):
        for key in ("a", "b", "a", "b"):
            columns = _columns(int(rng.integers(1, 300)), rng, span)
            columns["time_ns"] = columns["time_ns"] + chunk * 10**12
            sent[key].append(columns)
            store.append(key, _records(columns) if (key == "b") != bool(chunk) else columns)
        store.flush()
    for key, pieces in sent.items():
        got = list(store.batches(key))
        rows = {name: np.concatenate([batch[name] for batch in got]) for name in got[0]}
        whole = {name: np.concatenate([piece[name] for piece in pieces]) for name in pieces[0]}
        for name in ("time_ns", "sack", "nr", "acked"):
            assert rows[name].dtype == np.int64 and np.array_equal(rows[name], whole[name]), (key, name)
        assert np.array_equal(rows["flags"], whole["flags"] & 3)
        assert np.array_equal(rows["is_data"], whole["is_data"])
        assert np.array_equal(rows["sacked"] > 0, whole["sacked"] > 0)
    store.close()
