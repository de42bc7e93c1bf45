"""The plugins' budget of open flows (docs/decisions.md 84) holds an MPTCP connection as one flow, its
subflows together, at the connection's last activity: an idle subflow is not finished while its connection
is active on another. Before, each subflow was a flow of its own: the idle one was finished first, and its
next segment started a new connection, splitting the data level in two streams.

Scenario (budget 4, down to 3 past it): an MPTCP connection with two subflows, data-level segment 0 on the
initial one and 1 on the joined one; four plain TCP flows with data arrive, the initial subflow carrying
segment 2 between the second and the third; then the joined subflow, idle since segment 1, carries segment 3
and a DATA ACK on the initial subflow acks all four. Past the budget at the fourth plain flow, the two
oldest plain flows are finished; the MPTCP connection, active since, is not."""

import re

import pytest
from support import pcaps, tshark
from support.tcp_scenario import A, A2, B, KEY_B, PA, PB, mack, mptcp_handshake, mseg, token

pytestmark = pytest.mark.tshark

BUDGET = 4
NOTE = re.compile(r"GEN-01: (\d+) flows finished before their end, more than (\d+) being open at once "
                  r"\(nrsack\.max_open_flows\): (\d+) without data, (\d+) with data")
JOINED = dict(src=A2, sport=PA + 1, isn=7000)
MPTCP_FRAMES = [1, 2, 3, 4, 5, 6, 7, 8, 11, 14, 15]


def plain_flow(t, i):
    """A plain TCP flow's one data packet."""
    return pcaps.tcp_packet(t, A, B, 5000 + 2 * i, 6000 + 2 * i, 1000, 5000, "PA", payload=100)


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    join = [pcaps.tcp_packet(0.15, A2, B, PA + 1, PB, 7000, 0, "S", [pcaps.mptcp_join_syn_option(token(KEY_B))]),
            pcaps.tcp_packet(0.16, B, A2, PB, PA + 1, 9000, 7001, "SA", []),
            pcaps.tcp_packet(0.17, A2, B, PA + 1, PB, 7001, 9001, "A", [])]
    packets = (mptcp_handshake() + join
               + [mseg(0.2, 0), mseg(0.201, 1, k=0, **JOINED),           # frames 7, 8
                  plain_flow(0.21, 0), plain_flow(0.22, 1),              # 9, 10
                  mseg(0.23, 2, k=1),                                    # 11: the initial subflow stays active
                  plain_flow(0.24, 2), plain_flow(0.25, 3),              # 12, 13: past the budget
                  mseg(0.26, 3, k=1, **JOINED),                          # 14: the joined subflow, idle since 8
                  mack(0.3, 4000)])                                      # 15
    return pcaps.write(tmp_path_factory.mktemp("mptcp-budget") / "idle-subflow.pcap", packets)


FIELDS = ["nrsack.stream", "nrsack.direction", "nrsack.rtxq.sack_bytes", "nrsack.rtxq.bytes", "nrsack.gap_open",
          "_ws.expert.message"]


def run(plugin, capture, two_pass):
    args = ["-T", "fields", "-E", f"aggregator={tshark.AGGREGATOR}", "-e", "frame.number"]
    for f in FIELDS:
        args += ["-e", f]
    proc = tshark.run_tshark(args + (["-2"] if two_pass else []), plugin, prefs={"nrsack.max_open_flows": BUDGET},
                             pcap=capture)
    assert "Lua Error" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    return {int(line.split("\t")[0]): dict(zip(FIELDS, line.split("\t")[1:])) for line in proc.stdout.splitlines()}


@pytest.mark.parametrize("two_pass", [False, True], ids=["one-pass", "two-pass"])
@pytest.mark.parametrize("which", ["c", "lua"])
def test_an_idle_subflow_stays_with_its_active_connection(capture, nrsack_c_plugin, which, two_pass):
    rows = run(nrsack_c_plugin if which == "c" else tshark.LUA_PLUGIN, capture, two_pass)
    assert {rows[f]["nrsack.stream"] for f in MPTCP_FRAMES} == {"0"}, "one MPTCP connection, one stream"
    # the data level goes on: segments 0-3 outstanding at the joined subflow's segment, then all acked
    assert rows[14]["nrsack.rtxq.sack_bytes"] == "4000" and rows[15]["nrsack.rtxq.bytes"] == "0"
    notes = {f: [tuple(map(int, m.groups())) for m in NOTE.finditer(r["_ws.expert.message"])] for f, r in rows.items()}
    # the MPTCP connection is one flow: the fourth plain flow passes the budget, the two oldest go
    assert {f: n for f, n in notes.items() if n} == {13: [(2, BUDGET, 0, 2)]}
    assert [rows[f]["nrsack.stream"] for f in (9, 10, 12, 13)] == ["1", "2", "3", "4"]


@pytest.mark.parametrize("two_pass", [False, True], ids=["one-pass", "two-pass"])
def test_both_plugins_agree_on_every_field(capture, nrsack_c_plugin, two_pass):
    assert run(nrsack_c_plugin, capture, two_pass) == run(tshark.LUA_PLUGIN, capture, two_pass)
