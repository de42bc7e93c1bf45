"""The Lua plugin gives a flow's state back when the flow ends, and keeps what each frame showed.

- TCP: once each end's FIN is acked, or on an RST without data, the connection leaves the lookups: a
  later segment on the same ports starts a new flow (a new nrsack.stream, figures from nothing), as a
  capture starting mid-connection would.
- SCTP: the same after SHUTDOWN-COMPLETE and after ABORT; chunks bundled after the end chunk are not
  analysed (they come after the end, as in the analyzer).
- An RST ends the connection even when it carries data (decisions.md 44: "or at a RST").
- The C plugin ends flows alike: on every case, the same fields and findings (decisions.md 44).
- The frames before the end show the same fields in one pass, in two passes (-2) and under a display
  filter: the per-frame results outlive the flow's state.
"""

from __future__ import annotations

import struct

import pytest

from support import pcaps, tshark
from support.pcaps import chunk, data_chunk, sack_chunk, sctp_packet, tcp_packet
from support.tshark import LUA_PLUGIN

pytestmark = pytest.mark.tshark

A, B = "10.2.0.1", "10.2.0.2"


def tcp_ending(end: str):
    t = iter(i * 0.001 for i in range(100))
    p = lambda *a, **k: tcp_packet(next(t), *a, **k)  # noqa: E731
    pkts = [p(A, B, 40000, 80, 100, 0, "S"), p(B, A, 80, 40000, 500, 101, "SA"), p(A, B, 40000, 80, 101, 501, "A"),
            p(A, B, 40000, 80, 101, 501, "PA", payload=1000), p(B, A, 80, 40000, 501, 1101, "A")]
    if end == "fin":
        pkts += [p(A, B, 40000, 80, 1101, 501, "FA"), p(B, A, 80, 40000, 501, 1102, "FA"),
                 p(A, B, 40000, 80, 1102, 502, "A")]
    elif end == "rst-data":
        pkts += [p(A, B, 40000, 80, 1101, 501, "RA", payload=300)]
    else:
        pkts += [p(A, B, 40000, 80, 1101, 501, "R")]
    # the same ports again, no handshake: 700 bytes of a "new" flow
    pkts += [p(A, B, 40000, 80, 5000, 501, "PA", payload=700)]
    return pkts


def sctp_ending(end: str):
    t = iter(i * 0.001 for i in range(100))
    p = lambda src, dst, tag, chunks, sp=5000, dp=5001: sctp_packet(next(t), src, dst, tag, chunks, sp, dp)  # noqa: E731
    pkts = [p(A, B, 0x22, [data_chunk(10, 1000)]), p(B, A, 0x11, [sack_chunk(10)], 5001, 5000)]
    if end == "shutdown-complete":
        pkts.append(p(A, B, 0x22, [chunk(0x0E, b"")]))
    elif end == "abort-bundled":  # the DATA chunk after the ABORT is not fed
        pkts.append(p(A, B, 0x22, [chunk(0x06, struct.pack("!HH", 0, 4)), data_chunk(11, 300)]))
    else:
        pkts.append(p(B, A, 0x11, [chunk(0x06, struct.pack("!HH", 0, 4))], 5001, 5000))
    pkts.append(p(A, B, 0x22, [data_chunk(11, 700)]))
    return pkts


CASES = {"tcp-fin": tcp_ending("fin"), "tcp-rst": tcp_ending("rst"), "tcp-rst-data": tcp_ending("rst-data"),
         "sctp-shutdown-complete": sctp_ending("shutdown-complete"), "sctp-abort": sctp_ending("abort"),
         "sctp-abort-bundled": sctp_ending("abort-bundled")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_flow_after_its_end_starts_anew(name, tmp_path):
    pcap = pcaps.write(tmp_path / f"{name}.pcap", CASES[name])
    golden = tshark.parse_golden(tshark.golden_output(pcap, LUA_PLUGIN))
    last = golden.rows[-1]
    before = [r for r in golden.rows[:-1] if r["nrsack.stream"]]
    assert before and all(r["nrsack.stream"] == ["0"] for r in before)
    assert last["nrsack.stream"] == ["1"], last
    assert last["nrsack.rtxq.sack_bytes"] == ["700"], last


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_outlive_the_flow(name, tmp_path):
    pcap = pcaps.write(tmp_path / f"{name}.pcap", CASES[name])
    one = tshark.golden_output(pcap, LUA_PLUGIN)
    assert one == tshark.golden_output(pcap, LUA_PLUGIN, two_pass=True)
    shown = tshark.parse_golden(tshark.golden_output(pcap, LUA_PLUGIN, two_pass=True, display_filter="nrsack.stream == 0"))
    rows = {r["frame.number"][0]: r for r in tshark.parse_golden(one).rows}

    def kept(row):  # nrsack.blocked aside: a later pass uses the whole capture's estimate of B, one pass the
        return {k: v for k, v in row.items() if k != "nrsack.blocked"}  # estimate so far (metrics.md)
    assert shown.rows and all(kept(r) == kept(rows[r["frame.number"][0]]) for r in shown.rows)


@pytest.mark.parametrize("name", sorted(CASES))
def test_c_plugin_ends_flows_alike(name, nrsack_c_plugin, tmp_path):
    pcap = pcaps.write(tmp_path / f"{name}.pcap", CASES[name])
    assert tshark.golden_output(pcap, LUA_PLUGIN) == tshark.golden_output(pcap, nrsack_c_plugin)


def test_chunks_after_the_end_chunk_are_not_fed(tmp_path):
    pcap = pcaps.write(tmp_path / "bundled.pcap", CASES["sctp-abort-bundled"])
    aborting = tshark.parse_golden(tshark.golden_output(pcap, LUA_PLUGIN)).row(3)
    assert aborting["nrsack.rtxq.sack_bytes"] == [], aborting  # fed, it would show 300 bytes queued
