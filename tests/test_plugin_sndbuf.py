"""B from the capture in both plugins (issue 25): with no nrsack.sndbuf preference and two passes, the C plugin
(core/sndbuf.c, fed as the analyzer feeds it), the Lua twin (its line-by-line translation) and the analyzer
mark the same frames blocked, and name the same verdict, evidence and B per sender direction, on every
sample capture and on the lab runs of each stack in sample-pcaps/lab/ (linux-tcp, linux-mptcp, usrsctp).

The analyzer's frame is blocked when its last row in that frame is (the row after which the plugins show
the frame's figures). tshark -2 builds no tree in its first pass unless a filter asks for one, and the Lua
twin reads its layers through field extractors, which need a tree: it gets `-R frame` so that its first
pass analyzes (docs/metrics.md, "In the plugins")."""

import pytest

from nrsack.analyzer import analyze
from support import pcaps, tcp_scenario, tshark
from support.paths import SAMPLES, STORED_RUNS

pytestmark = pytest.mark.tshark

CAPTURES = sorted(SAMPLES.rglob("*.pcap"))
LAB = sorted((SAMPLES / "lab").glob("*.pcap"))
SHOWN = ["nrsack.direction", "nrsack.blocked", "nrsack.sndbuf.verdict", "nrsack.sndbuf.reason", "nrsack.sndbuf.bytes",
         "nrsack.sndbuf.source"]
# the Lua twin's first pass needs a tree (module docstring)
FIRST_PASS_TREE = {"c": [], "lua": ["-R", "frame"]}


def plugin_view(plugin, kind, pcap, two_pass=True, prefs=None):
    """({(frame, direction) marked blocked}, {(frame, direction) with no nrsack.blocked},
    {direction: (verdict, reason, B, source) as its last frame shows it})."""
    args = ["-T", "fields", "-E", "occurrence=a", "-E", f"aggregator={tshark.AGGREGATOR}", "-e", "frame.number"]
    for field in SHOWN:
        args += ["-e", field]
    if two_pass:
        args += ["-2", *FIRST_PASS_TREE[kind]]
    out = tshark.run_tshark(args, plugin, prefs={**tshark.GOLDEN_PREFS, **(prefs or {})}, pcap=pcap).stdout
    blocked, unmarked, view = set(), set(), {}
    for line in out.splitlines():
        frame, *cells = line.split("\t")
        columns = [cell.split(tshark.AGGREGATOR) if cell else [] for cell in cells]
        directions, marks = columns[0], columns[1]
        # (an update of a direction that cannot tell has no nrsack.blocked: the marks are of the others)
        verdicts = columns[2]
        marked = iter(marks)
        for i, direction in enumerate(directions):
            verdict = verdicts[i] if i < len(verdicts) else None
            if verdict == "cannot tell":
                unmarked.add((int(frame), direction))
            elif next(marked) in ("1", "True"):
                blocked.add((int(frame), direction))
            view[direction] = tuple(column[i] if i < len(column) else "" for column in columns[2:])
    return blocked, unmarked, view


def analyzer_view(pcap):
    """({(frame, direction) blocked after the frame}, {direction: (verdict, reason, B)})."""
    blocked, view = set(), {}
    for entry in analyze(pcap).entries:
        s = entry.summary
        direction = f"{s['src']} -> {s['dst']}"
        view[direction] = (s["sndbuf_verdict"], s["sndbuf_reason"], "" if s["sndbuf_bytes"] is None else str(s["sndbuf_bytes"]))
        if len(entry.rtxq):
            last = entry.rtxq.groupby("frame").tail(1)
            blocked |= {(int(frame), direction) for frame in last.loc[last["blocked"], "frame"]}
    return blocked, view


@pytest.fixture(scope="module")
def plugins(nrsack_c_plugin):
    return {"c": nrsack_c_plugin, "lua": tshark.LUA_PLUGIN}


