"""The analyzer anchors each sender direction on the handshake, as the plugins do (docs/scoreboard.md
"anchor", decisions.md 49): a fresh serial space starts at the INIT / INIT-ACK initial TSN or the SYN /
SYN-ACK ISN + 1 when the flow's chunk holds it (analyzer/state/flows.py handshake_space), not at the first
serial seen.

Where it shows: a capture whose first serial after the handshake lies more than SERIAL_FAR (2^30) from
the rest (a record from far later in the transfer, or a damaged field, comes first). Anchored on it, the
analyzer took that record as data (for ever in its RtxQ) and refused the real first serials as far; on
the handshake, it refuses the far one (GEN-01) as the C plugin does, and the two show the same RtxQ
after every frame. Where the first serial seen is merely not the lowest (a later DATA comes first,
within the window) the anchor changes no figure: the unwrapping rule only looks at distances, which
a handful of TSNs does not change. Both cases are compared with both plugins frame by frame.
"""

from __future__ import annotations

import pytest

from nrsack.analyzer.state import flows
from support import pcaps, tcp_scenario, tshark
from support.lua_compare import analyzer_rows, lua_rows
from support.sctp_scenario import A, B, ack, data, handshake, nr
from support.tshark import LUA_PLUGIN

pytestmark = pytest.mark.tshark

FAR = 1_500_000  # units between the far record and the transfer's start: beyond SERIAL_FAR (2^30 bytes)


def sctp(first):
    """INIT announces TSN 11; `first` (TSNs) comes before 11..14, which are then acked."""
    return handshake() + [data(0.15, *first)] + [data(0.2 + i / 1000, tsn) for i, tsn in enumerate(range(11, 15))] + [
        ack(0.3, nr(12, (2, 2))), ack(0.31, nr(14))]


def tcp_far_first(isn=1000):
    """The segment FAR kB into the transfer is recorded between the SYN and the SYN-ACK."""
    s = tcp_scenario
    syn, synack, third = s.handshake(isn=(isn, 5000))
    return [syn, s.seg(0.05, FAR, isn), synack, third, *s.four_segments(isn), s.ack(0.3, 2000), s.ack(0.31, 4000)]


CASES = {  # name -> (packets, the far record's frame or None)
    "sctp-far-tsn-first": (sctp([11 + (1 << 31) + 5]), 3),
    "tcp-far-segment-first": (tcp_far_first(), 2),
    "sctp-later-tsn-first": (sctp([13]), None),  # 13 again among 11..14: a retransmission
}
DATA_DIR = {"sctp": f"{A}:5000 -> {B}:5001", "tcp": f"{tcp_scenario.A}:{tcp_scenario.PA} -> {tcp_scenario.B}:{tcp_scenario.PB}"}


@pytest.mark.parametrize("name", CASES)
def test_analyzer_anchors_on_the_handshake_like_the_plugins(name, nrsack_c_plugin, tmp_path):
    pcap = pcaps.write(tmp_path / f"{name}.pcap", CASES[name][0])
    golden = tshark.parse_golden(tshark.golden_output(pcap, nrsack_c_plugin))
    analyzer = analyzer_rows(pcap, tmp_path)
    assert lua_rows(golden) == analyzer
    assert lua_rows(tshark.parse_golden(tshark.golden_output(pcap, LUA_PLUGIN))) == analyzer
    far = CASES[name][1] is not None
    assert bool([e for e in golden.expert if e[1] == "GEN-01"]) == far, golden.expert
    # every unit of the transfer entered the queue and left it: the far record never did
    mine = [row for (frame, direction), row in sorted(analyzer.items()) if direction == DATA_DIR[name[:name.index("-")]]]
    assert max(r["rtxq_sack_bytes"] for r in mine) == 4000 and mine[-1]["rtxq_sack_bytes"] == 0, mine


@pytest.mark.parametrize("name", [n for n, (_, far) in CASES.items() if far])
def test_without_the_handshake_anchor_the_far_record_was_adopted(name, monkeypatch, tmp_path):
    """The control: anchored on the first serial seen, the analyzer queued the far record as data."""
    pcap = pcaps.write(tmp_path / f"{name}.pcap", CASES[name][0])
    monkeypatch.setattr(flows, "handshake_space", lambda *args: None)
    rows = {frame: row for (frame, direction), row in analyzer_rows(pcap, tmp_path).items()
            if direction == DATA_DIR[name[:name.index("-")]]}
    assert rows[CASES[name][1]]["rtxq_sack_bytes"] == 1000, rows
