"""The TCP paper's figures 1 (SACK) and 2 (NR-SACK): send buffer of 4 TCP-PDUs, receive buffer of
7, PDU 2 lost (Yang, Amer, Trang, Lochin 2017).

Timing (docs/decisions.md): captured at the sender, one-way delay 50 ms, back-to-back segments 1 ms
apart, the receiver acks every arrival at once, the sender reacts 0.1 ms after an ack. Only the two
buffers limit the sender (the figure names no cwnd); fast retransmit on the third duplicate ack.
"""

from . import notation_tcp
from .timeline import Step, Timeline

SENDER = "192.0.2.1:40000"
RECEIVER = "198.51.100.1:5001"

OPTIONS = {
    "isn": {(SENDER, RECEIVER): 100000, (RECEIVER, SENDER): 500000},
    "payload": 1000,
    # The receive buffer of 7 TCP-PDUs is the receiver's window; in-order data is consumed at once.
    "window": {SENDER: 65535, RECEIVER: 7000},
}


def _handshake(nrsack):
    option = " nrsack=0x00" if nrsack else ""
    return [
        (0.0, SENDER, "SYN" + option),
        (100.0, RECEIVER, "SYN-ACK" + option),
        (100.1, SENDER, "ACK"),
    ]


def _first_window():
    """PDUs 1-4 fill the send buffer; PDU 2 is lost on the way."""
    return [(200.0 + i, SENDER, "DATA %d" % k) for i, k in enumerate(range(1, 5))]


def _timeline(name, source, rows):
    steps = [Step(t, src, RECEIVER if src == SENDER else SENDER, label) for t, src, label in rows]
    return Timeline(name=name, source=source, notation=notation_tcp, steps=steps, options=OPTIONS)


def tcp_sack_fig1():
    rows = _handshake(False) + _first_window() + [
        (300.0, RECEIVER, "ACK 1"),
        (300.1, SENDER, "DATA 5"),
        # Half the buffer holds PDUs the receiver has: blocked until 2 is cum-acked.
        (302.0, RECEIVER, "ACK 1 SACK 3-3"),
        (303.0, RECEIVER, "ACK 1 SACK 3-4"),
        (400.1, RECEIVER, "ACK 1 SACK 3-5"),
        (400.2, SENDER, "DATA 2 rtx"),
        # The retransmission arrives at 450.2: ACK 5 empties the buffer; 6-9 refill it.
        (500.2, RECEIVER, "ACK 5"),
        (500.3, SENDER, "DATA 6"),
        (501.3, SENDER, "DATA 7"),
        (502.3, SENDER, "DATA 8"),
        (503.3, SENDER, "DATA 9"),
        (600.3, RECEIVER, "ACK 6"),
        (600.4, SENDER, "DATA 10"),
        (601.3, RECEIVER, "ACK 7"),
        (601.4, SENDER, "DATA 11"),
        (602.3, RECEIVER, "ACK 8"),
        (602.4, SENDER, "DATA 12"),
        (603.3, RECEIVER, "ACK 9"),
        (700.4, RECEIVER, "ACK 10"),
        (701.4, RECEIVER, "ACK 11"),
        (702.4, RECEIVER, "ACK 12"),
    ]
    return _timeline("tcp-sack-fig1", "Yang, Amer, Trang, Lochin 2017, Fig. 1 (TCP transfer w/o NR-SACK)", rows)


def tcp_nrsack_fig2():
    rows = _handshake(True) + _first_window() + [
        (300.0, RECEIVER, "ACK 1"),
        (300.1, SENDER, "DATA 5"),
        # Each NR-SACK frees one PDU: new data follows at once.
        (302.0, RECEIVER, "ACK 1 NR 3-3"),
        (302.1, SENDER, "DATA 6"),
        (303.0, RECEIVER, "ACK 1 NR 3-4"),
        (303.1, SENDER, "DATA 7"),
        # Third duplicate ack: fast retransmit of 2; 5 is freed, so 8 follows back to back.
        (400.1, RECEIVER, "ACK 1 NR 3-5"),
        (400.2, SENDER, "DATA 2 rtx"),
        (401.2, SENDER, "DATA 8"),
        # The receive window (7 PDUs above ACK 1) ends at PDU 8: the freed space waits.
        (402.1, RECEIVER, "ACK 1 NR 3-6"),
        (403.1, RECEIVER, "ACK 1 NR 3-7"),
        # The retransmission arrives at 450.2, PDU 8 at 451.2.
        (500.2, RECEIVER, "ACK 7"),
        (500.3, SENDER, "DATA 9"),
        (501.2, RECEIVER, "ACK 8"),
        (501.3, SENDER, "DATA 10"),
        (502.3, SENDER, "DATA 11"),
        (503.3, SENDER, "DATA 12"),
        (600.3, RECEIVER, "ACK 9"),
        (601.3, RECEIVER, "ACK 10"),
        (602.3, RECEIVER, "ACK 11"),
        (603.3, RECEIVER, "ACK 12"),
    ]
    return _timeline("tcp-nrsack-fig2", "Yang, Amer, Trang, Lochin 2017, Fig. 2 (TCP transfer with NR-SACK)", rows)


TIMELINES = [tcp_sack_fig1, tcp_nrsack_fig2]
