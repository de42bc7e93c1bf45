"""CMT-SCTP over two paths with SACKs and with NR-SACKs (Yilmaz et al. 2010, section 2.3 and the CMT
experiments of section 5.6): one send buffer of 8 TPDUs for both paths, cwnd 4 on each path, TSN 12
(the first on path 2) lost; unordered transfer of TSNs 11-25.

CMT as in Iyengar et al. 2006: new TSNs go to whichever path has cwnd room, in time order (path 2's
packets 0.5 ms after path 1's: the paths have their own bottlenecks); split fast retransmit (a
missing report for TSN t only when a later TSN sent on t's path is acked); the retransmission goes
on the path with the larger ssthresh (RTX-SSTHRESH), path 1, while path 2's cwnd halves to 2; the
receiver acks every arrival at once to the address the DATA came from. Both paths have a one-way
delay of 50 ms; captured at the sender; the sender reacts 0.1 ms after an ack.
"""

from . import notation_sctp
from .timeline import Step, Timeline

PATH_1 = ("192.0.2.1:5000", "198.51.100.1:5001")
PATH_2 = ("192.0.2.2:5000", "198.51.100.2:5001")

OPTIONS = {
    "tags": {5000: 0x3C3C3C3C, 5001: 0x4D4D4D4D},
    "initial_tsn": {5000: 11, 5001: 1},
    "addresses": {5000: ["192.0.2.1", "192.0.2.2"], 5001: ["198.51.100.1", "198.51.100.2"]},
    "payload": 1000,
    "unordered": True,
}


def _data(t, path, tsn, rtx=False):
    return (t, path, "DATA %d%s" % (tsn, " rtx" if rtx else ""))


def _ack(t, path, label):
    return (t, path[::-1], label)


def _handshake(extensions):
    ext = " ext=" + extensions if extensions else ""
    return [
        (0.0, PATH_1, "INIT" + ext),
        (100.0, PATH_1[::-1], "INIT-ACK" + ext),
        (100.1, PATH_1, "COOKIE-ECHO"),
        (200.1, PATH_1[::-1], "COOKIE-ACK"),
    ]


def _first_window():
    """TSNs 11-18 alternate between the paths (cwnd 4 each); 12, the first on path 2, is lost."""
    return [_data(300.0 + 0.5 * i, PATH_1 if i % 2 == 0 else PATH_2, 11 + i) for i in range(8)]


def _timeline(name, source, rows):
    steps = [Step(t, path[0], path[1], label) for t, path, label in rows]
    return Timeline(name=name, source=source, notation=notation_sctp, steps=steps, options=OPTIONS)


def cmt_sack():
    rows = _handshake(None) + _first_window() + [
        _ack(400.0, PATH_1, "S:11"),
        _data(400.1, PATH_1, 19),
        # The buffer is full (12-19): every further SACK only gap-acks.
        _ack(401.0, PATH_1, "S:11;2-2"),
        _ack(401.5, PATH_2, "S:11;2-3"),
        _ack(402.0, PATH_1, "S:11;2-4"),
        _ack(402.5, PATH_2, "S:11;2-5"),
        _ack(403.0, PATH_1, "S:11;2-6"),
        # 14, 16, 18 (path 2, sent after 12) acked: third missing report, 12 goes again on path 1.
        _ack(403.5, PATH_2, "S:11;2-7"),
        _data(403.6, PATH_1, 12, rtx=True),
        _ack(500.1, PATH_1, "S:11;2-8"),
        # The retransmission arrives at 453.6: S:19 empties the buffer; cwnd 4 + 2 lets 6 TSNs go.
        _ack(503.6, PATH_1, "S:19"),
        _data(503.7, PATH_1, 20),
        _data(504.2, PATH_2, 21),
        _data(504.7, PATH_1, 22),
        _data(505.2, PATH_2, 23),
        _data(505.7, PATH_1, 24),
        _data(506.7, PATH_1, 25),
        _ack(603.7, PATH_1, "S:20"),
        _ack(604.2, PATH_2, "S:21"),
        _ack(604.7, PATH_1, "S:22"),
        _ack(605.2, PATH_2, "S:23"),
        _ack(605.7, PATH_1, "S:24"),
        _ack(606.7, PATH_1, "S:25"),
    ]
    return _timeline("cmt-sack", "Yilmaz et al. 2010, section 2.3 (CMT using SACKs), one loss on path 2", rows)


def cmt_nrsack():
    rows = _handshake("0x10") + _first_window() + [
        _ack(400.0, PATH_1, "N:11"),
        _data(400.1, PATH_1, 19),
        # Each NR-SACK frees one TSN; new data goes to the path the ack came from.
        _ack(401.0, PATH_1, "N:11;2-2"),
        _data(401.1, PATH_1, 20),
        _ack(401.5, PATH_2, "N:11;2-3"),
        _data(401.6, PATH_2, 21),
        _ack(402.0, PATH_1, "N:11;2-4"),
        _data(402.1, PATH_1, 22),
        _ack(402.5, PATH_2, "N:11;2-5"),
        _data(402.6, PATH_2, 23),
        _ack(403.0, PATH_1, "N:11;2-6"),
        _data(403.1, PATH_1, 24),
        # Third missing report: 12 again on path 1; path 2 (cwnd 2) and path 1 (4 out) are full.
        _ack(403.5, PATH_2, "N:11;2-7"),
        _data(403.6, PATH_1, 12, rtx=True),
        _ack(500.1, PATH_1, "N:11;2-8"),
        _ack(501.1, PATH_1, "N:11;2-9"),
        _data(501.2, PATH_1, 25),
        _ack(501.6, PATH_2, "N:11;2-10"),
        _ack(502.1, PATH_1, "N:11;2-11"),
        _ack(502.6, PATH_2, "N:11;2-12"),
        _ack(503.1, PATH_1, "N:11;2-13"),
        # The retransmission arrives at 453.6, after 24: N:24.
        _ack(503.6, PATH_1, "N:24"),
        _ack(601.2, PATH_1, "N:25"),
    ]
    return _timeline("cmt-nrsack", "Yilmaz et al. 2010, section 2.3 / 3 (CMT using NR-SACKs), one loss on path 2", rows)


TIMELINES = [cmt_sack, cmt_nrsack]
