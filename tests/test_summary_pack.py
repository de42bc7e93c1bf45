"""SummaryStore's compiled packing (state/_stores.c summary_pack) against the rule it packs by, written
here with numpy: the chunk's pieces joined in order, each of time, sack, nr and acked as uint32 above its
least value when the chunk's values span less than 2^32, else as int64 (base 0), then the bits byte
(flags' NEW and GAP, DATA, SACKED). Pass 2 reads these bytes back, so any difference would change figures."""

import numpy as np
import pytest

from nrsack.analyzer import _native
from nrsack.analyzer.state.scoreboard import ROW_DTYPE
from nrsack.analyzer.state.stores import SummaryStore

COLUMNS, KEPT = SummaryStore.COLUMNS, SummaryStore.KEPT


def reference(pieces):
    """-> (packed bytes, bases, dtype) by the rule, with numpy."""
    whole = {name: np.concatenate([np.asarray(piece[name]) for piece in pieces]) for name in KEPT}
    narrowed = []
    for name in COLUMNS:
        values = whole[name].astype(np.int64)
        base = int(values.min()) if len(values) else 0
        if len(values) and int(values.max()) - base < 1 << 32:
            narrowed.append((base, (values - base).astype(np.uint32)))
        else:
            narrowed.append((0, values))
    bits = ((whole["flags"] & 3).astype(np.uint8) | (whole["is_data"].astype(np.uint8) << 2)
            | ((whole["sacked"] > 0).astype(np.uint8) << 3))
    dtype = np.dtype([(name, values.dtype) for name, (_, values) in zip(COLUMNS, narrowed)] + [("bits", np.uint8)])
    packed = np.empty(len(bits), dtype)
    for name, (_, values) in zip(COLUMNS, narrowed):
        packed[name] = values
    packed["bits"] = bits
    return packed.tobytes(), tuple(base for base, _ in narrowed), dtype


def compiled(pieces):
    given = [piece if isinstance(piece, np.ndarray) else
             tuple(np.ascontiguousarray(piece[name], dtype) for name, dtype in zip(KEPT, SummaryStore.KEPT_DTYPES))
             for piece in pieces]
    packed, bases, wide = _native.summary_pack(given)
    dtype = np.dtype([(name, np.int64 if whole else np.uint32) for name, whole in zip(COLUMNS, wide)]
                     + [("bits", np.uint8)])
    return packed, tuple(bases), dtype


def random_pieces(rng, span):
    pieces = []
    for _ in range(rng.integers(1, 5)):
        n = int(rng.integers(0, 40))
        columns = {name: rng.integers(-(span // 2), span // 2, n, dtype=np.int64) for name in COLUMNS}
        columns.update(flags=rng.integers(-2**31, 2**31, n).astype(np.int32), is_data=rng.integers(0, 2, n).astype(bool),
                       sacked=rng.integers(-2, 3, n))
        if rng.integers(0, 2):  # as Board.feed_level's records
            records = np.zeros(n, ROW_DTYPE)
            for name, values in columns.items():
                records[name] = values
            pieces.append(records)
        else:
            pieces.append(columns)
    return pieces


@pytest.mark.parametrize("span", [10, (1 << 32) - 1, 1 << 32, 1 << 33, 1 << 62])
def test_summary_pack_packs_as_the_rule_says(span):
    rng = np.random.default_rng(span % 1000)
    for _ in range(60):
        pieces = random_pieces(rng, span)
        assert compiled(pieces) == reference(pieces)


def test_summary_pack_at_the_edge_of_uint32():
    """A span of 2^32 - 1 still fits uint32 above the base; 2^32 needs int64; extreme int64 values too."""
    low = -(1 << 63)
    for values, wide in (([5, 5 + (1 << 32) - 1], False), ([5, 5 + (1 << 32)], True), ([low, (1 << 63) - 1], True),
                         ([low, low + 7], False)):
        piece = {name: np.array(values, np.int64) for name in COLUMNS}
        piece.update(flags=np.array([3, 1], np.int32), is_data=np.array([True, False]), sacked=np.array([0, 9]))
        packed, bases, dtype = compiled([piece])
        assert (packed, bases, dtype) == reference([piece])
        assert (dtype["time_ns"] == np.int64) == wide


def test_summary_pack_refuses_a_piece_of_the_wrong_shape():
    with pytest.raises(ValueError):
        _native.summary_pack([(np.zeros(3, np.int64),) * 3])
    with pytest.raises(ValueError):  # a column shorter than the first
        _native.summary_pack([tuple(np.zeros(3 if k == 0 else 2, dtype) for k, dtype in enumerate(SummaryStore.KEPT_DTYPES))])


@pytest.mark.parametrize("span", [10, 1 << 33])
def test_summary_unpack_reads_back_what_was_packed(span):
    """Several chunks' pieces of one layout, each with its bases, read back as pass 2 reads them: every column's
    values as they were, and the bits."""
    rng = np.random.default_rng(span % 997)
    for _ in range(40):
        chunks = [random_pieces(rng, span) for _ in range(int(rng.integers(1, 4)))]
        packed = [compiled(pieces) for pieces in chunks]
        if len({dtype for _, _, dtype in packed}) != 1:
            continue  # (the store joins pieces of one layout only)
        counts = np.array([sum(len(piece["time_ns"]) for piece in pieces) for pieces in chunks], np.int64)
        columns, bits = _native.summary_unpack(b"".join(data for data, _, _ in packed),
                                               tuple(int(packed[0][2][name] == np.int64) for name in COLUMNS),
                                               np.array([bases for _, bases, _ in packed], np.int64), counts)
        columns = np.frombuffer(columns, np.int64).reshape(len(COLUMNS), -1)
        every = [piece for pieces in chunks for piece in pieces]
        for k, name in enumerate(COLUMNS):
            assert columns[k].tolist() == np.concatenate([np.asarray(piece[name]) for piece in every]).tolist()
        expected = np.frombuffer(reference(every)[0], reference(every)[2])["bits"] if len(every) else []
        assert np.frombuffer(bits, np.uint8).tolist() == list(expected)


def test_summary_unpack_refuses_bytes_that_do_not_fit_the_counts():
    with pytest.raises(ValueError):
        _native.summary_unpack(b"\0" * 16, (0, 0, 0, 0), np.zeros(4, np.int64), np.array([1], np.int64))
