"""The pipeline's compiled passes over a chunk (state/_flows.c chunk_scan, flow_groups) against the numpy
they stand for: the same bounds and marks, the same order of rows (pipeline.py reads them as it read numpy's)."""

from pathlib import Path

import numpy as np
import pytest

from nrsack.analyzer import _native
from nrsack.analyzer.read import events as E
from nrsack.analyzer.state.pipeline import SCTP_ABORT, SCTP_SHUTDOWN_COMPLETE, grouped_order, live_groups

SAMPLES = Path(__file__).resolve().parent.parent / "sample-pcaps"


def numpy_groups(keys):
    order = grouped_order(keys)
    order = order[keys[order] >= 0]
    return order, np.flatnonzero(np.diff(keys[order], prepend=-1))


@pytest.mark.parametrize("span", [1, 8, 1000, 1 << 20, 1 << 30])
def test_flow_groups_orders_rows_as_a_stable_sort(span):
    rng = np.random.default_rng(span)
    for _ in range(200):
        n = int(rng.integers(0, 400))
        keys = (rng.integers(-2, span, n) + (int(rng.integers(0, 1 << 30)) if rng.integers(0, 2) else 0)).astype(np.int32)
        keys[keys < -2] = -1
        order, starts = live_groups(keys)  # flow_groups, or the sort where the keys span too many values
        expected = numpy_groups(keys)
        assert order.tolist() == expected[0].tolist() and starts.tolist() == expected[1].tolist()
        grouped = _native.flow_groups(keys)
        kept = keys[keys >= 0]
        if len(kept) and int(kept.max()) - int(kept.min()) + 1 > n + 65536:
            assert grouped is None  # (the counting sort's table would outgrow the rows)
        else:
            assert grouped is not None


def test_flow_groups_refuses_keys_of_another_width():
    with pytest.raises(ValueError):
        _native.flow_groups(np.zeros(4, np.int64))


# (the lab's captures end with FINs, an SCTP SHUTDOWN-COMPLETE; the figures' have neither)
@pytest.mark.parametrize("name", ["tcp-sack-fig1.pcap", "cmt-nrsack.pcap", "lab/linux-mptcp-cubic-32k.pcap",
                                  "lab/linux-tcp-cubic-16k.pcap", "lab/usrsctp-sack-8k.pcap"])
def test_chunk_scan_says_what_numpy_finds(name):
    ev = E.read_capture(SAMPLES / name).ev
    for piece in (ev, ev[: len(ev) // 2], ev[len(ev) // 2:]):
        piece = np.ascontiguousarray(piece)
        least, greatest, last_frame, marks = _native.chunk_scan(piece)
        assert (least, greatest, last_frame) == (int(piece["time_ns"].min()), int(piece["time_ns"].max()),
                                                 int(piece["frame"].max()))
        sctp_end = ((piece["proto"] == E.PROTO_SCTP) & np.isin(piece["chunk"], (SCTP_ABORT, SCTP_SHUTDOWN_COMPLETE))).any()
        tcp_end = ((piece["proto"] == E.PROTO_TCP) & ((piece["tcp_flags"] & (E.TCP_FIN | E.TCP_RST)) != 0)).any()
        assert marks == int(sctp_end) | 2 * int(tcp_end)
    assert _native.chunk_scan(np.ascontiguousarray(ev[:0])) == (None, None, None, 0)
