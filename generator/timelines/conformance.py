"""Conformance vectors of `nrsack check` (docs/rules.md): for every rule a capture that must
raise it on the stated frames, and a close-but-legal capture that must not (a reordered old ack is not
a revocation, a D-SACK below the ack is not TN-05, ...). They land in sample-pcaps/conformance/; vectors
whose bytes are malformed on purpose (bad counts and lengths) in sample-pcaps/conformance/broken/.
`nrsack generate timelines --out sample-pcaps` writes the pcaps and, from these vectors, their expected
files.

A vector is a list of rows `(who, label[, mark])` in the papers' notation (notation_sctp, notation_tcp),
sent 1 ms apart after the handshake, or `(t_ms, who, label[, mark])` at a given time. `who` names the
sending endpoint (S: data sender, R: data receiver, R2: the receiver's second address). Its findings
name the frames by mark, the breaking frame last; a third element gives a severity other than the
rule's (e.g. "note" when the capture cannot decide). Captured at the data sender unless the vector says
otherwise (docs/decisions.md, Timelines).
"""

from functools import partial

from . import notation_sctp, notation_tcp
from .timeline import Step, Timeline

SUBDIR = "conformance"
SOURCE = "nrsack conformance vector for docs/rules.md"

# SCTP: a single-homed sender, a receiver with two addresses (for the FSACK vectors)
SCTP_ENDPOINTS = {"S": "192.0.2.1:5000", "R": "198.51.100.1:5001", "R2": "198.51.100.2:5001"}
SCTP_OPTIONS = {
    "tags": {5000: 0x0C0C0C0C, 5001: 0x0D0D0D0D},
    "initial_tsn": {5000: 11, 5001: 1},
    "payload": 100,
    "unordered": True,
}
TCP_ENDPOINTS = {"S": "192.0.2.1:40000", "R": "198.51.100.1:5001"}
TCP_OPTIONS = {"isn": {(TCP_ENDPOINTS["S"], TCP_ENDPOINTS["R"]): 100000,
                       (TCP_ENDPOINTS["R"], TCP_ENDPOINTS["S"]): 500000}, "payload": 100}
# MPTCP: the server sends, as in the MPTCP paper; one subflow
MPTCP_ENDPOINTS = {"S": "198.51.100.10:5001", "R": "192.0.2.1:40001"}
MPTCP_OPTIONS = {"isn": {(MPTCP_ENDPOINTS["R"], MPTCP_ENDPOINTS["S"]): 3000000000,
                         (MPTCP_ENDPOINTS["S"], MPTCP_ENDPOINTS["R"]): 1000000000},
                 "payload": 1400,
                 "keys": {MPTCP_ENDPOINTS["R"]: 0x1A2B3C4D5E6F7081, MPTCP_ENDPOINTS["S"]: 0x8877665544332211}}


# ---- handshakes (the opener's reply gap is long and its confirmation quick: captured at the opener) ----

def sctp_handshake(ext="0x10", at="sender"):
    """INIT from the sender; `at` receiver: the gaps of a capture next to the receiver."""
    ext = f" ext={ext}" if ext else ""
    gaps = (0.0, 100.0, 100.1, 200.1) if at == "sender" else (0.0, 0.1, 100.1, 100.2)
    return [(gaps[0], "S", "INIT" + ext, "init"), (gaps[1], "R", "INIT-ACK" + ext, "init-ack"),
            (gaps[2], "S", "COOKIE-ECHO"), (gaps[3], "R", "COOKIE-ACK")]


def tcp_handshake(nrsack="0x00"):
    option = f" nrsack={nrsack}" if nrsack else ""
    return [(0.0, "S", "SYN" + option, "syn"), (100.0, "R", "SYN-ACK" + option, "syn-ack"), (100.1, "S", "ACK")]


def mptcp_handshake(nrsack="0x02"):
    """The client (R) opens; the capture sits at the server (S), the data sender."""
    option = f" nrsack={nrsack}" if nrsack else ""
    return [(0.0, "R", "SYN MPC" + option, "syn"), (0.1, "S", "SYN-ACK MPC" + option, "syn-ack"),
            (100.1, "R", "ACK MPC")]


def sctp_data(*tsns):
    return [("S", f"DATA {t}", f"d{t}") for t in tsns]


