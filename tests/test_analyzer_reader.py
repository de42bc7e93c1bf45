"""The compiled reader: every link type and encapsulation of wire-formats.md section 5, pcap (micro and
nano) and pcapng with several interfaces, snaplen-truncated frames, and the decoded events.

Captures are built here with Scapy (the project's layers for NR-SACK, FSACK, TCP NR-SACK and MPTCP)
and read back through libpcap by the analyzer.
"""

import struct

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether
from scapy.layers.sctp import (SCTP, SCTPChunkCookieAck, SCTPChunkCookieEcho, SCTPChunkData, SCTPChunkInit,
                               SCTPChunkInitAck, SCTPChunkParamStateCookie)
from scapy.utils import RawPcapNgWriter, RawPcapWriter

from nrsack.analyzer import analyze
from nrsack.analyzer import events as E
from nrsack.generator.layers import (MPTCPDSS, MPTCPNRBlock, SCTPChunkFsackAck, SCTPChunkFsackComplete,
                                     SCTPChunkFsackInit, SCTPChunkNRSACK, TCPOptNRSack, TCPOptNRSackPermitted,
                                     NRSackBlock, address_parameter, supported_extensions, tcp_option)

EPOCH = 1_700_000_000
TSN0 = 0xFFFFFFFE  # the association's TSNs wrap after the second DATA chunk
ISN = 0xFFFFFF00   # the TCP sequence numbers wrap inside the transfer


def sctp_packets(a, b, udp=False):
    """(t_ns, transport bytes factory) of a small NR-SACK association from a:5000 to b:5001."""
    def sctp(src_to_dst, tag, *chunks):
        layer = SCTP(sport=5000 if src_to_dst else 5001, dport=5001 if src_to_dst else 5000, tag=tag)
        for chunk in chunks:
            layer = layer / chunk
        return (True if src_to_dst else False), (UDP(sport=9899, dport=9899) / layer if udp else layer)

    sizes = [100, 200, 300, 400]
    return [
        sctp(True, 0, SCTPChunkInit(init_tag=0x1111, init_tsn=TSN0, n_out_streams=2, n_in_streams=2,
                                    params=[address_parameter("192.0.2.1"), address_parameter("192.0.2.2"),
                                            supported_extensions(0x10, 0xA0)])),
        sctp(False, 0x1111, SCTPChunkInitAck(init_tag=0x2222, init_tsn=1, n_out_streams=2, n_in_streams=2,
                                             params=[SCTPChunkParamStateCookie(cookie=b"c" * 8),
                                                     supported_extensions(0x10, 0xA0)])),
        sctp(True, 0x2222, SCTPChunkCookieEcho(cookie=b"c" * 8)),
        sctp(False, 0x1111, SCTPChunkCookieAck()),
        # four DATA chunks bundled in one packet, TSNs fffffffe, ffffffff, 0, 1
        sctp(True, 0x2222, *[SCTPChunkData(tsn=(TSN0 + i) & 0xFFFFFFFF, stream_id=1, stream_seq=i, proto_id=0,
                                           data=b"x" * size, unordered=1 if i == 3 else 0,
                                           beginning=1, ending=1)
                             for i, size in enumerate(sizes)]),
        # cum fffffffe; TSN 1 in an R block (3-3), TSN 0 in an NR block (2-2); a duplicate TSN
        sctp(False, 0x1111, SCTPChunkNRSACK(cumul_tsn_ack=TSN0, r_gap_ack_list=["3:3"], nr_gap_ack_list=["2:2"],
                                            dup_tsn_list=[TSN0])),
        sctp(True, 0x2222, SCTPChunkFsackInit(timestamp=1234)),
        sctp(False, 0x1111, SCTPChunkFsackAck(timestamp=1234)),
        sctp(True, 0x2222, SCTPChunkFsackComplete(params=[address_parameter("198.51.100.9")])),
        sctp(False, 0x1111, SCTPChunkNRSACK(cumul_tsn_ack=1)),
    ]


