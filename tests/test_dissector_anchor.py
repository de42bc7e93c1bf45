"""C plugin: each direction's serial space is anchored on the handshake (INIT / INIT-ACK initial TSN, SYN
ISN + 1) and, without one, on the lowest serial seen (docs/scoreboard.md "anchor"). Receiver-side
captures whose first DATA chunk / segment was lost show later serials before the lowest one: they must
give no GEN-01 and, after every scoreboard change, the same RtxQ figures as `nrsack analyze`.

Scenarios (1000-byte units from A): the first unit is lost before the capture point, the next three
arrive, the receiver acks them in gap blocks (SCTP: TSN 12 in an R block, 13-14 NR-acked; TCP: SACK),
the lost unit is retransmitted, then all is cum-acked. Also across the 32-bit wrap, and with the
capture starting mid-association (no handshake at all)."""

import pytest

from nrsack.analyzer import analyze
from support import pcaps, tcp_scenario, tshark
from support.sctp_scenario import A, B, TAG_A, TAG_B, ack, data

pytestmark = pytest.mark.tshark

COMPARED = {  # plugin field -> analyzer column
    "nrsack.rtxq.sack_bytes": "rtxq_sack_bytes",
    "nrsack.rtxq.nr_bytes": "rtxq_nr_bytes",
    "nrsack.rtxq.whatif_bytes": "rtxq_whatif_bytes",
    "nrsack.rtxq.sacked_bytes": "sacked_bytes",
    "nrsack.rtxq.nr_acked_bytes": "nr_acked_bytes",
    "nrsack.gap_open": "gap_open",
}


def sctp_first_lost(first_tsn, with_handshake=True):
    """INIT announces first_tsn; first_tsn itself is lost on the way to the capture point (at B)."""
    t = [(first_tsn + k) & 0xFFFFFFFF for k in range(4)]
    init = [pcaps.sctp_packet(0.0, A, B, 0, [pcaps.init_chunk(TAG_A, t[0], ext=[pcaps.NR_SACK])]),
            pcaps.sctp_packet(0.1, B, A, TAG_A, [pcaps.init_chunk(TAG_B, 1, ext=[pcaps.NR_SACK], ack=True)],
                              sport=5001, dport=5000)]
    cum = (t[0] - 1) & 0xFFFFFFFF
    return (init if with_handshake else []) + [
        data(0.2, t[1]), data(0.201, t[2]), data(0.202, t[3]),
        ack(0.3, pcaps.nr_sack_chunk(cum, r_gaps=[(2, 2)], nr_gaps=[(3, 4)])),
        data(0.35, t[0]),
        ack(0.4, pcaps.nr_sack_chunk(t[3])),
    ]


def tcp_first_lost(isn, with_handshake=True):
    s = tcp_scenario
    sack = ("SAck", ((isn + 1001) & 0xFFFFFFFF, (isn + 4001) & 0xFFFFFFFF))  # 32-bit wire values
    return (s.handshake(isn=(isn, 5000)) if with_handshake else []) + [
        s.seg(0.2, 1, isn), s.seg(0.201, 2, isn), s.seg(0.202, 3, isn),
        s.ack(0.3, 0, isn=isn, extra=[sack]),
        s.seg(0.35, 0, isn),
        s.ack(0.4, 4000, isn=isn),
    ]


CASES = {
    "sctp-handshake": sctp_first_lost(11),
    "sctp-handshake-wrap": sctp_first_lost(0xFFFFFFFF),
    "sctp-mid-association": sctp_first_lost(11, with_handshake=False),
    "sctp-mid-association-wrap": sctp_first_lost(0xFFFFFFFE, with_handshake=False),
    "tcp-handshake": tcp_first_lost(1000),
    "tcp-handshake-wrap": tcp_first_lost(0xFFFFFFFF - 1500),
    "tcp-mid-connection": tcp_first_lost(1000, with_handshake=False),
}


def plugin_rows(golden, direction):
    """frame -> {field: value} of the plugin's update for `direction`."""
    rows = {}
    for row in golden.rows:
        for i, name in enumerate(row["nrsack.direction"]):
            if name == direction:
                rows[int(row["frame.number"][0])] = {f: row[f][i] for f in COMPARED}
    return rows


def analyzer_rows(path):
    a = analyze(path)
    top = a.summary[a.summary.parent.isna()]
    assert len(top) == 1, "one sender direction carries data"
    flow = top.iloc[0]
    rows = {}
    for r in a.rtxq[a.rtxq.flow == flow.id].itertuples():
        rows[int(r.frame)] = {f: str(int(getattr(r, col))) for f, col in COMPARED.items()}
    return f"{flow.src} -> {flow.dst}", rows


@pytest.mark.parametrize("name", CASES)
def test_first_unit_lost_gives_no_gen01_and_the_analyzers_figures(name, nrsack_c_plugin, tmp_path):
    path = pcaps.write(tmp_path / f"{name}.pcap", CASES[name])
    g = tshark.parse_golden(tshark.golden_output(path, nrsack_c_plugin))
    assert not [e for e in g.expert if e[1] == "GEN-01"], g.expert
    direction, expected = analyzer_rows(path)
    got = plugin_rows(g, direction)
    assert got == expected
    # the lost unit's retransmission is a first transmission here: the queue grows, then empties
    last_data, last_ack = sorted(got)[-2:]
    assert int(got[last_data]["nrsack.rtxq.sack_bytes"]) == 4000
    assert got[last_ack]["nrsack.rtxq.sack_bytes"] == "0"