def tcp_data(*pdus):
    return [("S", f"DATA {k}", f"d{k}") for k in pdus]


def mptcp_data(*pieces):
    """Piece i: subflow sequence 1 + 1400 i, DSN 1 + 1400 i."""
    return [("S", f"S:{1 + 1400 * i} DSN:{1 + 1400 * i}", f"d{i}") for i in pieces]


FSACK = sctp_handshake("0x10,0xA0")
# one FSACK procedure that makes the receiver's second address (R2) the FSACK path at t = 300 ms
FSACK_ROUND = FSACK + [(298.0, "S", "FSACK-INIT ts=298"), (298.5, "R2", "FSACK-ACK ts=298"), (298.6, "R", "FSACK-ACK ts=298"),
                       (300.0, "S", "FSACK-COMPLETE 198.51.100.2", "c")]


# ---- the vectors: name -> (protocol, rows, findings[, subdir]) ----

VECTORS = {
    # NR-01
    "nr01-nrsack-not-negotiated": ("sctp", sctp_handshake(None) + sctp_data(11, 12) + [("R", "N:12", "a")],
                                   [("NR-01", ["init", "init-ack", "a"])]),
    "nr01-no-handshake-note": ("sctp", sctp_data(11, 12) + [("R", "N:12", "a")], [("NR-01", ["a"], "note")]),
    "nr01-legal-negotiated": ("sctp", sctp_handshake() + sctp_data(11, 12) + [("R", "N:12", "a")], []),
    # NR-02
    "nr02-tsn-in-r-and-nr-block": ("sctp", sctp_handshake() + sctp_data(11, 12, 13, 14) + [("R", "N:10;R:2-3;NR:3-4", "a")],
                                   [("NR-02", ["a"])]),
    "nr02-legal-adjacent-lists": ("sctp", sctp_handshake() + sctp_data(11, 12, 13, 14) + [("R", "N:10;R:2-2;NR:3-4", "a")], []),
    # NR-03
    "nr03-revocation": ("sctp", sctp_handshake() + sctp_data(11, 12, 13, 14) + [("R", "N:10;2-3", "a1"), ("R", "N:10;2-2", "a2")],
                        [("NR-03", ["a1", "a2"])]),
    "nr03-legal-reordered-old-ack": ("sctp", sctp_handshake() + sctp_data(11, 12, 13, 14)
                                     + [("R", "N:11;2-3", "a1"), ("R", "N:10;3-3", "a2")],
                                     [("NR-07", ["a1", "a2"])]),
    # NR-04
    "nr04-retransmission-after-nr-ack": ("sctp", sctp_handshake() + sctp_data(11, 12, 13)
                                         + [("R", "N:10;2-3", "a"), ("S", "DATA 12 rtx", "rtx")], [("NR-04", ["a", "rtx"])]),
    "nr04-retransmission-after-cum-ack": ("sctp", sctp_handshake() + sctp_data(11, 12, 13)
                                          + [("R", "N:12", "a"), ("S", "DATA 11 rtx", "rtx")], [("NR-04", ["a", "rtx"])]),
    "nr04-receiver-vantage-note": ("sctp", sctp_handshake(at="receiver") + sctp_data(11, 12, 13)
                                   + [("R", "N:10;2-3", "a"), ("S", "DATA 12 rtx", "rtx")], [("NR-04", ["a", "rtx"], "note")]),
    "nr04-legal-renegable-retransmitted": ("sctp", sctp_handshake() + sctp_data(11, 12, 13)
                                           + [("R", "N:10;R:2-3", "a"), ("S", "DATA 12 rtx", "rtx"), ("S", "DATA 11 rtx")], []),
    # NR-05 (the count vector is malformed on the wire: conformance/broken)
    "nr05-malformed-blocks": ("sctp", sctp_handshake() + sctp_data(11, 12, 13, 14)
                              + [("R", "N:10;R:1-2", "start"), ("R", "N:10;R:3-2", "order"), ("R", "N:10;R:2-3,3-4", "overlap"),
                                 ("R", "N:10;R:2-2,2-2", "repeat")],
                              [("NR-05", ["start"]), ("NR-05", ["order"]), ("NR-05", ["overlap"]), ("NR-05", ["repeat"])]),
    "nr05-counts-disagree-with-length": ("sctp", sctp_handshake() + sctp_data(11, 12, 13)
                                         + [("R", "N:10;R:2-2 n_r=2", "short"), ("R", "N:10;NR:2-3 n_nr=0", "long")],
                                         [("NR-05", ["short"]), ("NR-05", ["long"])], "conformance/broken"),
    "nr05-legal-two-lists-with-dups": ("sctp", sctp_handshake() + sctp_data(11, 12, 13, 14, 15)
                                       + [("R", "N:10;R:2-2,5-5;NR:3-3;D:12"), ("R", "N:10;R:2-2;NR:3-3,5-5;D:13")], []),
    # NR-06
    "nr06-sack-after-negotiation": ("sctp", sctp_handshake() + sctp_data(11, 12) + [("R", "S:12", "a")],
                                    [("NR-06", ["init", "init-ack", "a"])]),
    "nr06-legal-sack-without-nrsack": ("sctp", sctp_handshake(None) + sctp_data(11, 12) + [("R", "S:10;2-2"), ("R", "S:12")], []),
    # NR-07
    "nr07-cum-ack-backwards": ("sctp", sctp_handshake() + sctp_data(11, 12, 13) + [("R", "N:12", "a1"), ("R", "N:11", "a2")],
                               [("NR-07", ["a1", "a2"])]),
    "nr07-legal-duplicate-ack": ("sctp", sctp_handshake() + sctp_data(11, 12, 13) + [("R", "N:11"), ("R", "N:11"), ("R", "N:13")], []),
    # NR-08
    "nr08-touching-blocks": ("sctp", sctp_handshake() + sctp_data(11, 12, 13, 14) + [("R", "N:10;2-2,3-3", "a")],
                             [("NR-08", ["a"])]),
    "nr08-legal-separate-blocks": ("sctp", sctp_handshake() + sctp_data(11, 12, 13, 14) + [("R", "N:10;2-2,4-4")], []),
    # NR-09
    "nr09-ack-of-unsent-tsn": ("sctp", sctp_handshake() + sctp_data(11, 12) + [("R", "N:10;2-4", "block"), ("R", "N:14", "cum")],
                               [("NR-09", ["block"]), ("NR-09", ["cum"])]),
    "nr09-mid-association-note": ("sctp", [("R", "N:14", "a")] + sctp_data(15, 16) + [("R", "N:16", "b")],
                                  [("NR-01", ["a"], "note"), ("NR-09", ["a"], "note"), ("NR-01", ["b"], "note")]),
    "nr09-legal-all-sent": ("sctp", sctp_handshake() + sctp_data(11, 12, 13) + [("R", "N:10;2-3"), ("R", "N:13")], []),
    # FS-01 .. FS-06: FSACK negotiated (0x10, 0xA0) unless said; the receiver has two addresses
    "fs01-unknown-timestamp": ("fsack", FSACK + [("S", "FSACK-INIT ts=1000", "i"), ("R", "FSACK-ACK ts=999", "a"),
                                                ("R2", "FSACK-ACK ts=1000", "a2")],
                               [("FS-01", ["a"]), ("FS-02", ["i", "a2"])]),
    "fs01-legal-echoed-timestamp": ("fsack", FSACK + [("S", "FSACK-INIT ts=1000"), ("R", "FSACK-ACK ts=1000"),
                                                     ("R2", "FSACK-ACK ts=1000"), ("S", "FSACK-COMPLETE 198.51.100.1")], []),
    "fs02-one-return-path": ("fsack", FSACK + [("S", "FSACK-INIT ts=1000", "i"), ("R", "FSACK-ACK ts=1000", "a"),
                                              ("S", "FSACK-COMPLETE 198.51.100.1"), ("S", "FSACK-INIT ts=1200", "next"),
                                              ("R", "FSACK-ACK ts=1200"), ("R2", "FSACK-ACK ts=1200")],
                             [("FS-02", ["i", "a"])]),
    "fs02-legal-every-path": ("fsack", FSACK + [("S", "FSACK-INIT ts=1000"), ("R2", "FSACK-ACK ts=1000"),
                                               ("R", "FSACK-ACK ts=1000"), ("S", "FSACK-COMPLETE 198.51.100.2")]
                              + sctp_data(11) + [("R2", "N:11")], []),
    "fs03-complete-names-later-path": ("fsack", FSACK + [("S", "FSACK-INIT ts=1000"), ("R2", "FSACK-ACK ts=1000", "first"),
                                                        ("R", "FSACK-ACK ts=1000"), ("S", "FSACK-COMPLETE 198.51.100.1", "c")],
                                       [("FS-03", ["first", "c"])]),
    "fs03-legal-complete-names-first-path": ("fsack", FSACK + [("S", "FSACK-INIT ts=1000"), ("R2", "FSACK-ACK ts=1000"),
                                                              ("R", "FSACK-ACK ts=1000"),
                                                              ("S", "FSACK-COMPLETE 198.51.100.2")], []),
    "fs04-sack-off-fsack-path": ("fsack", FSACK_ROUND + sctp_data(11, 12) + [("R2", "N:11"), ("R", "N:12", "a")],
                                 [("FS-04", ["c", "a"])]),
    "fs04-legal-sacks-on-fsack-path": ("fsack", FSACK_ROUND + sctp_data(11, 12) + [("R2", "N:11"), ("R2", "N:12")], []),
    "fs05-path-not-updated": ("fsack", FSACK_ROUND + [(1300.0, "S", "DATA 11", "d11"), (2400.0, "S", "DATA 12", "d12"),
                                                      (2500.0, "R2", "N:12")],
                              [("FS-05", ["c", "d12"])]),
    "fs05-legal-updated-in-time": ("fsack", FSACK_ROUND + [(1300.0, "S", "DATA 11"), (1400.0, "S", "FSACK-INIT ts=1400"),
                                                           (1450.0, "R2", "FSACK-ACK ts=1400"), (1451.0, "R", "FSACK-ACK ts=1400"),
                                                           (1500.0, "S", "FSACK-COMPLETE 198.51.100.2"),
                                                           (2400.0, "S", "DATA 12"), (2500.0, "R2", "N:12")], []),
    "fs06-fsack-not-negotiated": ("fsack", sctp_handshake("0x10") + [("S", "FSACK-INIT ts=1000", "i")],
                                  [("FS-06", ["init", "init-ack", "i"])]),
    "fs06-legal-negotiated": ("fsack", FSACK + [("S", "FSACK-INIT ts=1000")], []),
    # TN-01 .. TN-05 (TCP-PDUs of 100 bytes; NR-SACK-Permitted on SYN and SYN-ACK unless said)
    "tn01-nr-blocks-not-permitted": ("tcp", tcp_handshake(None) + tcp_data(1, 2, 3) + [("R", "ACK 1 NR 3-3", "a")],
                                     [("TN-01", ["syn", "syn-ack", "a"])]),
    "tn01-legal-permitted": ("tcp", tcp_handshake() + tcp_data(1, 2, 3) + [("R", "ACK 1 NR 3-3"), ("R", "ACK 3")], []),
    "tn02-byte-in-sack-and-nr-block": ("tcp", tcp_handshake() + tcp_data(1, 2, 3, 4) + [("R", "ACK 1 SACK 3-3 NR 3-4", "a")],
                                       [("TN-02", ["a"])]),
    "tn02-legal-disjoint-lists": ("tcp", tcp_handshake() + tcp_data(1, 2, 3, 4) + [("R", "ACK 1 SACK 3-3 NR 4-4")], []),
    "tn03-revocation-reported-renegable": ("tcp", tcp_handshake() + tcp_data(1, 2, 3, 4)
                                           + [("R", "ACK 1 NR 3-3", "a1"), ("R", "ACK 1 SACK 3-4", "a2")],
                                           [("TN-03", ["a1", "a2"])]),
    "tn03-revocation-inside-the-span": ("tcp", tcp_handshake() + tcp_data(1, 2, 3, 4, 5, 6)
                                        + [("R", "ACK 1 NR 4-4", "a1"), ("R", "ACK 1 NR 3-3,5-6", "a2")],
                                        [("TN-03", ["a1", "a2"])]),
    "tn03-legal-older-block-left-out": ("tcp", tcp_handshake() + tcp_data(1, 2, 3, 4, 5, 6)
                                        + [("R", "ACK 1 NR 3-3"), ("R", "ACK 1 NR 5-6"), ("R", "ACK 6")], []),
    "tn04-retransmission-after-nr-ack": ("tcp", tcp_handshake() + tcp_data(1, 2, 3)
                                         + [("R", "ACK 1 NR 3-3", "a"), ("S", "DATA 3 rtx", "rtx")], [("TN-04", ["a", "rtx"])]),
    "tn04-legal-sacked-retransmitted": ("tcp", tcp_handshake() + tcp_data(1, 2, 3)
                                        + [("R", "ACK 1 SACK 3-3"), ("S", "DATA 3 rtx"), ("S", "DATA 2 rtx")], []),
    "tn05-malformed-nr-option": ("tcp", tcp_handshake() + tcp_data(1, 2, 3, 4, 5)
                                 + [("R", "ACK 1 NR 3-2", "edges"), ("R", "ACK 3 NR 2-2", "below")],
                                 [("TN-05", ["edges"]), ("TN-05", ["below"])]),
    "tn05-wrong-option-length": ("tcp", tcp_handshake() + tcp_data(1, 2, 3) + [("R", "ACK 1 NR 3-3 nrlen=8", "a")],
                                 [("TN-05", ["a"])], "conformance/broken"),
    "tn05-legal-dsack-below-the-ack": ("tcp", tcp_handshake() + tcp_data(1, 2, 3, 4, 5)
                                       + [("R", "ACK 3 SACK 2-2 NR 5-5"), ("R", "ACK 5")], []),
    # MN-01 .. MN-05 (pieces of 1400 bytes on one subflow; NR-SACK-Permitted flag 0x02 unless said)
    "mn01-dss-nr-not-negotiated": ("mptcp", mptcp_handshake(None) + mptcp_data(0, 1, 2)
                                   + [("R", "A:1 DA:1 NR:1400-2800", "a")], [("MN-01", ["syn", "syn-ack", "a"])]),
    "mn01-legal-negotiated": ("mptcp", mptcp_handshake() + mptcp_data(0, 1, 2) + [("R", "A:1 DA:1 NR:1400-2800")], []),
    "mn02-flag-n-malformed": ("mptcp", mptcp_handshake() + mptcp_data(0, 1, 2)
                              + [("R", "A:1 DA:1 NR:1400-2800 noack", "noack"), ("R", "A:1 DA:1 NR:1400-2800 nrcount=2", "count")],
                              [("MN-02", ["noack"]), ("MN-02", ["count"])], "conformance/broken"),
    "mn02-legal-two-blocks": ("mptcp", mptcp_handshake() + mptcp_data(0, 1, 2, 3)
                              + [("R", "A:1 DA:1 NR:1400-2800,4200-5600")], []),
    "mn03-revocation-inside-the-span": ("mptcp", mptcp_handshake() + mptcp_data(0, 1, 2, 3, 4)
                                        + [("R", "A:1 DA:1 NR:2800-4200", "a1"), ("R", "A:1 DA:1 NR:1400-2800,4200-5600", "a2")],
                                        [("MN-03", ["a1", "a2"])]),
    "mn03-legal-older-block-left-out": ("mptcp", mptcp_handshake() + mptcp_data(0, 1, 2, 3, 4)
                                        + [("R", "A:1 DA:1 NR:1400-2800"), ("R", "A:1 DA:1 NR:4200-5600")], []),
    "mn04-reinjection-after-data-ack": ("mptcp", mptcp_handshake() + mptcp_data(0, 1)
                                        + [("R", "A:2801 DA:2801", "a"), ("S", "S:2801 DSN:1401", "again")],
                                        [("MN-04", ["a", "again"])]),
    "mn04-legal-unacked-data-sent-again": ("mptcp", mptcp_handshake() + mptcp_data(0, 1, 2)
                                           + [("R", "A:1 DA:1 NR:1400-2800"), ("S", "S:4201 DSN:1")], []),
    "mn05-malformed-nr-blocks": ("mptcp", mptcp_handshake() + mptcp_data(0, 1, 2, 3)
                                 + [("R", "A:1 DA:1 NR:2800-1400", "empty"), ("R", "A:1 DA:1 NR:2800-4200,1400-2800", "order"),
                                    ("R", "A:1 DA:1 NR:1400-2900,2800-4200", "overlap")],
                                 [("MN-05", ["empty"]), ("MN-05", ["order"]), ("MN-05", ["overlap"])]),
    "mn05-legal-ascending-blocks": ("mptcp", mptcp_handshake() + mptcp_data(0, 1, 2, 3)
                                    + [("R", "A:1 DA:1 NR:1400-2800"), ("R", "A:1 DA:1 NR:1400-2800,4200-5600")], []),
    # GEN-01: a chunk longer than its packet (close but legal: a long NR-SACK whose counts add up)
    "gen01-chunk-exceeds-packet": ("sctp", sctp_handshake() + sctp_data(11, 12) + [("R", "N:10;2-2 len=200", "a"), ("R", "N:12")],
                                   [("GEN-01", ["a"])], "conformance/broken"),
    "gen01-legal-long-nr-sack": ("sctp", sctp_handshake() + sctp_data(*range(11, 31))
                                 + [("R", "N:10;R:2-3,5-6;NR:8-9,11-12,14-15,17-20;D:12,13,15")], []),
}