def tcp_packets():
    """A TCP connection 40000 -> 80 with SACK and NR-SACK negotiated and sequence numbers wrapping."""
    perm = [("SAckOK", b""), tcp_option(TCPOptNRSackPermitted(flags=0))]
    nr = tcp_option(TCPOptNRSack(blocks=[NRSackBlock(left=(ISN + 301) & 0xFFFFFFFF, right=(ISN + 401) & 0xFFFFFFFF)]))
    sack = ("SAck", ((ISN + 201) & 0xFFFFFFFF, (ISN + 301) & 0xFFFFFFFF))
    def out(payload=b"", **kw):
        return True, TCP(sport=40000, dport=80, **kw) / payload

    def back(**kw):
        return False, TCP(sport=80, dport=40000, **kw)

    return [
        out(flags="S", seq=ISN, options=perm),
        back(flags="SA", seq=7, ack=ISN + 1, options=perm),
        out(flags="A", seq=ISN + 1, ack=8),
        out(flags="PA", seq=ISN + 1, ack=8, payload=b"a" * 100),
        out(flags="PA", seq=ISN + 101, ack=8, payload=b"b" * 100),       # lost
        out(flags="PA", seq=(ISN + 201) & 0xFFFFFFFF, ack=8, payload=b"c" * 100),
        out(flags="PA", seq=(ISN + 301) & 0xFFFFFFFF, ack=8, payload=b"d" * 100),
        back(flags="A", seq=8, ack=ISN + 101, options=[sack, nr]),
        out(flags="PA", seq=ISN + 101, ack=8, payload=b"b" * 100),       # retransmission
        back(flags="A", seq=8, ack=(ISN + 401) & 0xFFFFFFFF),
    ]


def mptcp_packets():
    """One MPTCP subflow: a DSS mapping and a DATA ACK with one NR block (wire-formats.md 4 example)."""
    dss_map = tcp_option(MPTCPDSS(A=1, M=1, data_ack32=1, dsn32=14001, ssn=1, data_len=100))
    dss_ack = tcp_option(MPTCPDSS(A=1, N=1, data_ack32=14001, nr_blocks=[MPTCPNRBlock(start=5600, end=7000)]))
    return [
        (True, TCP(sport=41000, dport=443, flags="PA", seq=1000, ack=1, options=[dss_map]) / (b"m" * 100)),
        (False, TCP(sport=443, dport=41000, flags="A", seq=1, ack=1100, options=[dss_ack])),
    ]


def ip_packets(v6=False, udp=False):
    a, b = ("2001:db8::1", "2001:db8::2") if v6 else ("192.0.2.1", "198.51.100.1")
    net = (lambda s, d: IPv6(src=s, dst=d)) if v6 else (lambda s, d: IP(src=s, dst=d))
    packets = []
    for forward, transport in sctp_packets(a, b, udp) + tcp_packets() + mptcp_packets():
        packets.append(bytes(net(a, b) / transport if forward else net(b, a) / transport))
    return packets


def _ethertype(raw_ip):
    return 0x86DD if raw_ip[0] >> 4 == 6 else 0x0800


LINKS = {
    # name: (linktype, frame builder)
    "ethernet": (1, lambda ip: bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=_ethertype(ip))) + ip),
    "vlan": (1, lambda ip: bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / Dot1Q(vlan=5, type=_ethertype(ip))) + ip),
    "qinq": (1, lambda ip: bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / Dot1AD(vlan=7) / Dot1Q(vlan=5, type=_ethertype(ip))) + ip),
    "sll": (113, lambda ip: struct.pack(">HHH8sH", 0, 1, 6, b"\x02" * 6 + b"\0\0", _ethertype(ip)) + ip),
    "sll2": (276, lambda ip: struct.pack(">HHIHBB8s", _ethertype(ip), 0, 2, 1, 0, 6, b"\x02" * 6 + b"\0\0") + ip),
    "raw": (101, lambda ip: ip),
    "null": (0, lambda ip: struct.pack("<I", 2 if ip[0] >> 4 == 4 else 24) + ip),
    "loop": (108, lambda ip: struct.pack(">I", 2 if ip[0] >> 4 == 4 else 24) + ip),
}


