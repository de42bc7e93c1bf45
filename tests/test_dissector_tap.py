"""`tshark -z nrsack,stat` per flow direction against the expected files of the timelines: data bytes,
max RtxQ under both semantics, blocked time b, p, q and p/q with -o nrsack.sndbuf:<B>; rule counts of a
broken vector."""

import json
import re

import pytest

from nrsack.analyzer import analyze
from support import tshark
from support.hostile import build_all
from support.paths import SAMPLES

pytestmark = pytest.mark.tshark

TIMELINES = [p for p in sorted(SAMPLES.glob("*.expected.json")) if json.loads(p.read_text()).get("flows")]
ROW = re.compile(r"^(\d+)\s+(sctp|tcp|mptcp)\s+(\S+ -> \S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+(\S+)\s+(\S+)\s+(\S+)"
                 r"\s+(\S+)\s+(yes|no)$")


def stat_rows(plugin, pcap, sndbuf):
    out = tshark.run_tshark(["-q", "-z", "nrsack,stat"], plugin, prefs={"nrsack.sndbuf": sndbuf}, pcap=pcap).stdout
    return out, {m.group(3): m for m in map(ROW.match, out.splitlines()) if m}


@pytest.mark.parametrize("expected", TIMELINES, ids=lambda p: p.name.removesuffix(".expected.json"))
def test_stat_matches_expected_file(nrsack_c_plugin, expected):
    spec = json.loads(expected.read_text())
    for flow in spec["flows"]:
        _, rows = stat_rows(nrsack_c_plugin, SAMPLES / spec["capture"], flow["sndbuf_bytes"])
        row = rows[f"{flow['sender']} -> {flow['receiver']}"]
        assert row.group(2) == flow["protocol"]
        assert int(row.group(4)) == flow["data_bytes"]
        assert int(row.group(5)) == max(e["rtxq_sack_bytes"] for e in flow["rtxq"])
        assert int(row.group(6)) == max(e["rtxq_nr_bytes"] for e in flow["rtxq"])
        for group, key in ((7, "b_ms"), (8, "p_ms"), (9, "q_ms")):
            assert float(row.group(group)) == pytest.approx(flow[key] / 1000, abs=1e-6), key
        assert float(row.group(10)) == pytest.approx(flow["p_over_q"], abs=5e-5)
        assert row.group(11) == ("yes" if flow["complete"] else "no")


def test_stat_counts_rules(nrsack_c_plugin):
    out, _ = stat_rows(nrsack_c_plugin, SAMPLES / "broken" / "nr03-revocation.pcap", 0)
    assert "Rule findings: NR-03=1" in out


CLOCK_CAPTURES = [f"{kind}-clock-{step}" for kind in ("tcp", "sctp", "mptcp")
                  for step in ("back-1h", "back-years", "forward-years", "back-10ms", "shuffled", "zero")]


@pytest.mark.parametrize("name", CLOCK_CAPTURES)
def test_stat_clock_never_runs_backwards(nrsack_c_plugin, tmp_path, name):
    """A clock that steps back (or far forward) gives no negative q, b or p: the tap reads the clock as
    the analyzer does (GEN-02, decisions.md 30), so its q is the analyzer's, and q ends at the ack of
    the last data, not at the peer's FIN-ACK after it (metrics.md)."""
    path = tmp_path / f"{name}.pcap"
    path.write_bytes({n: data for n, data, _ in build_all()}[name])
    out, rows = stat_rows(nrsack_c_plugin, path, 3000)
    assert rows, out
    q_of = {f"{e.summary['src']} -> {e.summary['dst']}": e.summary["q_ns"] / 1e9
            for e in analyze(path).entries if e.summary["data_bytes"] and "." not in e.summary["id"]}
    for sender, row in rows.items():
        b, p, q = (float(row.group(g)) for g in (7, 8, 9))
        assert 0 <= p <= b <= q, (sender, out)
        if not name.endswith("shuffled"):  # out of order, a retransmission after the end reopens the analyzer's q only
            assert q == pytest.approx(q_of[sender], abs=1e-6), (sender, out)


TREE_NODE = re.compile(r"^(\s*)(.+?)\s{2,}(\d+)(?:\s+([\d.]+)\s+(\d+)\s+(\d+))?\s")


def tree_nodes(plugin, pcap, sndbuf):
    """`-z nrsack,tree` (the stats tree behind Statistics > NR-SACK in the GUI): {direction: {item: match}}."""
    out = tshark.run_tshark(["-q", "-z", "nrsack,tree"], plugin, prefs={"nrsack.sndbuf": sndbuf}, pcap=pcap).stdout
    nodes, current = {}, None
    for m in map(TREE_NODE.match, out.splitlines()):
        if not m:
            continue
        if not m.group(1):
            current = nodes.setdefault(m.group(2), {})
            current[""] = m
        else:
            current[m.group(2)] = m
    return out, nodes


def test_statistics_menu_tree_is_registered(nrsack_c_plugin):
    """Stats trees are what Wireshark lists in its Statistics menu; tshark lists them with -z help."""
    proc = tshark.run_tshark(["-z", "help"], nrsack_c_plugin, check=False)
    assert {"nrsack,stat", "nrsack,tree"} <= {line.strip() for line in (proc.stdout + proc.stderr).splitlines()}


