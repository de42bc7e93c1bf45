"""The SCTP paper's figures 2 (SACK) and 4 (NR-SACK): unordered transfer, send buffer of 8 TPDUs,
TSNs 11-18 sent, TSN 11 lost (Yilmaz, Ekiz, Natarajan, Amer, Leighton, Baker, Stewart 2010).

Timing (docs/decisions.md): captured at the sender, one-way delay 50 ms, back-to-back packets 1 ms
apart, the receiver acks every arrival at once, the sender reacts 0.1 ms after an ack.
"""

from . import notation_sctp
from .timeline import Step, Timeline

SENDER = "192.0.2.1:5000"
RECEIVER = "198.51.100.1:5001"

OPTIONS = {
    "tags": {5000: 0x0A0A0A0A, 5001: 0x0B0B0B0B},
    "initial_tsn": {5000: 11, 5001: 1},
    "payload": 1000,
    "unordered": True,
}


def _handshake(extensions):
    ext = " ext=" + extensions if extensions else ""
    return [
        (0.0, SENDER, "INIT" + ext),
        (100.0, RECEIVER, "INIT-ACK" + ext),
        (100.1, SENDER, "COOKIE-ECHO"),
        (200.1, RECEIVER, "COOKIE-ACK"),
    ]


def _first_window():
    """TSNs 11-18 leave back to back; 11 is lost on the way."""
    return [(300.0 + i, SENDER, "DATA %d" % tsn) for i, tsn in enumerate(range(11, 19))]


def _timeline(name, source, rows):
    steps = [Step(t, src, RECEIVER if src == SENDER else SENDER, label) for t, src, label in rows]
    return Timeline(name=name, source=source, notation=notation_sctp, steps=steps, options=OPTIONS)


def sctp_sack_fig2():
    rows = _handshake(None) + _first_window() + [
        # 12, 13, 14 arrive out of order: dupacks; the third one triggers fast retransmit of 11.
        (401.0, RECEIVER, "S:10;2-2"),
        (402.0, RECEIVER, "S:10;2-3"),
        (403.0, RECEIVER, "S:10;2-4"),
        (403.1, SENDER, "DATA 11 rtx"),
        # Dupacks during fast recovery: the full send buffer blocks new data.
        (404.0, RECEIVER, "S:10;2-5"),
        (405.0, RECEIVER, "S:10;2-6"),
        (406.0, RECEIVER, "S:10;2-7"),
        (407.0, RECEIVER, "S:10;2-8"),
        # The retransmission arrives at 453.1: S:18 ends fast recovery; cwnd stays 4: TSNs 19-22.
        (503.1, RECEIVER, "S:18"),
        (503.2, SENDER, "DATA 19"),
        (504.2, SENDER, "DATA 20"),
        (505.2, SENDER, "DATA 21"),
        (506.2, SENDER, "DATA 22"),
        (603.2, RECEIVER, "S:19"),
        (604.2, RECEIVER, "S:20"),
        (605.2, RECEIVER, "S:21"),
        (606.2, RECEIVER, "S:22"),
    ]
    return _timeline("sctp-sack-fig2", "Yilmaz et al. 2010, Fig. 2 (unordered SCTP transfer using SACKs)", rows)


def sctp_nrsack_fig4():
    rows = _handshake("0x10") + _first_window() + [
        # Each NR-SACK frees one TPDU; while cwnd (8) allows, new data follows at once.
        (401.0, RECEIVER, "N:10;2-2"),
        (401.1, SENDER, "DATA 19"),
        (402.0, RECEIVER, "N:10;2-3"),
        (402.1, SENDER, "DATA 20"),
        # Third dupack: cwnd 4, fast retransmit of 11; outstanding 7 > 4, so no new data.
        (403.0, RECEIVER, "N:10;2-4"),
        (403.1, SENDER, "DATA 11 rtx"),
        (404.0, RECEIVER, "N:10;2-5"),
        (405.0, RECEIVER, "N:10;2-6"),
        (406.0, RECEIVER, "N:10;2-7"),
        # 18 nr-acked: outstanding 11, 19, 20 = 3 < 4: TSN 21.
        (407.0, RECEIVER, "N:10;2-8"),
        (407.1, SENDER, "DATA 21"),
        # 19 and 20 arrive (451.1, 452.1): each frees one more and lets one new TSN go.
        (501.1, RECEIVER, "N:10;2-9"),
        (501.2, SENDER, "DATA 22"),
        (502.1, RECEIVER, "N:10;2-10"),
        (502.2, SENDER, "DATA 23"),
        # The retransmitted 11 arrives (453.1): N:20, cwnd 5, outstanding 21-23 = 3: TSNs 24, 25.
        (503.1, RECEIVER, "N:20"),
        (503.2, SENDER, "DATA 24"),
        (504.2, SENDER, "DATA 25"),
        (507.1, RECEIVER, "N:21"),
        (601.2, RECEIVER, "N:22"),
        (602.2, RECEIVER, "N:23"),
        (603.2, RECEIVER, "N:24"),
        (604.2, RECEIVER, "N:25"),
    ]
    return _timeline("sctp-nrsack-fig4", "Yilmaz et al. 2010, Fig. 4 (unordered SCTP transfer using NR-SACKs)", rows)


TIMELINES = [sctp_sack_fig2, sctp_nrsack_fig4]
