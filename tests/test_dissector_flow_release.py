"""C plugin, per-flow state (docs/decisions.md 44): a flow's scoreboard (the core's malloc'ed sets) is released when
the flow ends (SCTP SHUTDOWN-COMPLETE or ABORT; TCP RST, or a FIN each way, each acked) and, for every
flow still open, when the capture file closes; the frames keep what they showed, on every pass.

Observable: after the end, a late DATA chunk / segment on the same ports is not fed to the ended flow:
it starts a new flow (a new nrsack.stream, figures from nothing), as a capture starting mid-flow would
(decisions.md 44, as the Lua plugin does); the first and the second pass (-2) show the same. Under
ASan with leak detection, no block the plugin allocated with malloc / realloc (only the core does:
the plugin's own code allocates through GLib and wmem) is left when tshark exits."""

import re

import pytest

from support import fuzz, pcaps, tcp_scenario, tshark
from support.sctp_scenario import ack, data, handshake, nr, sent

pytestmark = pytest.mark.tshark

SHUTDOWN_COMPLETE, ABORT = 0x0E, 0x06


def sctp_ended_by(chunk_type):
    return handshake() + sent(11, 12) + [ack(0.3, nr(12)), ack(0.31, pcaps.chunk(chunk_type, b"")), data(0.4, 13),
                                         ack(0.41, nr(13))]


def tcp_ended(how):
    s, isn = tcp_scenario, 1000
    A, B, PA, PB = s.A, s.B, s.PA, s.PB
    end = {
        "rst": [pcaps.tcp_packet(0.31, B, A, PB, PA, 5001, isn + 1001, "RA")],
        "fin": [pcaps.tcp_packet(0.31, A, B, PA, PB, isn + 1001, 5001, "FA"),
                pcaps.tcp_packet(0.32, B, A, PB, PA, 5001, isn + 1002, "FA"),
                pcaps.tcp_packet(0.33, A, B, PA, PB, isn + 1002, 5002, "A")],
    }[how]
    late = pcaps.tcp_packet(0.4, A, B, PA, PB, isn + 1002, 5002, "A", payload=1000)
    return s.handshake() + [s.seg(0.2, 0), s.ack(0.3, 1000)] + end + [late, s.ack(0.41, 2001)]


CASES = {
    "sctp-shutdown-complete": (sctp_ended_by(SHUTDOWN_COMPLETE), 6),
    "sctp-abort": (sctp_ended_by(ABORT), 6),
    "tcp-rst": (tcp_ended("rst"), 6),
    "tcp-fin-both-ways": (tcp_ended("fin"), 8),
}


@pytest.mark.parametrize("name", CASES)
def test_an_ended_flow_is_analysed_no_more(name, nrsack_c_plugin, tmp_path):
    packets, end_frame = CASES[name]
    path = pcaps.write(tmp_path / f"{name}.pcap", packets)
    first = tshark.parse_golden(tshark.golden_output(path, nrsack_c_plugin))
    rows = {int(r["frame.number"][0]): r for r in first.rows}
    shown = [f for f in sorted(rows) if rows[f]["nrsack.rtxq.sack_bytes"] and f <= end_frame]
    assert rows[shown[-1]]["nrsack.rtxq.sack_bytes"] == ["0"], "the last ack before the end emptied the queue"
    ended, late = rows[shown[-1]]["nrsack.stream"], rows[end_frame + 1]
    assert late["nrsack.stream"] != ended and late["nrsack.rtxq.sack_bytes"] == ["1000"], late
    assert all(rows[f]["nrsack.stream"] != ended for f in range(end_frame + 1, len(packets) + 1))
    second = tshark.parse_golden(tshark.golden_output(path, nrsack_c_plugin, two_pass=True))
    assert second.rows == first.rows


def test_the_same_flow_not_ended_goes_on(nrsack_c_plugin, tmp_path):
    """The control: without the end chunk the late DATA chunk is queued (so the test above can fail)."""
    packets = handshake() + sent(11, 12) + [ack(0.3, nr(12)), data(0.4, 13)]
    g = tshark.parse_golden(tshark.golden_output(pcaps.write(tmp_path / "open.pcap", packets), nrsack_c_plugin))
    assert g.row(6)["nrsack.rtxq.sack_bytes"] == ["1000"]


# an LSan report block: "Direct leak of N byte(s) ..." followed by its stack frames
LEAK_BLOCK = re.compile(r"^(Direct|Indirect) leak of \d+ byte\(s\).*?(?=^\S|\Z)", re.M | re.S)
ALLOCATOR = re.compile(r"#0 .* in __interceptor_(malloc|calloc|realloc)")


def core_leaks(stderr: str) -> list[str]:
    """Leaks whose allocator was called straight from the plugin (unloaded at exit: "<unknown module>")."""
    out = []
    for block in LEAK_BLOCK.finditer(stderr):
        frames = [line.strip() for line in block.group(0).splitlines() if line.strip().startswith("#")]
        if len(frames) > 1 and ALLOCATOR.search(frames[0]) and "<unknown module>" in frames[1]:
            out.append(block.group(0))
    return out


@pytest.fixture(scope="module")
def asan_plugin():
    return tshark.Plugin.c(tshark.c_plugin_folder(tshark.build_c_plugin(sanitize=True)))


def moved(packets, offset):
    """The same flow on other ports, so several scenarios share one capture."""
    for p in packets:
        layer = p["SCTP"] if p.haslayer("SCTP") else p["TCP"]
        layer.sport += offset
        layer.dport += offset
    return packets


def test_no_scoreboard_memory_left_at_exit_under_asan(asan_plugin, tmp_path):
    """Flows that ended and flows still open at the end (SCTP with gaps, TCP, MPTCP): all freed."""
    s = tcp_scenario
    flows = [
        handshake() + sent(11, 14) + [ack(0.3, nr(10, (2, 2))), ack(0.31, pcaps.sack_chunk(10, gaps=[(3, 3)]))],
        s.handshake(nr_flags=(1, 1)) + s.four_segments() + [s.ack(0.3, 0, sack=[(1000, 2000)], nr=[(2000, 3000)])],
        s.mptcp_handshake() + [s.mseg(0.2 + i / 1000, i) for i in range(4)] + [s.mack(0.3, 0, nr=[(1000, 2000)])],
        sctp_ended_by(SHUTDOWN_COMPLETE),
        tcp_ended("fin"),
    ]
    packets = [p for i, flow in enumerate(flows) for p in moved(flow, 100 * i)]
    for i, p in enumerate(packets):
        p.time = i / 1000  # one capture, in order
    path = pcaps.write(tmp_path / "mixed.pcap", packets)
    env = fuzz.sanitizer_env()
    # leaks reported, then a normal exit (LSan's own exit would skip flushing tshark's output)
    env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"].replace("detect_leaks=0", "detect_leaks=1").replace("exitcode=86", "exitcode=0")
    proc = tshark.run_tshark(["-q", "-z", "nrsack,stat"], asan_plugin, pcap=path, env_extra=env, check=False,
                             timeout=300)
    flows_shown = re.findall(r"^\d+ +(sctp|tcp|mptcp) ", proc.stdout, re.M)
    # the ended flows' late packets start flows of their own (decisions.md 44): those stay open
    assert flows_shown == ["sctp", "tcp", "mptcp", "sctp", "sctp", "tcp", "tcp"], proc.stdout + proc.stderr[-3000:]
    other = [m for m in fuzz.SANITIZER_MARKS if m in proc.stderr and m != "ERROR: LeakSanitizer"]
    assert not other, proc.stderr[-3000:]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert core_leaks(proc.stderr) == []
