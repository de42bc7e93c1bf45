"""The MPTCP data level counts only what the capture shows carried (issue 29; decisions.md 70).

The random-DSS capture class (tests/support/hostile.py: mptcp_random_dss): a valid handshake, then small
segments whose DSS options have random flags, lengths and Data-Level Lengths around plausible numbers.
Per direction, `nrsack analyze`'s data_bytes stays within the payload that direction's segments carried
(a mapping's length bounds the data, never creates it: the reverse direction sends no payload and has
no data level), and the C plugin, the Lua plugin and the analyzer give the same data-level figures after
every frame, on this class (random seeds, one at the probe's size) and on the DSS shape table
(tests/test_lua_dss.py).
"""

from __future__ import annotations

import json
import random

import pytest

from support import pcaps, tshark
from support.cli import invoke
from support.hostile import A, B, ip_frames, mptcp_random_dss, pcap_bytes, plain_records
from support.lua_compare import analyzer_level_rows, lua_rows, states_after_frames
from support.tshark import LUA_PLUGIN

SEEDS = range(6)
PROBE_SIZE = 5248  # client segments (and as many server acks): 10,496 segments, as issue 29's probe
ENDPOINTS = {"192.0.2.1:41000": A, "198.51.100.2:443": B}


def payload_by_sender(transfer) -> dict:
    """sender address -> the TCP payload bytes its segments carried."""
    carried = {A: 0, B: 0}
    for _, direction, segment, _ in transfer:
        offset = (segment[12] >> 4) * 4
        carried[A if direction == 0 else B] += len(segment) - offset
    return carried


def data_level_length(segment) -> int:
    """The Data-Level Length of the segment's DSS mapping (its first option), 0 without one."""
    if len(segment) < 24 or segment[20] != 30 or segment[22] >> 4 != 2 or not segment[23] & 0x04:
        return 0
    flags = segment[23]
    at = 24 + ((8 if flags & 0x02 else 4) if flags & 0x01 else 0) + (8 if flags & 0x08 else 4) + 4
    return int.from_bytes(segment[at:at + 2], "big") if at + 2 <= 20 + segment[21] else 0


def capture(tmp_path, seed, segments=600):
    transfer = mptcp_random_dss(random.Random(seed), segments)
    path = tmp_path / f"mptcp-dss-mapped-random-{seed}-{segments}.pcap"
    path.write_bytes(pcap_bytes(plain_records(ip_frames(transfer))))
    return path, transfer


@pytest.mark.parametrize("seed, segments", [(seed, 600) for seed in SEEDS] + [(100, PROBE_SIZE)])
def test_data_bytes_within_the_payload_carried(seed, segments, tmp_path):
    path, transfer = capture(tmp_path, seed, segments)
    result = invoke("analyze", "--format", "json", path)
    assert result.exit_code == 0, result.output
    flows = json.loads(result.stdout[result.stdout.index("{"):])["flows"]
    carried = payload_by_sender(transfer)
    levels = [f for f in flows if f["protocol"] == "mptcp"]
    assert levels, flows
    for flow in levels:  # the data levels and the subflow entries
        assert 0 <= flow["acked_bytes"] <= flow["data_bytes"] <= carried[ENDPOINTS[flow["src"]]], flow
    # the server sends no payload: no data level of its own
    assert all(ENDPOINTS[f["src"]] == A for f in levels), levels
    # the class claims far more through its mappings than the payload carried, and some of it is mapped
    claimed = sum(data_level_length(segment) for _, direction, segment, _ in transfer if direction == 0)
    assert claimed > carried[A] and levels[0]["data_bytes"] > 0


def compared(pcap, tmp_path, c_plugin):
    """frame -> {direction: figures} of the C plugin, the Lua plugin and the analyzer."""
    rows = [lua_rows(tshark.parse_golden(tshark.golden_output(pcap, plugin, sndbuf=3000))) for plugin in (c_plugin, LUA_PLUGIN)]
    rows.append(analyzer_level_rows(pcap, tmp_path))
    frames = {frame for r in rows for frame, _ in r}
    return [states_after_frames(r, frames) for r in rows]


def assert_frame_by_frame(c, lua, analyzer):
    for name, other in (("Lua plugin", lua), ("analyzer", analyzer)):
        differ = [f for f in c if c[f] != other[f]]
        assert not differ, (name, len(differ), differ[0], c[differ[0]], other[differ[0]])


@pytest.mark.tshark
@pytest.mark.parametrize("seed, segments", [(seed, 600) for seed in SEEDS] + [(100, PROBE_SIZE)])
def test_c_lua_and_analyzer_agree_on_every_frame(seed, segments, tmp_path, nrsack_c_plugin):
    path, _ = capture(tmp_path, seed, segments)
    c, lua, analyzer = compared(path, tmp_path, nrsack_c_plugin)
    assert any(any(d["rtxq_sack_bytes"] for d in state.values()) for state in c.values())  # data was counted
    assert_frame_by_frame(c, lua, analyzer)


@pytest.mark.tshark
def test_dss_shape_table_frame_by_frame(tmp_path, nrsack_c_plugin):
    from test_lua_dss import dss_capture
    pcap = pcaps.write(tmp_path / "dss-shapes.pcap", dss_capture())
    c, lua, analyzer = compared(pcap, tmp_path, nrsack_c_plugin)
    assert any(any(d["rtxq_sack_bytes"] for d in state.values()) for state in c.values())
    assert_frame_by_frame(c, lua, analyzer)
