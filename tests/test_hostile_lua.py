"""The hostile-capture suite (tests/support/hostile.py) through tshark with the Lua plugin.

Every capture: tshark exits as it does with the C plugin (0, or its own complaint about a cut-short or
damaged file: the plugin adds no failure), no Lua error anywhere in the output, and every figure within
its bounds (0 <= rtxq_nr, whatif <= rtxq_sack <= what the capture's frames can hold; nr_acked <= sacked).
Then the same nrsack fields and findings as the C plugin on every capture: both follow the scoreboard
core (docs/scoreboard.md) and the same flow ends (decisions.md 44). On the captures with acks far from
the window (ANALYZER_AGREES) Lua's RtxQ after every frame also equals `nrsack analyze`'s: the three
tools share the far-value rule (SERIAL_FAR, decisions.md 33).
"""

from __future__ import annotations

import pytest

from support import tshark
from support.hostile import build_all
from support.tshark import LUA_PLUGIN
from support.hostile import frame_bytes_bound
from support.lua_compare import analyzer_rows, lua_rows

pytestmark = pytest.mark.tshark

CAPTURES = {name: data for name, data, _ in build_all()}
LUA_ERRORS = ("analysis stopped", "Lua: Error", "Lua error", "attempt to ", "stack traceback")

ANALYZER_AGREES = {"tcp-ack-2pow31-away", "tcp-acks-random-far", "sctp-ack-2pow31-away"}


def fields_run(path, plugin):
    args = ["-T", "fields", "-E", "header=y", "-E", "occurrence=a", "-E", f"aggregator={tshark.AGGREGATOR}",
            "-E", "separator=/t", "-z", "expert"]
    for f in ["frame.number", *tshark.NRSACK_FIELDS, "_ws.expert.severity", "_ws.expert.message"]:
        args += ["-e", f]
    return tshark.run_tshark(args, plugin, prefs=tshark.golden_prefs(3000), pcap=path, check=False)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-lua")
    paths = {}
    for name, data in CAPTURES.items():
        paths[name] = folder / f"{name}.pcap"
        paths[name].write_bytes(data)
    return paths


def test_the_suite_is_whole():
    assert len(CAPTURES) >= 100
    assert ANALYZER_AGREES <= set(CAPTURES)


def check_bounds(golden, bound):
    for row in golden.rows:
        for i, _ in enumerate(row["nrsack.direction"]):
            v = {f: int(row[f][i]) for f in ("nrsack.rtxq.sack_bytes", "nrsack.rtxq.nr_bytes", "nrsack.rtxq.whatif_bytes",
                                              "nrsack.rtxq.sacked_bytes", "nrsack.rtxq.nr_acked_bytes")}
            sack = v["nrsack.rtxq.sack_bytes"]
            assert 0 <= v["nrsack.rtxq.nr_bytes"] <= sack <= bound, (row["frame.number"], v)
            assert 0 <= v["nrsack.rtxq.whatif_bytes"] <= sack, (row["frame.number"], v)
            assert 0 <= v["nrsack.rtxq.nr_acked_bytes"] <= v["nrsack.rtxq.sacked_bytes"] <= sack, (row["frame.number"], v)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_lua_on_hostile_capture(name, hostile, nrsack_c_plugin, tmp_path):
    path = hostile[name]
    lua, c = fields_run(path, LUA_PLUGIN), fields_run(path, nrsack_c_plugin)
    assert lua.returncode == c.returncode, lua.stderr
    for marker in LUA_ERRORS:
        assert marker not in lua.stdout and marker not in lua.stderr, (marker, lua.stderr[-2000:])
    if lua.returncode != 0:  # tshark refused or stopped on the file: the frames it gave are compared
        assert lua.stdout == c.stdout
        return
    golden = tshark.parse_golden(tshark.golden_output(path, LUA_PLUGIN, sndbuf=3000))
    check_bounds(golden, frame_bytes_bound(path))
    assert lua.stdout == c.stdout, "the Lua and C plugins differ (tests/test_lua_parity.py's diff helps)"
    if name in ANALYZER_AGREES:
        assert lua_rows(golden) == analyzer_rows(path, tmp_path)