@pytest.mark.parametrize("expected", TIMELINES, ids=lambda p: p.name.removesuffix(".expected.json"))
def test_tree_agrees_with_stat(nrsack_c_plugin, expected):
    """The GUI's stats tree shows per direction what -z nrsack,stat prints: data bytes, max and mean RtxQ
    under both semantics; and as many blocked frames as the display filter nrsack.blocked == 1 finds."""
    spec = json.loads(expected.read_text())
    pcap, sndbuf = SAMPLES / spec["capture"], spec["flows"][0]["sndbuf_bytes"]
    stat_out, rows = stat_rows(nrsack_c_plugin, pcap, sndbuf)
    tree_out, nodes = tree_nodes(nrsack_c_plugin, pcap, sndbuf)
    assert rows, stat_out
    for name, row in rows.items():
        items = nodes[f"Stream {row.group(1)} {row.group(2)} {name}"]
        assert int(items["Data bytes"].group(3)) == int(row.group(4)), tree_out
        assert int(items["RtxQ bytes (SACK semantics)"].group(6)) == int(row.group(5)), tree_out
        assert int(items["RtxQ bytes (NR-SACK)"].group(6)) == int(row.group(6)), tree_out
        means = row.group(0).split()[8:10]  # after stream, proto, "a -> b", data, max, max
        assert float(items["RtxQ bytes (SACK semantics)"].group(4)) == pytest.approx(float(means[0]), abs=0.051)
        assert float(items["RtxQ bytes (NR-SACK)"].group(4)) == pytest.approx(float(means[1]), abs=0.051)
    blocked = tshark.run_tshark(["-Y", "nrsack.blocked == 1"], nrsack_c_plugin, prefs={"nrsack.sndbuf": sndbuf},
                                pcap=pcap).stdout.splitlines()
    shown = sum(int(items["Send-buffer blocked frames"].group(3)) for items in nodes.values()
                if "Send-buffer blocked frames" in items)
    assert shown == len(blocked), tree_out


LUA_TREE_LINE = re.compile(r"^  (Frames|RtxQ bytes \(NR-SACK\)|RtxQ bytes \(SACK semantics\)|Send-buffer blocked frames): "
                           r"(?:mean ([\d.]+), max )?(\d+)$")


def lua_tree(pcap, sndbuf):
    """The Lua plugin's Statistics > NR-SACK text (`-z nrsack,tree` in tshark): {direction: {item: (mean, n)}}
    and the rule findings line."""
    out = tshark.run_tshark(["-q", "-z", "nrsack,tree"], tshark.LUA_PLUGIN, prefs={"nrsack.sndbuf": sndbuf},
                            pcap=pcap).stdout
    dirs, current, rules = {}, None, None
    for line in out.splitlines():
        if line.startswith("Stream "):
            current = dirs.setdefault(line, {})
        elif line.startswith("Rule findings: "):
            rules = line.removeprefix("Rule findings: ")
        elif m := LUA_TREE_LINE.match(line):
            current[m.group(1)] = (m.group(2), int(m.group(3)))
    return out, dirs, rules


@pytest.mark.parametrize("pcap, sndbuf", [*((SAMPLES / json.loads(p.read_text())["capture"],
                                              json.loads(p.read_text())["flows"][0]["sndbuf_bytes"]) for p in TIMELINES),
                                          (SAMPLES / "broken" / "nr03-revocation.pcap", 0)],
                         ids=lambda v: v.name if hasattr(v, "name") else str(v))
def test_lua_statistics_agree_with_the_c_tree(nrsack_c_plugin, pcap, sndbuf):
    """Both plugins' Statistics > NR-SACK: per direction frames, mean and max RtxQ under both semantics,
    blocked frames, and the rule counts (the C tree names the protocol too; Lua's results keep none)."""
    c_out, c_nodes = tree_nodes(nrsack_c_plugin, pcap, sndbuf)
    lua_out, lua_dirs, lua_rules = lua_tree(pcap, sndbuf)
    c_dirs = {re.sub(r"^(Stream \S+) (?:sctp|tcp|mptcp) ", r"\1 ", name): items for name, items in c_nodes.items()
              if name.startswith("Stream ")}
    assert c_dirs.keys() == lua_dirs.keys() and c_dirs, (c_out, lua_out)
    for name, items in c_dirs.items():
        lua = lua_dirs[name]
        assert int(items[""].group(3)) == lua["Frames"][1]
        for item in ("RtxQ bytes (NR-SACK)", "RtxQ bytes (SACK semantics)"):
            assert (items[item].group(4), int(items[item].group(6))) == lua[item], (item, c_out, lua_out)
        blocked = items.get("Send-buffer blocked frames")
        assert (int(blocked.group(3)) if blocked else 0) == lua["Send-buffer blocked frames"][1]
    c_rules = sorted(f"{name.strip()}={m.group(3)}" for name, m in c_nodes.get("Rule findings", {}).items() if name)
    assert sorted(lua_rules.split()) == (c_rules or ["none"]), (c_out, lua_out)
