"""The Fast SACK paper's figures 1, 2 and 4 on a multi-homed association: FSACK-INIT on the primary
path, FSACK-ACK on every return path with the same timestamp, FSACK-COMPLETE naming the fastest,
then SACKs on that path (Cui, Koh, Lee 2010).

Two networks join the hosts, as in the paper's figure 5: the upper one (primary path, A1 <-> B1)
with a one-way delay of 45 ms in both directions (the paper's value), the lower one (A2 <-> B2) with
20 ms (the paper varies it; below 45 ms the FSACK path moves to it). Captured at the sender; packets
1 ms apart, the receiver answers at once, the sender reacts 0.1 ms after an arrival.
"""

from . import notation_sctp
from .timeline import DEFAULT_EPOCH_S, Step, Timeline

SENDER_1, SENDER_2 = "192.0.2.1:5000", "192.0.2.2:5000"
RECEIVER_1, RECEIVER_2 = "198.51.100.1:5001", "198.51.100.2:5001"

OPTIONS = {
    "tags": {5000: 0x1A1A1A1A, 5001: 0x2B2B2B2B},
    "initial_tsn": {5000: 1, 5001: 1},
    "addresses": {5000: ["192.0.2.1", "192.0.2.2"], 5001: ["198.51.100.1", "198.51.100.2"]},
    # ns-2's sctp test suite, used by the paper: 1468-byte data chunks.
    "payload": 1468,
    "unordered": False,
}


def sender_clock_ms(t_ms):
    """The FSACK timestamp: the sender's clock in ms (mod 2^32); the capture is taken at the
    sender, so it is the capture time, and arrival minus timestamp is the FSACK RTT."""
    return (DEFAULT_EPOCH_S * 1000 + int(t_ms)) % 2**32


def handshake():
    """INIT / INIT-ACK on the primary path (45 ms each way), both listing 0xA0 and two addresses."""
    return [
        (0.0, SENDER_1, RECEIVER_1, "INIT ext=0xA0"),
        (90.0, RECEIVER_1, SENDER_1, "INIT-ACK ext=0xA0"),
        (90.1, SENDER_1, RECEIVER_1, "COOKIE-ECHO"),
        (180.1, RECEIVER_1, SENDER_1, "COOKIE-ACK"),
    ]


def fsack_path_setup(t_ms=200.0):
    """Steps 1-3: FSACK-INIT at t on the primary path reaches B 45 ms later; B's FSACK-ACKs arrive
    20 ms later over the lower network and 45 ms later over the upper one; the first designates B2."""
    ts = sender_clock_ms(t_ms)
    return [
        (t_ms, SENDER_1, RECEIVER_1, "FSACK-INIT ts=%d" % ts),
        (t_ms + 65.0, RECEIVER_2, SENDER_2, "FSACK-ACK ts=%d" % ts),
        (t_ms + 65.1, SENDER_1, RECEIVER_1, "FSACK-COMPLETE 198.51.100.2"),
        (t_ms + 90.0, RECEIVER_1, SENDER_1, "FSACK-ACK ts=%d" % ts),
    ]


def timeline(name, source, rows, **options):
    steps = [Step(t, src, dst, label) for t, src, dst, label in rows]
    return Timeline(name=name, source=source, notation=notation_sctp, steps=steps,
                    options=dict(OPTIONS, **options))


def fsack_multihomed():
    rows = handshake() + fsack_path_setup() + [
        # Data on the primary path right after FSACK-COMPLETE, which reaches B (310.1) first.
        (266.1, SENDER_1, RECEIVER_1, "DATA 1"),
        (267.1, SENDER_1, RECEIVER_1, "DATA 2"),
        (268.1, SENDER_1, RECEIVER_1, "DATA 3"),
        (269.1, SENDER_1, RECEIVER_1, "DATA 4"),
        # Every SACK goes over the FSACK path B2 -> A2: 45 ms forward + 20 ms back.
        (331.1, RECEIVER_2, SENDER_2, "S:1"),
        (332.1, RECEIVER_2, SENDER_2, "S:2"),
        (333.1, RECEIVER_2, SENDER_2, "S:3"),
        (334.1, RECEIVER_2, SENDER_2, "S:4"),
    ]
    return timeline("fsack-multihomed", "Cui, Koh, Lee 2010, Figs. 1, 2 and 4 (FSACK path configuration)", rows)


TIMELINES = [fsack_multihomed]
