"""The MPTCP paper's figures 1 (no NR-SACK) and 2 (NR-SACK): two subflows, MSS 1400, MPTCP send
buffer 11200 bytes (8 pieces), cwnd 4 on each subflow, segment S:7001 (DSN 14001) of subflow 1 lost
(Yang, Amer 2013).

The server sends (as in the paper's test bed); the client is multi-homed and opens subflow 2 from
its second address with MP_JOIN. Captured at the server. One-way delay 50 ms on both paths, segments
of one subflow 1 ms apart, subflow 2's 0.5 ms after subflow 1's (the paths have their own
bottlenecks), the receiver acks every arrival at once, the sender reacts 0.1 ms after an ack.
Labels keep the figure's relative numbers (S, A, DSN, DA); the wire adds the ISNs and IDSNs.
"""

from . import notation_tcp
from .timeline import Step, Timeline

SERVER = "198.51.100.10:5001"
CLIENT_1 = "192.0.2.1:40001"  # wired: subflow 1
CLIENT_2 = "203.0.113.1:40002"  # wireless: subflow 2

CLIENT_KEY = 0x1A2B3C4D5E6F7081
SERVER_KEY = 0x8877665544332211

OPTIONS = {
    "isn": {(CLIENT_1, SERVER): 3000000000, (SERVER, CLIENT_1): 1000000000,
            (CLIENT_2, SERVER): 3500000000, (SERVER, CLIENT_2): 1500000000},
    "payload": 1400,
    "keys": {CLIENT_1: CLIENT_KEY, CLIENT_2: CLIENT_KEY, SERVER: SERVER_KEY},
    "nonces": {CLIENT_2: 0x11223344, SERVER: 0x55667788},
    "address_ids": {CLIENT_2: 1},
}

# DSN of the i-th 1400-byte piece of the figure (pieces 0-7 fill the first send buffer).
def _dsn(i):
    return 14001 + 1400 * i


def _handshake(nrsack):
    option = " nrsack=0x02" if nrsack else ""
    return [
        (0.0, CLIENT_1, SERVER, "SYN MPC" + option),
        (0.1, SERVER, CLIENT_1, "SYN-ACK MPC" + option),
        (100.1, CLIENT_1, SERVER, "ACK MPC"),
        # The client opens subflow 2 as soon as the connection is up (its MP_JOIN leaves at 50.2).
        (100.2, CLIENT_2, SERVER, "SYN JOIN"),
        (100.3, SERVER, CLIENT_2, "SYN-ACK JOIN"),
        (200.3, CLIENT_2, SERVER, "ACK JOIN"),
    ]


def _first_window():
    """Pieces 0-3 on subflow 1 (piece 0 is lost), 4-7 on subflow 2, both at cwnd 4."""
    rows = []
    for i in range(4):
        rows.append((300.0 + i, SERVER, CLIENT_1, "S:%d DSN:%d" % (7001 + 1400 * i, _dsn(i))))
        rows.append((300.5 + i, SERVER, CLIENT_2, "S:%d DSN:%d" % (25001 + 1400 * i, _dsn(4 + i))))
    return rows


def _timeline(name, source, rows):
    steps = [Step(t, src, dst, label) for t, src, dst, label in rows]
    return Timeline(name=name, source=source, notation=notation_tcp, steps=steps, options=OPTIONS)