NOTATIONS = {"sctp": (notation_sctp, SCTP_ENDPOINTS, SCTP_OPTIONS),
             "fsack": (notation_sctp, SCTP_ENDPOINTS, dict(SCTP_OPTIONS, addresses={5001: ["198.51.100.1", "198.51.100.2"]})),
             "tcp": (notation_tcp, TCP_ENDPOINTS, TCP_OPTIONS),
             "mptcp": (notation_tcp, MPTCP_ENDPOINTS, MPTCP_OPTIONS)}
PEER = {"S": "R", "R": "S", "R2": "S"}


def _rows(rows):
    """(t_ms, who, label, mark) with the times filled in: 1 ms after the previous row unless given."""
    out, t = [], 0.0
    for row in rows:
        if isinstance(row[0], (int, float)):
            t = float(row[0])
            row = row[1:]
        else:
            t = round(t + 1.0, 3)
        who, label, *mark = row
        out.append((t, who, label, mark[0] if mark else None))
    return out


def build(name):
    """The vector `name` as a Timeline; options["findings"] holds its expected findings with frames."""
    protocol, rows, findings, *subdir = VECTORS[name]
    notation, endpoints, options = NOTATIONS[protocol]
    rows = sorted(_rows(rows), key=lambda r: r[0])
    frame_of = {mark: i + 1 for i, (_, _, _, mark) in enumerate(rows) if mark}
    receiver = endpoints["R"]
    steps = []
    for t, who, label, _ in rows:
        peer = endpoints["S"] if who != "S" else receiver
        steps.append(Step(t, endpoints[who], peer, label))
    expected = [dict(rule=f[0], frames=[frame_of[m] for m in f[1]], **({"severity": f[2]} if len(f) > 2 else {}))
                for f in findings]
    return Timeline(name=name, source=SOURCE, notation=notation, steps=steps,
                    options=dict(options, subdir=subdir[0] if subdir else SUBDIR, findings=expected))


def expected_file(timeline):
    """The vector's NAME.expected.json: its packets as the timeline lists them and its findings."""
    return {
        "capture": timeline.name + ".pcap",
        "source": timeline.source,
        "choices": ["Conformance vector: findings are the frames that prove each rule, the breaking frame last; "
                    "a severity is given where it differs from rules.md's."],
        "timing": {"vantage": "receiver" if "receiver-vantage" in timeline.name else "sender"},
        "epoch_s": timeline.epoch_s,
        "packets": [{"frame": i + 1, "t_ms": step.t_ms, "src": step.src, "dst": step.dst, "label": step.label}
                    for i, step in enumerate(sorted(timeline.steps, key=lambda s: s.t_ms))],
        "findings": timeline.options["findings"],
    }


TIMELINES = [partial(build, name) for name in VECTORS]


def write_expected(out_dir):
    """Writes each vector's NAME.expected.json under OUT_DIR (`nrsack generate timelines` writes the pcaps)."""
    import json
    from pathlib import Path

    paths = []
    for factory in TIMELINES:
        timeline = factory()
        path = Path(out_dir) / timeline.options["subdir"] / (timeline.name + ".expected.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(expected_file(timeline), indent=1) + "\n")
        paths.append(path)
    return paths
