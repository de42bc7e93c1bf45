"""Deliberately broken vectors, one or more per rule family of docs/rules.md, for the
plugins' expert info and `nrsack check`. Each is tiny: a handshake and a few packets, with the
timing and endpoints of the clean timelines. Written to sample-pcaps/broken/.
"""

from . import fsack, mptcp, notation_sctp, notation_tcp, sctp, tcp
from .timeline import Step, Timeline

BROKEN = {"subdir": "broken"}


def _timeline(name, source, notation, options, rows):
    steps = [Step(t, src, dst, label) for t, src, dst, label in rows]
    return Timeline(name=name, source=source, notation=notation, steps=steps, options=dict(options, **BROKEN))


# --- SCTP ------------------------------------------------------------------------------------

def _sctp(name, source, init_ext, init_ack_ext, acks, tsns=(11, 12, 13, 14)):
    """Handshake (with the given Supported Extensions), TSNs sent 1 ms apart from t = 300 (TSN 12
    is lost unless the acks say otherwise), then the receiver's acks as (t, label)."""
    a, b = sctp.SENDER, sctp.RECEIVER
    rows = [(0.0, a, b, "INIT" + (" ext=" + init_ext if init_ext else "")),
            (100.0, b, a, "INIT-ACK" + (" ext=" + init_ack_ext if init_ack_ext else "")),
            (100.1, a, b, "COOKIE-ECHO"),
            (200.1, b, a, "COOKIE-ACK")]
    rows += [(300.0 + i, a, b, "DATA %d" % tsn) for i, tsn in enumerate(tsns)]
    rows += [(t, b, a, label) for t, label in acks]
    return _timeline(name, source, notation_sctp, sctp.OPTIONS, rows)


def nr01_nrsack_without_negotiation():
    # Only the INIT lists 0x10; the receiver NR-SACKs anyway.
    return _sctp("nr01-nrsack-without-negotiation", "NR-01: INIT-ACK lacks 0x10", "0x10", None,
                 [(400.0, "S:11"), (402.0, "N:11;2-2")], tsns=(11, 12, 13))


def nr02_overlapping_r_nr():
    # TSN 14 in the R block 13-14 and in the NR block 14-14.
    return _sctp("nr02-overlapping-r-nr", "NR-02: a TSN in an R and an NR block", "0x10", "0x10",
                 [(400.0, "N:11"), (402.0, "N:11;R:2-2"), (403.0, "N:11;R:2-3;NR:3-3")])


def nr03_revocation():
    # TSN 13 is NR-acked, then only R-acked.
    return _sctp("nr03-revocation", "NR-03: NR-acked TSN 13 reported renegable later", "0x10", "0x10",
                 [(400.0, "N:11"), (402.0, "N:11;2-2"), (403.0, "N:11;R:2-3")])


def nr05_malformed_blocks():
    # Start > End, then a count of NR blocks (2) that disagrees with the chunk length (one block).
    return _sctp("nr05-malformed-blocks", "NR-05: Start > End; block count vs chunk length", "0x10", "0x10",
                 [(400.0, "N:11"), (402.0, "N:11;3-2"), (403.0, "N:11;2-3 n_nr=2")])


def gen01_truncated_chunk():
    # Chunk length and count say one NR block (24 bytes) but the packet ends after 20; the next
    # NR-SACK is sound, so analysis must go on.
    return _sctp("gen01-truncated-chunk", "GEN-01: NR-SACK chunk truncated by the end of the packet",
                 "0x10", "0x10", [(400.0, "N:11"), (401.0, "N:12 n_nr=1 len=24"), (402.0, "N:13")],
                 tsns=(11, 12, 13))


# --- FSACK -----------------------------------------------------------------------------------

def fs01_unknown_timestamp():
    ts = fsack.sender_clock_ms(200.0)
    rows = fsack.handshake() + fsack.fsack_path_setup() + [
        # A third FSACK-ACK whose timestamp no FSACK-INIT carried.
        (291.0, fsack.RECEIVER_1, fsack.SENDER_1, "FSACK-ACK ts=%d" % (ts + 500)),
    ]
    return fsack.timeline("fs01-unknown-timestamp", "FS-01: FSACK-ACK with an unknown timestamp",
                                    rows, **BROKEN)


# --- TCP -------------------------------------------------------------------------------------

def _permitted(flags):
    return "" if flags is None else " nrsack=0x%02x" % flags


def _tcp(name, source, syn, syn_ack, acks):
    """Handshake with the given NR-SACK-Permitted flags (None: absent), PDUs 1-4 1 ms apart from
    t = 200 (PDU 2 lost), then the receiver's acks as (t, label)."""
    a, b = tcp.SENDER, tcp.RECEIVER
    rows = [(0.0, a, b, "SYN" + _permitted(syn)), (100.0, b, a, "SYN-ACK" + _permitted(syn_ack)),
            (100.1, a, b, "ACK")]
    rows += [(200.0 + i, a, b, "DATA %d" % k) for i, k in enumerate(range(1, 5))]
    rows += [(t, b, a, label) for t, label in acks]
    return _timeline(name, source, notation_tcp, tcp.OPTIONS, rows)


def tn01_nr_option_without_permitted():
    return _tcp("tn01-nr-option-without-permitted", "TN-01: SYN-ACK lacks NR-SACK-Permitted", 0x00, None,
                [(300.0, "ACK 1"), (302.0, "ACK 1 NR 3-3")])


def tn03_revocation():
    return _tcp("tn03-revocation", "TN-03: NR-acked PDU 3 reported in a SACK block later", 0x00, 0x00,
                [(300.0, "ACK 1"), (302.0, "ACK 1 NR 3-3"), (303.0, "ACK 1 SACK 3-4")])


def tn05_malformed_option():
    # left = right (PDU 4's start .. PDU 3's end); a block at the ack (PDU 1); a length byte of 13.
    return _tcp("tn05-malformed-option", "TN-05: empty block, block below the ack, wrong option length",
                0x00, 0x00, [(300.0, "ACK 1"), (302.0, "ACK 1 NR 4-3"), (303.0, "ACK 1 NR 1-1"),
                             (304.0, "ACK 1 NR 3-3 nrlen=13")])


# --- MPTCP -----------------------------------------------------------------------------------

def mn02_dss_n_without_data_ack():
    server, client = mptcp.SERVER, mptcp.CLIENT_1
    rows = [(0.0, client, server, "SYN MPC nrsack=0x02"), (0.1, server, client, "SYN-ACK MPC nrsack=0x02"),
            (100.1, client, server, "ACK MPC")]
    rows += [(200.0 + i, server, client, "S:%d DSN:%d" % (1 + 1400 * i, 1 + 1400 * i)) for i in range(4)]
    rows += [(300.0, client, server, "A:1401 DA:1401"),
             # Flag N without flag A, then a block count (2) that disagrees with the length (1 block).
             (302.0, client, server, "A:1401 DA:1401 SACK:2801-4201 NR:1400-2800 noack"),
             (303.0, client, server, "A:1401 DA:1401 SACK:2801-5601 NR:1400-4200 nrcount=2")]
    return _timeline("mn02-dss-n-without-data-ack", "MN-02: DSS flag N without DATA ACK; NR count vs length",
                     notation_tcp, mptcp.OPTIONS, rows)


TIMELINES = [
    nr01_nrsack_without_negotiation, nr02_overlapping_r_nr, nr03_revocation, nr05_malformed_blocks,
    gen01_truncated_chunk, fs01_unknown_timestamp, tn01_nr_option_without_permitted, tn03_revocation,
    tn05_malformed_option, mn02_dss_n_without_data_ack,
]