def mptcp_sack_fig1():
    rows = _handshake(False) + _first_window() + [
        # DSNs 19601-25200 reach the receiver but DATA ACK stays at 14001: the buffer stays full.
        (400.5, CLIENT_2, SERVER, "A:26401 DA:14001"),
        (401.0, CLIENT_1, SERVER, "A:7001 DA:14001 SACK:8401-9801"),
        (401.5, CLIENT_2, SERVER, "A:27801 DA:14001"),
        (402.0, CLIENT_1, SERVER, "A:7001 DA:14001 SACK:8401-11201"),
        (402.5, CLIENT_2, SERVER, "A:29201 DA:14001"),
        (403.0, CLIENT_1, SERVER, "A:7001 DA:14001 SACK:8401-12601"),
        (403.1, SERVER, CLIENT_1, "S:7001 DSN:14001 rtx"),
        (403.5, CLIENT_2, SERVER, "A:30601 DA:14001"),
        # The retransmission arrives at 453.1: DATA ACK 25201 empties the buffer. Subflow 1 (cwnd
        # halved to 2) takes two pieces, subflow 2 (cwnd 4) four.
        (503.1, CLIENT_1, SERVER, "A:12601 DA:25201"),
        (503.2, SERVER, CLIENT_1, "S:12601 DSN:%d" % _dsn(8)),
        (503.7, SERVER, CLIENT_2, "S:30601 DSN:%d" % _dsn(10)),
        (504.2, SERVER, CLIENT_1, "S:14001 DSN:%d" % _dsn(9)),
        (504.7, SERVER, CLIENT_2, "S:32001 DSN:%d" % _dsn(11)),
        (505.7, SERVER, CLIENT_2, "S:33401 DSN:%d" % _dsn(12)),
        (506.7, SERVER, CLIENT_2, "S:34801 DSN:%d" % _dsn(13)),
        (603.2, CLIENT_1, SERVER, "A:14001 DA:26601"),
        (603.3, SERVER, CLIENT_1, "S:15401 DSN:%d" % _dsn(14)),
        # DSN 28001 arrived before 26601: out of order at the data level, which plain MPTCP cannot say.
        (603.7, CLIENT_2, SERVER, "A:32001 DA:26601"),
        (603.8, SERVER, CLIENT_2, "S:36201 DSN:%d" % _dsn(15)),
        (604.2, CLIENT_1, SERVER, "A:15401 DA:29401"),
        (604.7, CLIENT_2, SERVER, "A:33401 DA:30801"),
        (605.7, CLIENT_2, SERVER, "A:34801 DA:32201"),
        (606.7, CLIENT_2, SERVER, "A:36201 DA:33601"),
        (703.3, CLIENT_1, SERVER, "A:16801 DA:35001"),
        (703.8, CLIENT_2, SERVER, "A:37601 DA:36401"),
    ]
    return _timeline("mptcp-sack-fig1", "Yang, Amer 2013, Fig. 1 (unordered MPTCP data transfer)", rows)


def mptcp_nrsack_fig2():
    rows = _handshake(True) + _first_window() + [
        # The first ack on subflow 2 NR-acks DSNs 19601-21000 (14001 + 5600 .. 14001 + 7000 - 1):
        # the piece is freed and new data goes on subflow 2, which has room in its cwnd.
        (400.5, CLIENT_2, SERVER, "A:26401 DA:14001 NR:5600-7000"),
        (400.6, SERVER, CLIENT_2, "S:30601 DSN:%d" % _dsn(8)),
        (401.0, CLIENT_1, SERVER, "A:7001 DA:14001 SACK:8401-9801 NR:5600-7000"),
        (401.5, CLIENT_2, SERVER, "A:27801 DA:14001 NR:5600-8400"),
        (401.6, SERVER, CLIENT_2, "S:32001 DSN:%d" % _dsn(9)),
        (402.0, CLIENT_1, SERVER, "A:7001 DA:14001 SACK:8401-11201 NR:5600-8400"),
        (402.5, CLIENT_2, SERVER, "A:29201 DA:14001 NR:5600-9800"),
        (402.6, SERVER, CLIENT_2, "S:33401 DSN:%d" % _dsn(10)),
        (403.0, CLIENT_1, SERVER, "A:7001 DA:14001 SACK:8401-12601 NR:5600-9800"),
        (403.1, SERVER, CLIENT_1, "S:7001 DSN:14001 rtx"),
        (403.5, CLIENT_2, SERVER, "A:30601 DA:14001 NR:5600-11200"),
        (403.6, SERVER, CLIENT_2, "S:34801 DSN:%d" % _dsn(11)),
        # The new pieces reach the receiver before the retransmission does: still NR-acked.
        (500.6, CLIENT_2, SERVER, "A:32001 DA:14001 NR:5600-12600"),
        (500.7, SERVER, CLIENT_2, "S:36201 DSN:%d" % _dsn(12)),
        (501.6, CLIENT_2, SERVER, "A:33401 DA:14001 NR:5600-14000"),
        (501.7, SERVER, CLIENT_2, "S:37601 DSN:%d" % _dsn(13)),
        (502.6, CLIENT_2, SERVER, "A:34801 DA:14001 NR:5600-15400"),
        (502.7, SERVER, CLIENT_2, "S:39001 DSN:%d" % _dsn(14)),
        # The retransmission arrives at 453.1: DATA ACK 29401; the last piece goes on subflow 1.
        (503.1, CLIENT_1, SERVER, "A:12601 DA:29401"),
        (503.2, SERVER, CLIENT_1, "S:12601 DSN:%d" % _dsn(15)),
        (503.6, CLIENT_2, SERVER, "A:36201 DA:30801"),
        (600.7, CLIENT_2, SERVER, "A:37601 DA:32201"),
        (601.7, CLIENT_2, SERVER, "A:39001 DA:33601"),
        (602.7, CLIENT_2, SERVER, "A:40401 DA:35001"),
        (603.2, CLIENT_1, SERVER, "A:14001 DA:36401"),
    ]
    return _timeline("mptcp-nrsack-fig2", "Yang, Amer 2013, Fig. 2 (unordered MPTCP data transfer with NR-SACKs)", rows)


TIMELINES = [mptcp_sack_fig1, mptcp_nrsack_fig2]