def write_pcap(path, frames, linktype, nano=False, snaplen=None):
    with RawPcapWriter(str(path), linktype=linktype, nano=nano, sync=True) as writer:
        writer.write_header(None)
        for i, frame in enumerate(frames):
            ns = 1_000_000 * i + 123  # 1 ms apart, plus nanoseconds only a nano pcap keeps
            kept = frame if snaplen is None else frame[:snaplen]
            writer.write_packet(kept, sec=EPOCH, usec=ns if nano else ns // 1000, wirelen=len(frame))
    # Scapy writes link type 0 (null) as 1: set the header's field (little-endian file) ourselves
    with open(path, "r+b") as handle:
        handle.seek(20)
        handle.write(struct.pack("<I", linktype))
    return path


EVENT_COLUMNS = ["frame", "flow", "side", "protocol", "kind", "src", "dst", "data", "ack", "tsn", "cum_ack", "seq",
                 "tcp_ack", "length", "stream", "ssn", "unordered", "window", "vtag", "dsn", "data_ack", "blocks",
                 "seq64", "ack64", "flags"]


def comparable_events(analysis):
    frame = analysis.events[EVENT_COLUMNS].copy()
    for col in ("flow", "protocol", "kind", "src", "dst"):
        frame[col] = frame[col].astype(str)
    return frame.reset_index(drop=True)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    path = tmp_path_factory.mktemp("reader") / "ethernet.pcap"
    return analyze(write_pcap(path, [LINKS["ethernet"][1](p) for p in ip_packets()], 1))


def test_sctp_events_decoded(baseline):
    ev = baseline.events
    sctp = ev[ev["protocol"] == "sctp"]
    data = sctp[sctp["kind"] == "DATA"]
    assert list(data["tsn"]) == [0xFFFFFFFE, 0xFFFFFFFF, 0, 1]
    assert list(data["frame"]) == [5, 5, 5, 5]  # bundled: one packet, four events in chunk order
    assert list(data["length"]) == [100, 200, 300, 400]
    assert list(data["unordered"]) == [False, False, False, True]
    assert list(data["ssn"]) == [0, 1, 2, 3] and set(data["stream"]) == {1}
    # TSNs unwrapped to 64 bit once: consecutive across the wrap
    assert list(np.diff(data["seq64"].to_numpy(dtype=np.int64))) == [1, 1, 1]
    blocks = baseline.blocks
    first_nr = sctp[sctp["kind"] == "NR-SACK"].index[0]
    mine = blocks[blocks["event"] == first_nr]
    assert [(k, lo, hi) for k, lo, hi in zip(mine["kind"].astype(str), mine["lo"], mine["hi"])] == [
        ("r", 3, 3), ("nr", 2, 2), ("dup", TSN0, TSN0)]
    init = sctp[sctp["kind"] == "INIT"].iloc[0]
    assert init["flags"] & E.EXT_NRSACK and init["flags"] & E.EXT_FSACK
    flows = baseline.flows
    assert flows.loc[0, "addresses_0"] == "192.0.2.1 192.0.2.2" and bool(flows.loc[0, "nr_sack_negotiated"])
    fsack = sctp[sctp["kind"].astype(str).str.startswith("FSACK")]
    assert list(fsack["kind"].astype(str)) == ["FSACK-INIT", "FSACK-ACK", "FSACK-COMPLETE"]
    assert list(fsack["fsack_timestamp"][:2]) == [1234, 1234]
    addr = blocks[(blocks["event"] == fsack.index[2]) & (blocks["kind"] == "address")]
    assert E.block_address(addr["lo"].iloc[0], addr["hi"].iloc[0]) == "198.51.100.9"


def test_sctp_figures_across_tsn_wrap(baseline):
    entry = next(e for e in baseline.entries if e.summary["protocol"] == "sctp")
    first_ack = entry.rtxq[entry.rtxq["event"] == "ack"].iloc[0]
    # 1000 bytes sent; cum acks 100; NR-acked TSN 0 (300); SACKed TSNs 0 and 1 (700)
    assert first_ack["rtxq_sack_bytes"] == 900
    assert first_ack["nr_acked_bytes"] == 300 and first_ack["rtxq_nr_bytes"] == 600
    assert first_ack["sacked_bytes"] == 700 and first_ack["rtxq_whatif_bytes"] == 200
    assert first_ack["freed_bytes"] == 300 and bool(first_ack["gap_open"])
    assert entry.summary["complete"] and entry.summary["data_bytes"] == 1000
    assert entry.summary["nr_sack"] and entry.summary["src"] == "192.0.2.1:5000"


def test_tcp_events_and_figures_across_seq_wrap(baseline):
    entry = next(e for e in baseline.entries if e.summary["protocol"] == "tcp" and e.summary["src"].endswith(":40000"))
    acks = entry.rtxq[entry.rtxq["event"] == "ack"]
    sacking = acks[acks["sacked_bytes"] > 0].iloc[0]
    assert sacking["rtxq_sack_bytes"] == 300            # 400 sent, 100 cum-acked
    assert sacking["sacked_bytes"] == 200               # SACK 201-301 plus NR 301-401
    assert sacking["nr_acked_bytes"] == 100 and sacking["rtxq_nr_bytes"] == 200
    assert entry.summary["retransmissions"] == 1 and entry.summary["complete"]
    assert entry.summary["nr_sack"] and entry.summary["data_bytes"] == 400
    assert entry.summary["vantage"] == "middle"         # 1 ms between every frame: no side is near
    ev = baseline.events
    data = ev[(ev["protocol"] == "tcp") & ev["data"] & (ev["src"].astype(str).str.endswith(":40000"))]
    seq64 = data["seq64"].to_numpy(dtype=np.int64)
    assert list(np.diff(seq64)) == [100, 100, 100, -200]  # unwrapped across 2^32; the retransmission
    acks = ev[(ev["protocol"] == "tcp") & ev["src"].astype(str).str.endswith(":80") & ev["ack64"].notna()]
    assert list(acks["ack64"].to_numpy(dtype=np.int64)[-2:] - seq64[0]) == [100, 400]


def test_mptcp_dss_and_nr_blocks(baseline):
    ev = baseline.events
    dss = ev[ev["dsn"].notna()]
    assert list(dss["dsn"]) == [14001] and list(dss["dss_length"]) == [100]
    acked = ev[ev["data_ack"].notna() & (ev["frame"] == dss["frame"].iloc[0] + 1)]
    blocks = baseline.blocks
    nr = blocks[(blocks["event"] == acked.index[0]) & (blocks["kind"] == "mptcp_nr")]
    assert (int(acked["data_ack"].iloc[0]) + int(nr["lo"].iloc[0]), int(acked["data_ack"].iloc[0]) + int(nr["hi"].iloc[0])) == (19601, 21001)


@pytest.mark.parametrize("link", sorted(LINKS))
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_link_types_give_the_same_events(tmp_path, baseline, link, v6):
    linktype, build = LINKS[link]
    analysis = analyze(write_pcap(tmp_path / f"{link}.pcap", [build(p) for p in ip_packets(v6)], linktype))
    got = comparable_events(analysis)
    want = comparable_events(baseline)
    if v6:
        # the same transfer between IPv6 addresses: everything but the addresses agrees
        got, want = got.drop(columns=["src", "dst", "flags"]), want.drop(columns=["src", "dst", "flags"])
        assert analysis.events["src"].astype(str).str.startswith("[2001:db8::").all()
    assert got.equals(want), got.compare(want)
    assert analysis.capture.findings == []


def test_sctp_over_udp_9899(tmp_path, baseline):
    frames = [LINKS["ethernet"][1](p) for p in ip_packets(udp=True)]
    analysis = analyze(write_pcap(tmp_path / "udp.pcap", frames, 1))
    sctp = analysis.events[analysis.events["protocol"] == "sctp"]
    assert (sctp["flags"] & E.SCTP_UDP).all() and len(sctp) == (baseline.events["protocol"] == "sctp").sum()
    assert comparable_events(analysis).drop(columns="flags").equals(comparable_events(baseline).drop(columns="flags"))


def test_nanosecond_pcap_keeps_nanoseconds(tmp_path):
    frames = [LINKS["ethernet"][1](p) for p in ip_packets()]
    micro = analyze(write_pcap(tmp_path / "us.pcap", frames, 1))
    nano = analyze(write_pcap(tmp_path / "ns.pcap", frames, 1, nano=True))
    ns = nano.capture.ev["time_ns"] - EPOCH * 1_000_000_000
    us = micro.capture.ev["time_ns"] - EPOCH * 1_000_000_000
    assert (ns % 1000 == 123).all() and (us % 1000 == 0).all()
    assert ((ns - us) == 123).all()


def test_pcapng_with_several_interfaces(tmp_path, baseline):
    path = tmp_path / "multi.pcapng"
    with RawPcapNgWriter(str(path)) as writer:
        writer.write_header(None)
        for i, p in enumerate(ip_packets()):
            # odd frames seen on a second interface (same link type, as libpcap requires)
            writer._write_packet(LINKS["ethernet"][1](p), linktype=1, sec=EPOCH + i / 1000, ifname=b"eth%d" % (i % 2))
    analysis = analyze(path)
    assert comparable_events(analysis).equals(comparable_events(baseline))


def test_snaplen_keeps_header_lengths(tmp_path, baseline):
    # 96 bytes keep every header here but cut the payloads: lengths must come from the headers
    frames = [LINKS["ethernet"][1](p) for p in ip_packets()]
    analysis = analyze(write_pcap(tmp_path / "snap.pcap", frames, 1, snaplen=96))
    ev, base = analysis.events, baseline.events
    data = ev[(ev["kind"] == "DATA")]
    # the bundle lost its later chunks' headers to the snaplen: the first one is still exact
    assert data["length"].iloc[0] == 100
    tcp_data = ev[(ev["protocol"] == "tcp") & ev["data"]]
    assert list(tcp_data["length"]) == list(base[(base["protocol"] == "tcp") & base["data"]]["length"])
    frames_cut = {f for f, _ in analysis.capture.findings}
    assert all(1 <= f <= len(frames) for f in frames_cut)
