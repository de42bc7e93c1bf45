"""_native.conn_present, conn_flows, handshake_rows (state/_flows.c): FlowTable.assign's per-event flow and side, _refine's rows."""

import numpy as np
import pytest

from nrsack.analyzer import _native
from nrsack.analyzer.read import events as E
from support.paths import SAMPLES


@pytest.mark.parametrize("capture", ["cmt-nrsack.pcap", "mptcp-nrsack-fig2.pcap", "tcp-nrsack-fig2.pcap"])
def test_each_event_gets_its_conns_flow_and_its_side_flipped_where_the_conn_is(capture):
    cap = E.read_capture(SAMPLES / capture)
    n = len(cap.conns)
    rng = np.random.default_rng(5)
    conn_flow = rng.integers(-1, 50, n).astype(np.int32)
    conn_flip = rng.integers(0, 2, n).astype(np.int8)
    flow, side = _native.conn_flows(cap.ev, conn_flow, conn_flip)
    assert np.array_equal(np.frombuffer(flow, np.int32), conn_flow[cap.ev["conn"]])
    assert np.array_equal(np.frombuffer(side, np.int8), cap.ev["dir"].astype(np.int8) ^ conn_flip[cap.ev["conn"]])
    present = np.frombuffer(_native.conn_present(cap.ev, n + 3), bool)
    assert np.array_equal(present, np.bincount(cap.ev["conn"], minlength=n + 3) > 0)


def test_a_conn_out_of_range_is_an_error_not_a_read_past_the_table():
    cap = E.read_capture(SAMPLES / "cmt-nrsack.pcap")
    n = len(cap.conns)
    with pytest.raises(IndexError, match="conn"):
        _native.conn_flows(cap.ev, np.zeros(n - 1, np.int32), np.zeros(n - 1, np.int8))
    with pytest.raises(IndexError, match="conn"):
        _native.conn_present(cap.ev, n - 1)
    with pytest.raises(ValueError):  # the two tables of different lengths
        _native.conn_flows(cap.ev, np.zeros(n, np.int32), np.zeros(n + 1, np.int8))


@pytest.mark.parametrize("capture", ["cmt-nrsack.pcap", "mptcp-nrsack-fig2.pcap", "tcp-nrsack-fig2.pcap"])
def test_handshake_rows_are_the_init_cookie_syn_and_mp_capable_events(capture):
    ev = E.read_capture(SAMPLES / capture).ev
    rows = np.frombuffer(_native.handshake_rows(ev), np.int64)
    expected = np.flatnonzero(np.isin(ev["chunk"], (1, 2, 10)) | ((ev["tcp_flags"] & E.TCP_SYN) != 0)
                              | ((ev["flags"] & E.MP_CAPABLE) != 0))
    assert len(expected) and np.array_equal(rows, expected)
