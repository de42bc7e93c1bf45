"""MPTCP DSS shapes: the Lua plugin reads every one as the C plugin does (dissector/src/mptcp.c).

A capture holds an MPTCP connection with NR-SACK capability, then one segment each way for every DSS
shape: all 64 combinations of the flags A, a, M, m, N, n (RFC 8684 section 3.3 and the NR blocks of
wire-formats.md section 4) with the option at its right length, one byte short, one byte long, two
bytes long (a checksum after the mapping), and with N a block count that disagrees with the length.
Every segment carries 100 bytes, so the shapes that map data and ack the peer's change the
scoreboards. Every nrsack field and finding of the Lua plugin equals the C plugin's.
"""

from __future__ import annotations

import struct

import pytest

from support import pcaps, tshark
from support.pcaps import mptcp_capable_option, nr_permitted_option, tcp_packet
from support.tshark import LUA_PLUGIN
from test_lua_parity import assert_same

pytestmark = pytest.mark.tshark

A_FLAG, a_FLAG, M_FLAG, m_FLAG, N_FLAG, n_FLAG = 0x01, 0x02, 0x04, 0x08, 0x20, 0x40
MAX_OPTION = 40  # a TCP header's option space
PAYLOAD = 100
CLIENT, SERVER = "10.1.0.1", "10.1.0.2"


def dss_body(flags: int, ack: int, dsn: int, ssn: int, blocks: int, count: int | None = None) -> bytes:
    """The DSS option's bytes after kind and length, at the length its flags ask for."""
    body = struct.pack("!BB", 0x2 << 4, flags)
    if flags & A_FLAG:
        body += struct.pack("!Q", ack) if flags & a_FLAG else struct.pack("!I", ack & 0xFFFFFFFF)
    if flags & M_FLAG:
        body += struct.pack("!Q", dsn) if flags & m_FLAG else struct.pack("!I", dsn & 0xFFFFFFFF)
        body += struct.pack("!IH", ssn, PAYLOAD)
    if flags & N_FLAG:
        body += struct.pack("!BB", blocks if count is None else count, 0)
        for k in range(blocks):
            start, end = 100 + 300 * k, 200 + 300 * k
            body += struct.pack("!QQ", start, end) if flags & n_FLAG else struct.pack("!II", start, end)
    return body


def shapes():
    """-> [(name, flags, blocks, transform of the right body)]."""
    out = []
    for flags in range(128):
        if flags & 0x10:  # F (DATA_FIN) takes no bytes: left out to keep the table at 64 x variants
            continue
        blocks = 0
        if flags & N_FLAG:
            blocks = 1 if len(dss_body(flags, 0, 0, 0, 1)) + 2 + 2 <= MAX_OPTION else 0
        variants = {"right": lambda b: b, "short1": lambda b: b[:-1], "long1": lambda b: b + b"\0",
                    "long2": lambda b: b + b"\0\0"}
        for variant, transform in variants.items():
            out.append((f"{flags:02x}-{variant}", flags, blocks, transform, None))
        if flags & N_FLAG:
            out.append((f"{flags:02x}-count-lies", flags, blocks, lambda b: b, blocks + 1))
    return out


def dss_capture():
    key_c, key_s = 0x1111222233334444, 0x5555666677778888
    isn_c, isn_s = 1000, 5000
    dsn = {CLIENT: 0x10000, SERVER: 0x90000}
    seq = {CLIENT: isn_c + 1, SERVER: isn_s + 1}
    t = iter(i * 0.001 for i in range(100000))
    nrperm = nr_permitted_option(flags=0x02)
    pkts = [
        tcp_packet(next(t), CLIENT, SERVER, 40000, 80, isn_c, 0, "S", [mptcp_capable_option(), nrperm]),
        tcp_packet(next(t), SERVER, CLIENT, 80, 40000, isn_s, isn_c + 1, "SA",
                   [mptcp_capable_option(keys=(key_s,)), nrperm]),
        tcp_packet(next(t), CLIENT, SERVER, 40000, 80, isn_c + 1, isn_s + 1, "A",
                   [mptcp_capable_option(keys=(key_c, key_s))]),
    ]
    for name, flags, blocks, transform, count in shapes():
        for src, dst, sport, dport in ((CLIENT, SERVER, 40000, 80), (SERVER, CLIENT, 80, 40000)):
            body = transform(dss_body(flags, dsn[dst], dsn[src], seq[src] - (isn_c if src == CLIENT else isn_s),
                                      blocks, count))
            if len(body) + 2 > MAX_OPTION:
                continue
            pkts.append(tcp_packet(next(t), src, dst, sport, dport, seq[src], seq[dst], "PA", [(30, body)],
                                   payload=PAYLOAD))
            seq[src] += PAYLOAD
            dsn[src] += PAYLOAD
    return pkts


def test_shape_table_covers_every_flag_combination():
    names = [s[0] for s in shapes()]
    assert len({n.split("-")[0] for n in names}) == 64
    assert len(names) == 64 * 4 + 32  # four lengths each, and a lying count for the 32 with N


@pytest.mark.parametrize("sndbuf", [0, 3000])
def test_dss_shapes_same_in_c_and_lua(sndbuf, tmp_path, nrsack_c_plugin):
    pcap = pcaps.write(tmp_path / "dss-shapes.pcap", dss_capture())
    c = tshark.golden_output(pcap, nrsack_c_plugin, sndbuf=sndbuf)
    lua = tshark.golden_output(pcap, LUA_PLUGIN, sndbuf=sndbuf)
    g = tshark.parse_golden(lua)
    # the table must exercise the analysis: DSS fields shown, figures changed, the length rules raised
    assert any(r["nrsack.mptcp.block_count"] for r in g.rows)
    assert any(r["nrsack.rtxq.nr_acked_bytes"] not in ([], ["0"]) for r in g.rows)
    assert {"GEN-01", "MN-02"} <= {rule for _, rule, _ in g.expert}
    assert_same(c, lua, "DSS shapes")