@pytest.mark.parametrize("kind", ["c", "lua"])
@pytest.mark.parametrize("pcap", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_two_passes_mark_the_analyzers_frames_with_its_verdict(plugins, kind, pcap):
    blocked, unmarked, view = plugin_view(plugins[kind], kind, pcap)
    want_blocked, want_view = analyzer_view(pcap)
    assert blocked == want_blocked
    for direction, (verdict, reason, sndbuf, source) in view.items():
        assert (verdict, reason, sndbuf) == want_view[direction], direction
        assert source == "estimated from the whole capture"
    # cannot tell: no frame of that direction carries a verdict, and the tree says why
    assert all(view[direction][0] == "cannot tell" for _, direction in unmarked)


@pytest.mark.parametrize("pcap", LAB, ids=lambda p: p.name)
def test_lab_runs_of_each_stack_are_told(plugins, pcap):
    """Not a vacuous agreement: the lab's 16 KiB Linux TCP, usrsctp and 32 KiB MPTCP runs are held back
    and both plugins mark frames (MPTCP: the data level's, blocked until a data-level ack frees room)."""
    want_blocked, want_view = analyzer_view(pcap)
    held_back = {d for d, (verdict, _, _) in want_view.items() if verdict == "held back"}
    if pcap.name.startswith(("linux-tcp-cubic", "usrsctp", "linux-mptcp")):
        assert held_back and {d for _, d in want_blocked} == held_back
    c_blocked, _, _ = plugin_view(plugins["c"], "c", pcap)
    lua_blocked, _, _ = plugin_view(plugins["lua"], "lua", pcap)
    assert c_blocked == lua_blocked == want_blocked


@pytest.mark.parametrize("run, verdict", [("cmt-window-plateau", "never"), ("cmt-window-timeout", "cannot tell")])
def test_the_lab_cmt_window_peaks_are_never_held_back_alike(plugins, run, verdict):
    """The lab's usrsctp CMT runs whose windows peaked at 49,000 of 65,536: one waited long after its last
    freeing ack (a wait's time runs to that ack, core/sndbuf.c sbe_new_data): never; one waited a timeout in
    one of its twelve waits at the peak (top_of_association): cannot tell. Both plugins say what the analyzer
    says and mark nothing."""
    pcap = STORED_RUNS / run / "sender.pcap.gz"
    want_blocked, want_view = analyzer_view(pcap)
    assert want_view["10.0.0.1:5001 -> 10.0.0.2:5002"][0] == verdict and not want_blocked
    for kind in ("c", "lua"):
        blocked, _, view = plugin_view(plugins[kind], kind, pcap)
        assert blocked == want_blocked, kind
        for direction, (verdict, reason, sndbuf, _) in view.items():
            assert (verdict, reason, sndbuf) == want_view[direction], (kind, direction)


def test_one_pass_says_so_far_and_a_given_b_wins(plugins):
    """One pass: each frame shows the estimate as of that frame and says so; with the preference set the
    plugins use it and say "given" (the expected files' B: test_dissector_samples)."""
    pcap = SAMPLES / "lab" / "usrsctp-sack-8k.pcap"
    for kind, plugin in plugins.items():
        _, _, view = plugin_view(plugin, kind, pcap, two_pass=False)
        _, _, first = plugin_view(plugin, kind, pcap, two_pass=False, prefs={"nrsack.sndbuf": "0"})
        assert view == first
        sources = {v[3] for v in view.values()}
        assert sources <= {"estimated so far", "estimated from the whole capture"}, kind
        _, _, given = plugin_view(plugin, kind, pcap, two_pass=False, prefs={"nrsack.sndbuf": "9000"})
        assert {v[2:] for v in given.values()} == {("9000", "given")}, kind


def test_stat_tap_and_lua_statistics_use_the_same_b(plugins):
    """-z nrsack,stat prints the B its blocked time used and how it was obtained; its blocked time with the
    estimate is the analyzer's b; the Lua statistics count the frames the C stats tree counts."""
    pcap = SAMPLES / "lab" / "linux-tcp-cubic-16k.pcap"
    entry = next(e for e in analyze(pcap).entries if e.summary["sndbuf_verdict"] == "held back")
    out = tshark.run_tshark(["-q", "-2", "-z", "nrsack,stat"], plugins["c"], pcap=pcap).stdout
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if f"{entry.summary['src']} -> {entry.summary['dst']}" in line)
    assert lines[row + 1].split()[:4] == ["B", str(entry.summary["sndbuf_bytes"]), "bytes,", "estimated"]
    assert entry.summary["sndbuf_reason"] in lines[row + 1]
    assert float(lines[row].split()[10]) == pytest.approx(entry.summary["b_s"], abs=1e-6)
    c_tree = tshark.run_tshark(["-q", "-2", "-z", "nrsack,tree"], plugins["c"], pcap=pcap).stdout
    c_count = next(int(line.split()[3]) for line in c_tree.splitlines() if "Send-buffer blocked frames" in line)
    lua = tshark.run_tshark(["-q", "-2", "-R", "frame", "-z", "nrsack,tree"], plugins["lua"], pcap=pcap).stdout
    assert f"  Send-buffer blocked frames: {c_count}" in lua.splitlines()
    assert c_count > 0
    assert (f"  Send buffer B: {entry.summary['sndbuf_bytes']} bytes, estimated from the whole capture, held back: "
            f"{entry.summary['sndbuf_reason']}") in lua.splitlines()


