"""Both plugins' budget of open flows (docs/decisions.md 84) counts a flow whose packet carried data as one
with data from that packet on, SCTP as TCP: a capture starting mid-flow, every flow seen first by a data
packet, past the budget finishes the least recently active of them "with data" (and keeps the flows
without data, which there are none of here, for first). Before, an SCTP association's first DATA packet
listed it as without data (its scoreboard was read before the packet fed it), so such flows were
finished first and the note counted them without data, where TCP's counted them with data."""

import re

import pytest
from support import pcaps, tshark
from support.sctp_scenario import A, B, TAG_B

pytestmark = pytest.mark.tshark

BUDGET = 4  # the fifth flow passes it: down to three quarters, two finished
NOTE = re.compile(r"GEN-01: (\d+) flows finished before their end, more than (\d+) being open at once "
                  r"\(nrsack\.max_open_flows\): (\d+) without data, (\d+) with data")


def first_packets(kind):
    """Five flows on other ports, one data packet each."""
    if kind == "sctp":
        return [pcaps.sctp_packet(i / 1000, A, B, TAG_B, [pcaps.data_chunk(11)], sport=5000 + 2 * i, dport=6000 + 2 * i)
                for i in range(5)]
    return [pcaps.tcp_packet(i / 1000, A, B, 5000 + 2 * i, 6000 + 2 * i, 1000, 5000, "PA", payload=1000)
            for i in range(5)]


@pytest.mark.parametrize("kind", ["sctp", "tcp"])
@pytest.mark.parametrize("which", ["c", "lua"])
def test_flows_first_seen_with_data_are_finished_as_flows_with_data(kind, which, nrsack_c_plugin, tmp_path):
    plugin = nrsack_c_plugin if which == "c" else tshark.LUA_PLUGIN
    path = pcaps.write(tmp_path / f"{kind}.pcap", first_packets(kind))
    proc = tshark.run_tshark(["-T", "fields", "-E", f"aggregator={tshark.AGGREGATOR}", "-e", "frame.number",
                              "-e", "_ws.expert.message"], plugin, prefs={"nrsack.max_open_flows": BUDGET}, pcap=path)
    assert "Lua Error" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    notes = {int(line.split("\t")[0]): [tuple(map(int, m.groups())) for m in NOTE.finditer(line)]
             for line in proc.stdout.splitlines()}
    assert {f: n for f, n in notes.items() if n} == {5: [(2, BUDGET, 0, 2)]}, proc.stdout
