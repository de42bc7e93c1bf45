"""MPTCP DSS shapes: the Lua plugin reads every one as the C plugin does (dissector/src/packet-nrsack-mptcp.c).

A capture holds an MPTCP connection with NR-SACK capability, then one segment each way for every DSS
shape: all 64 combinations of the flags A, a, M, m, N, n (RFC 8684 section 3.3 and the NR blocks of
wire-formats.md section 4) with the option at its right length, one byte short, one byte long, two
bytes long (a checksum after the mapping), and with N a block count that disagrees with the length.
Every segment carries 100 bytes, so the shapes that map data and ack the peer's change the
scoreboards. Every nrsack field and finding of the Lua plugin equals the C plugin's.
"""

from __future__ import annotations

import hashlib
import struct

import pytest

from support import pcaps, tshark
from support.pcaps import mptcp_capable_option, nr_permitted_option, tcp_packet
from support.tshark import LUA_PLUGIN
from support.lua_compare import assert_same

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


def handshake(t, key_c, key_s, isn_c, isn_s):
    """An MPTCP version 1 handshake with NR-SACK capability (times from the iterator t)."""
    nrperm = nr_permitted_option(flags=0x02)
    return [
        tcp_packet(next(t), CLIENT, SERVER, 40000, 80, isn_c, 0, "S", [mptcp_capable_option(), nrperm]),
        tcp_packet(next(t), SERVER, CLIENT, 80, 40000, isn_s, isn_c + 1, "SA",
                   [mptcp_capable_option(keys=(key_s,)), nrperm]),
        tcp_packet(next(t), CLIENT, SERVER, 40000, 80, isn_c + 1, isn_s + 1, "A",
                   [mptcp_capable_option(keys=(key_c, key_s))]),
    ]


def dss_capture():
    key_c, key_s = 0x1111222233334444, 0x5555666677778888
    isn_c, isn_s = 1000, 5000
    dsn = {CLIENT: 0x10000, SERVER: 0x90000}
    seq = {CLIENT: isn_c + 1, SERVER: isn_s + 1}
    t = iter(i * 0.001 for i in range(100000))
    pkts = handshake(t, key_c, key_s, isn_c, isn_s)
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


def idsn(key: int) -> int:
    """RFC 8684 3.1 (version 1): the least significant 64 bits of SHA-256 of the key."""
    return int.from_bytes(hashlib.sha256(struct.pack("!Q", key)).digest()[-8:], "big")


def keyed_capture(key_c: int, key_s: int, dsns, acks):
    """The handshake, then one 100-byte segment per (dsn, 8 octets?) from the client, and
    after segment k a server DATA ACK (8 octets) of acks[k]."""
    isn_c, isn_s = 1000, 5000
    t = iter(i * 0.001 for i in range(1000))
    pkts = handshake(t, key_c, key_s, isn_c, isn_s)
    for k, (dsn, wide) in enumerate(dsns):
        option = pcaps.dss_option(dsn=dsn % 2**64 if wide else dsn % 2**32, ssn=1 + k * PAYLOAD, dll=PAYLOAD, dsn8=wide)
        pkts.append(tcp_packet(next(t), CLIENT, SERVER, 40000, 80, isn_c + 1 + k * PAYLOAD, isn_s + 1, "PA",
                               [option], payload=PAYLOAD))
        if k in acks:
            pkts.append(tcp_packet(next(t), SERVER, CLIENT, 80, 40000, isn_s + 1, isn_c + 1 + (k + 1) * PAYLOAD, "A",
                                   [pcaps.dss_option(data_ack=acks[k] % 2**64)]))
    return pkts


@pytest.mark.parametrize("key_c", [2, 0x1111222233334444])  # an IDSN at 2^63 or above, one below
def test_data_level_numbers_follow_the_key_far_ones_not_adopted(key_c, tmp_path, nrsack_c_plugin):
    """DSNs that follow the client's IDSN (decisions 40), 4 octets then 8 (one space for both, even for
    an IDSN from 2^63 up); an 8-octet DSN 2^40 away is far (SERIAL_FAR): reported, not adopted (its
    segment's bytes lie beyond the 100 bytes of the mapping before, so no valid mapping covers them:
    no data, decisions 70), and the last ack empties the queue."""
    first = idsn(key_c) + 1
    dsns = [(first, False), (first + 100, True), (first + 200 + 2**40, True), (first + 300, True)]
    pcap = pcaps.write(tmp_path / "keyed.pcap", keyed_capture(key_c, 0x5555666677778888, dsns, {1: first + 100, 3: first + 400}))
    outputs = {}
    for name, plugin in (("c", nrsack_c_plugin), ("lua", LUA_PLUGIN)):
        outputs[name] = tshark.golden_output(pcap, plugin, sndbuf=3000)
        g = tshark.parse_golden(outputs[name])
        rtxq = {int(r["frame.number"][0]): r["nrsack.rtxq.sack_bytes"] for r in g.rows}
        # 4, 5: 100 and 200 bytes sent; 6: the first 100 acked; 7 (far mapping): nothing mapped; 8: 100 more;
        # 9: all acked
        assert [rtxq[f] for f in (4, 5, 6, 7, 8, 9)] == [["100"], ["200"], ["100"], [], ["200"], ["0"]], (name, rtxq)
        assert [(int(f), rule) for f, rule, _ in g.expert] == [(7, "GEN-01")], (name, g.expert)
    assert_same(outputs["c"], outputs["lua"], "keyed data-level numbers")


@pytest.mark.parametrize("extra", [0, 1, 2])
def test_dss_length_fits_its_flags_exactly(extra, tmp_path, nrsack_c_plugin):
    """RFC 8684 3.3 (as the analyzer's reader): without N, a DSS is 4 + DATA ACK + mapping octets, or 2
    more after a mapping (the checksum); any other length is reported and the option read no further."""
    t = iter(i * 0.001 for i in range(100))
    pkts = handshake(t, 0x1111222233334444, 0x5555666677778888, 1000, 5000)
    body = dss_body(M_FLAG, 0, 0x10000, 1, 0) + b"\0" * extra
    pkts.append(tcp_packet(next(t), CLIENT, SERVER, 40000, 80, 1001, 5001, "PA", [(30, body)], payload=PAYLOAD))
    pcap = pcaps.write(tmp_path / "dss-length.pcap", pkts)
    for plugin in (nrsack_c_plugin, LUA_PLUGIN):
        g = tshark.parse_golden(tshark.golden_output(pcap, plugin, sndbuf=3000))
        row = next(r for r in g.rows if r["frame.number"] == ["4"])
        fits = extra in (0, 2)
        assert [rule for _, rule, _ in g.expert] == ([] if fits else ["GEN-01"]), (plugin.kind, g.expert)
        assert row["nrsack.rtxq.sack_bytes"] == ([str(PAYLOAD)] if fits else []), (plugin.kind, row)