@pytest.mark.parametrize("pcap", LAB, ids=lambda p: p.name)
def test_one_pass_estimates_so_far_alike(plugins, pcap):
    """One pass: both plugins refresh the estimate so far alike (as its evidence grows by a sixteenth), so
    they mark the same frames and say the same."""
    assert plugin_view(plugins["c"], "c", pcap, two_pass=False) == plugin_view(plugins["lua"], "lua", pcap, two_pass=False)


def test_a_paced_sender_is_blocked_until_the_freeing_ack_alike(plugins, tmp_path):
    """A held-back TCP transfer whose new data leaves 4 ms after each round's ack (a paced sender,
    core/sndbuf.c SBE_LEVEL_PACED) or 10 µs after it: the same frames in the same order, but the paced one is
    not blocked from the ack that freed room to its new data; each plugin marks what the analyzer does."""
    marked = {}
    for name, answer in (("prompt", 0.00001), ("paced", 0.004)):
        pcap = pcaps.write(tmp_path / f"{name}.pcap", tcp_scenario.window_transfer(0, 1.0, window=8, answer=answer))
        want_blocked, _ = analyzer_view(pcap)
        for kind in ("c", "lua"):
            assert plugin_view(plugins[kind], kind, pcap)[0] == want_blocked, (name, kind)
        marked[name] = want_blocked
    assert marked["paced"] < marked["prompt"] and len(marked["prompt"] - marked["paced"]) >= 40


def simulated_cmt(folder, sndbuf, loss):
    """A simulated CMT association over two paths (10 ms at 20 Mbit/s, 30 ms at 10 Mbit/s) with SACKs and
    drain: the simulator's virtual time, so the same capture on any machine."""
    from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate, write_pcap

    cfg = SimConfig(protocol="cmt", ack="sack", sndbuf=sndbuf, total_bytes=200_000, payload=1000, seed=1,
                    paths=(PathConfig(bandwidth_bps=20e6, delay_s=0.01, loss=loss),
                           PathConfig(bandwidth_bps=10e6, delay_s=0.03, loss=loss)))
    trace = simulate(cfg)
    pcap = folder / f"cmt-{sndbuf}.pcap"
    write_pcap(trace, trace.sender, pcap)
    return pcap


@pytest.mark.parametrize(("sndbuf", "verdict"), [(32000, "held back"), (256000, "never"), (48000, "cannot tell")])
def test_cmt_waits_timed_at_the_highest_level_alike(plugins, tmp_path, sndbuf, verdict):
    """The CMT rule that reads the waits' time at the highest RtxQ (core/sndbuf.c top_of_association): each
    plugin times the waits by its frames' capture times as the analyzer does by its rows' (48,000: one long
    wait alone at the top, which a window's timeout at its peak would make too, so cannot tell)."""
    pcap = simulated_cmt(tmp_path, sndbuf, 0.03)
    want_blocked, want_view = analyzer_view(pcap)
    [association] = [d for d, (v, reason, _) in want_view.items() if reason and reason.startswith("CMT: ")]
    assert want_view[association][0] == verdict and "at the highest RtxQ" in want_view[association][1]
    assert bool(want_blocked) == (verdict == "held back")
    for kind in ("c", "lua"):
        blocked, _, view = plugin_view(plugins[kind], kind, pcap)
        assert blocked == want_blocked, kind
        assert view[association][:3] == want_view[association], kind
    assert plugin_view(plugins["c"], "c", pcap, two_pass=False) == plugin_view(plugins["lua"], "lua", pcap,
                                                                                 two_pass=False)


