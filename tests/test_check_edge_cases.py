"""Cases the conformance vectors do not hold: TCP keep-alives are not TN-04
retransmissions, the later segments of one MPTCP mapping are not MN-04 data-level retransmissions
(decisions 21), a revocation across the TSN wrap is found and named by its wire TSN, and a never-renege
receiver's SACK block still meets its NR block in TN-02.
Captures are built here with Scapy and the project's option layers."""

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from nrsack.analyzer import check
from nrsack.generator.layers import MPTCPCapable, MPTCPDSS, TCPOptNRSackPermitted, tcp_option
from support import pcaps, tcp_scenario

CLIENT, SERVER = ("192.0.2.1", 40000), ("198.51.100.1", 5001)
ISN_C, ISN_S = 1000, 5000


def write(tmp_path, segments):
    """segments: (from client?, TCP layer); 1 ms apart, the handshake's reply gap makes it a client capture."""
    packets = []
    for i, (from_client, tcp) in enumerate(segments):
        (src, sport), (dst, dport) = (CLIENT, SERVER) if from_client else (SERVER, CLIENT)
        p = Ether() / IP(src=src, dst=dst) / tcp.__class__(bytes(tcp))
        p[TCP].sport, p[TCP].dport = sport, dport
        p.time = 1_700_000_000 + (0 if i == 0 else 0.1 if i == 1 else 0.1001 + i * 0.001)
        packets.append(p)
    path = tmp_path / "edge.pcap"
    wrpcap(str(path), packets)
    return path


def handshake(*extra):
    permitted = tcp_option(TCPOptNRSackPermitted(flags=0x02 if extra else 0x00))
    return [(True, TCP(seq=ISN_C, flags="S", options=[("SAckOK", b""), permitted, *extra[:1]])),
            (False, TCP(seq=ISN_S, ack=ISN_C + 1, flags="SA", options=[("SAckOK", b""), permitted, *extra[1:2]])),
            (True, TCP(seq=ISN_C + 1, ack=ISN_S + 1, flags="A", options=list(extra[2:3])))]


def test_keepalive_below_the_ack_is_not_a_retransmission(tmp_path):
    data = [(True, TCP(seq=ISN_C + 1, ack=ISN_S + 1, flags="PA") / (b"x" * 100)),
            (False, TCP(seq=ISN_S + 1, ack=ISN_C + 101, flags="A"))]
    keepalive = (True, TCP(seq=ISN_C + 100, ack=ISN_S + 1, flags="A") / b"k")      # the byte at ack - 1
    resend = (True, TCP(seq=ISN_C + 50, ack=ISN_S + 1, flags="A") / b"r")           # a byte well below it
    assert list(check(write(tmp_path, handshake() + data + [keepalive])).rule) == []
    found = check(write(tmp_path, handshake() + data + [resend]))
    assert [(r.rule, r.severity, list(r.frames)) for r in found.itertuples()] == [("TN-04", "warning", [5, 6])]


def test_later_segments_of_one_mapping_are_not_data_level_retransmissions(tmp_path):
    keys = (0x1111222233334444, 0x5555666677778888)
    mpc = (tcp_option(MPTCPCapable()), tcp_option(MPTCPCapable(sender_key=keys[1])),
           tcp_option(MPTCPCapable(sender_key=keys[0], receiver_key=keys[1])))
    mapping = dict(M=1, dsn32=7000, ssn=1, data_len=2800)
    first = (True, TCP(seq=ISN_C + 1, ack=ISN_S + 1, flags="A", options=[tcp_option(MPTCPDSS(**mapping))]) / (b"a" * 1400))
    data_ack = (False, TCP(seq=ISN_S + 1, ack=ISN_C + 1401, flags="A",
                           options=[tcp_option(MPTCPDSS(A=1, data_ack32=8400))]))
    second = (True, TCP(seq=ISN_C + 1401, ack=ISN_S + 1, flags="A", options=[tcp_option(MPTCPDSS(**mapping))]) / (b"b" * 1400))
    assert list(check(write(tmp_path, handshake(*mpc) + [first, data_ack, second])).rule) == []
    # the same mapping again after the whole of it was DATA-ACKed is a data-level retransmission
    all_acked = (False, TCP(seq=ISN_S + 1, ack=ISN_C + 2801, flags="A", options=[tcp_option(MPTCPDSS(A=1, data_ack32=9800))]))
    again = (True, TCP(seq=ISN_C + 2801, ack=ISN_S + 1, flags="A", options=[tcp_option(MPTCPDSS(**dict(mapping, ssn=2801)))])
             / (b"c" * 1400))
    found = check(write(tmp_path, handshake(*mpc) + [first, data_ack, second, all_acked, again]))
    assert [(r.rule, list(r.frames)) for r in found.itertuples()] == [("MN-04", [5, 8])]  # frame 5 first acked DSN 7000


def test_revocation_across_the_tsn_wrap(tmp_path):
    """TSNs 4294967294, 4294967295, 0, 1: NR-acking 4294967295-0 and then only 4294967295 revokes TSN 0."""
    from nrsack.generator.timelines import notation_sctp
    from nrsack.generator.timelines.timeline import Step, Timeline, write_pcap
    from nrsack.generator.timelines.conformance import SCTP_OPTIONS, sctp_handshake

    s, r = "192.0.2.1:5000", "198.51.100.1:5001"
    options = dict(SCTP_OPTIONS, initial_tsn={5000: 4294967294, 5001: 1})
    rows = [(t, who, label) for t, who, label, *_ in sctp_handshake()]
    rows += [(300.0 + i, "S", f"DATA {tsn}") for i, tsn in enumerate([4294967294, 4294967295, 0, 1])]

    def capture(name, acks):
        steps = [Step(t, s if who == "S" else r, r if who == "S" else s, label)
                 for t, who, label in rows + [(400.0 + i, "R", a) for i, a in enumerate(acks)]]
        return write_pcap(Timeline(name, "wrap", notation_sctp, steps, options=options), tmp_path / f"{name}.pcap")

    found = check(capture("revoked", ["N:4294967293;2-3", "N:4294967293;2-2"]))
    assert [(r.rule, list(r.frames)) for r in found.itertuples()] == [("NR-03", [9, 10])]
    assert "TSN 0," in found.message[0]
    assert list(check(capture("kept", ["N:4294967293;2-3", "N:0", "N:1"])).rule) == []


def test_never_renege_receiver_sack_and_nr_block_over_one_byte_is_tn02(tmp_path):
    """A never-renege receiver's SACK blocks count as NR for the scoreboard (its level marks them so), yet
    TN-02 is about the option each block came in: one byte in a SACK and an NR-SACK block of one segment
    breaks it all the same. The checker reads the block's kind from the wire, its units from the level."""
    both = tcp_scenario.ack(0.3, 1000, sack=[(2000, 3000)], nr=[(2500, 4000)])
    apart = tcp_scenario.ack(0.3, 1000, sack=[(2000, 3000)], nr=[(3000, 4000)])
    for never_renege in (0x00, 0x01):
        packets = tcp_scenario.handshake(nr_flags=(0x00, never_renege)) + tcp_scenario.four_segments()
        found = check(pcaps.write(tmp_path / "both.pcap", packets + [both]))
        assert [(r.rule, list(r.frames)) for r in found.itertuples()] == [("TN-02", [8])], never_renege
        assert list(check(pcaps.write(tmp_path / "apart.pcap", packets + [apart])).rule) == [], never_renege
