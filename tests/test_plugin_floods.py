"""Both plugins under floods of flows that never end (issue 29; docs/decisions.md 84, "The plugins' budget
of open flows"): past nrsack.max_open_flows the least recently active flows are finished early, those
without data first, each time with the same GEN-01 note in C and Lua, and what a plugin adds to tshark's
own peak memory stays bounded. 100,000 flows of each kind (support.hostile.write_flood); the bench
(bench/bench_plugin_flows.py --flood) measures a million. Peak RSS, never time: each run's own
(run_tshark_measured), against tshark alone on the same capture in the same test."""

import re

import pytest
from support import tshark
from support.hostile import write_flood
from support.tshark import LUA_PLUGIN, run_tshark_measured, target_unavailable

pytestmark = [pytest.mark.tshark, pytest.mark.slow,
              pytest.mark.skipif(target_unavailable() is not None, reason=str(target_unavailable()))]

FLOWS = 100_000
BUDGET = 10_000  # the plugins' default, passed explicitly so the test says what it holds
CAP_MB = 6000    # a run gone wrong fails instead of taking the machine's memory
# What each plugin may add to tshark's own peak on 100,000 flows. Measured (docs/decisions.md 84, 93): C +56 MB
# (syn) and +143 MB (data); Lua +47 MB and +490 MB since its compact results (before: +324 MB and +1.22 GB;
# before the budget C added 383 MB and 436 MB, Lua 3.2 GB and 4.1 GB). Lua's figure moves with its
# collector's pace and Lua's version, hence the room.
ADDED_MB = {("c", "syn"): 200, ("c", "data"): 400, ("lua", "syn"): 300, ("lua", "data"): 1000}
NOTE = re.compile(r"GEN-01: (\d+) flows finished before their end, more than (\d+) being open at once "
                  r"\(nrsack\.max_open_flows\): (\d+) without data, (\d+) with data finished at their last packet")


@pytest.fixture(scope="module")
def floods(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugin-floods")
    paths = {}
    for kind in ("syn", "data"):
        paths[kind] = folder / f"{kind}.pcap"
        write_flood(paths[kind], FLOWS, kind)
    return paths


@pytest.fixture(scope="module")
def alone(floods):
    """tshark's own peak on each capture, reading the same protocol fields."""
    peaks = {}
    for kind, pcap in floods.items():
        proc, peak, _ = run_tshark_measured(["-T", "fields", "-e", "frame.number", "-e", "tcp.stream"],
                                         tshark.Plugin.none(), pcap=pcap, cap_mb=CAP_MB)
        assert proc.returncode == 0, proc.stderr[-2000:]
        peaks[kind] = peak
    return peaks


def flood_run(plugin, pcap):
    """-> (frame -> the budget's notes on it, the frames with a stream, peak RSS MB)."""
    args = ["-T", "fields", "-E", f"aggregator={tshark.AGGREGATOR}", "-e", "frame.number", "-e", "tcp.stream",
            "-e", "nrsack.stream", "-e", "_ws.expert.message"]
    proc, peak, _ = run_tshark_measured(args, plugin, prefs={"nrsack.max_open_flows": BUDGET}, pcap=pcap, cap_mb=CAP_MB)
    assert proc.returncode == 0 and "Lua Error" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    notes, streams = {}, 0
    for line in proc.stdout.splitlines():
        frame, _, stream, messages = line.split("\t")
        streams += stream != ""
        found = [m.groups() for m in map(NOTE.match, messages.split(tshark.AGGREGATOR)) if m]
        if found:
            notes[int(frame)] = [tuple(map(int, f)) for f in found]
    return notes, streams, peak


@pytest.fixture(scope="module")
def runs(floods, nrsack_c_plugin):
    return {(which, kind): flood_run(plugin, pcap) for kind, pcap in floods.items()
            for which, plugin in (("c", nrsack_c_plugin), ("lua", LUA_PLUGIN))}


@pytest.mark.parametrize("kind", ["syn", "data"])
def test_both_plugins_finish_the_same_flows_early_with_the_same_notes(kind, runs):
    c_notes, c_streams, _ = runs[("c", kind)]
    lua_notes, lua_streams, _ = runs[("lua", kind)]
    assert c_notes == lua_notes
    assert c_streams == lua_streams == FLOWS * (1 if kind == "syn" else 5)
    counts = [n for notes in c_notes.values() for n in notes]
    for total, budget, without_data, with_data in counts:
        assert budget == BUDGET and total == without_data + with_data == BUDGET // 4 + 1
    # all but the flows still open at the end were finished, the oldest first: down to 3/4 of the budget
    assert FLOWS - BUDGET <= sum(n[0] for n in counts) <= FLOWS - BUDGET * 3 // 4
    if kind == "syn":
        assert all(n[3] == 0 for n in counts)
    else:  # the data flows' five packets come together: the finished ones mostly carried data
        assert sum(n[3] for n in counts) > sum(n[2] for n in counts)


@pytest.mark.parametrize("which", ["c", "lua"])
@pytest.mark.parametrize("kind", ["syn", "data"])
def test_what_a_plugin_adds_to_tsharks_memory_stays_bounded(which, kind, runs, alone):
    *_, peak = runs[(which, kind)]
    assert peak - alone[kind] < ADDED_MB[(which, kind)], f"{which} on {kind}: {peak:.0f} MB, tshark alone {alone[kind]:.0f} MB"