def clock_stepped_back(pcap, seconds, from_frame):
    """`pcap` (classic pcap) with its frames from `from_frame` (1-based) on moved `seconds` back, before its
    first frame: a capture host's clock set back mid-capture."""
    import struct

    data = bytearray(pcap.read_bytes())
    offset, frame = 24, 1
    while offset < len(data):
        secs, _, caplen, _ = struct.unpack_from("<IIII", data, offset)
        if frame >= from_frame:
            struct.pack_into("<I", data, offset, secs - seconds)
        offset += 16 + caplen
        frame += 1
    out = pcap.with_name(f"{pcap.stem}-stepped-back.pcap")
    out.write_bytes(data)
    return out


def test_cmt_waits_timed_across_a_clock_set_back_alike(plugins, tmp_path):
    """The last new data earlier than the first (a clock set back): the span of the waits is then none in
    both plugins, cannot tell (it was a negative number in the Lua twin and 2^64 less it in the C one, so
    they named opposite verdicts)."""
    pcap = clock_stepped_back(simulated_cmt(tmp_path, 32000, 0.03), 1000, 300)
    views = {kind: plugin_view(plugins[kind], kind, pcap)[2] for kind in ("c", "lua")}
    [association] = [d for d, view in views["c"].items() if view[1].startswith("CMT: ")]
    assert views["c"][association] == views["lua"][association]
    assert views["c"][association][0] == "cannot tell" and "no span" in views["c"][association][1]


def sawtooth_rows():
    """A window climbing a packet per 20 waits from 5 to 9 packets, a loss cutting it back (data unsent
    behind it): the top band is no pile, so not held back (core/sndbuf.c find_ceiling)."""
    rows = [("data", 5000)]
    for _ in range(4):
        for _level in range(5, 9):
            rows += [("ack", 1000), ("data", 1000)] * 19 + [("ack", 1000), ("data", 2000)]
        rows += [("ack", 1000), ("data", 1000)] * 14 + [("ack", 5000), ("data", 1000)]
    return rows


def left_ceiling_rows():
    """41 waits at 12 packets, then with no loss 21 at 9 and 20 at 7: a ceiling left for good, cannot tell
    (core/sndbuf.c left_for_good)."""
    rows = [("data", 12000)] + [("ack", 1000), ("data", 1000)] * 40
    for drop in (3000, 2000):
        rows += [("ack", drop + 1000), ("data", 1000)] + [("ack", 1000), ("data", 1000)] * 20
    return rows


@pytest.mark.parametrize("rows, verdict", [(sawtooth_rows, "never"), (left_ceiling_rows, "cannot tell")],
                         ids=["sawtooth", "left-ceiling"])
def test_a_window_is_told_from_a_buffer_alike(plugins, tmp_path, rows, verdict):
    """The rules that tell a window holding data unsent from a full buffer (a ceiling is the most common band;
    one left for good with no loss cannot tell) give the same verdict, reason and frames in both plugins and
    the analyzer."""
    pcap = pcaps.write(tmp_path / "window.pcap", tcp_scenario.rows_transfer(rows()))
    want_blocked, want_view = analyzer_view(pcap)
    assert [v[0] for v in want_view.values()] == [verdict] and not want_blocked
    for kind in ("c", "lua"):
        blocked, _, view = plugin_view(plugins[kind], kind, pcap)
        assert blocked == want_blocked, kind
        for direction, (got, reason, sndbuf, _) in view.items():
            assert (got, reason, sndbuf) == want_view[direction], (kind, direction)
