"""The plugin leaves Wireshark's own decoding alone: TCP Fast Open (kind 34, and kind 254 with ExID
0xF989), another experiment's kind-253 option, plain SACK traffic and SCTP (over IP, over UDP, with an
Ethernet trailer, and a malformed chunk) print the same full packet details (-V) with and without the
plugin, apart from the plugin's own top-level item. (The plugin sits where IP and UDP hand over to SCTP
and TCP, so this also checks that the frame's protocol list and Wireshark's own items stay as they were.)"""

import struct

import pytest

from support import pcaps, tshark

pytestmark = pytest.mark.tshark

A, B = "192.0.2.1", "198.51.100.1"


def tfo_capture(with_own_option=False):
    """Fast Open in both encodings, another experiment's option; optionally one frame with our ExID."""
    cookie = b"\x11\x22\x33\x44\x55\x66\x77\x88"
    return [
        pcaps.tcp_packet(0.0, A, B, 40000, 80, 100, 0, "S", [("MSS", 1460), (34, b"")]),
        pcaps.tcp_packet(0.01, B, A, 80, 40000, 900, 101, "SA", [("MSS", 1460), (34, cookie)]),
        pcaps.tcp_packet(0.02, A, B, 40000, 80, 101, 901, "A"),
        pcaps.tcp_packet(1.0, A, B, 40001, 80, 5000, 0, "S", [("MSS", 1460), (34, cookie)], payload=100),
        pcaps.tcp_packet(2.0, A, B, 40002, 80, 7000, 0, "S", [("MSS", 1460), (254, struct.pack("!H", 0xF989) + cookie)],
                         payload=50),
        pcaps.tcp_packet(2.01, B, A, 80, 40002, 800, 7051, "SA", [(254, struct.pack("!H", 0xF989) + cookie)]),
        pcaps.tcp_packet(2.02, A, B, 40002, 80, 7051, 801, "A", [(253, struct.pack("!HI", 0x1234, 0xDEADBEEF))]),
    ] + ([pcaps.tcp_packet(2.03, A, B, 40002, 80, 7051, 801, "A", [(254, struct.pack("!HB", 0x4E52, 1))])]
         if with_own_option else [])


def sack_capture():
    seg = lambda t, n: pcaps.tcp_packet(t, A, B, 40000, 5001, 1001 + 1000 * n, 5001, "A", payload=1000)
    ack = lambda t, a, blocks=(): pcaps.tcp_packet(t, B, A, 5001, 40000, 5001, 1001 + a,
                                                   "A", [("SAck", tuple(1001 + x for b in blocks for x in b))] if blocks else [])
    return [
        pcaps.tcp_packet(0.0, A, B, 40000, 5001, 1000, 0, "S", [("MSS", 1460), ("SAckOK", b"")]),
        pcaps.tcp_packet(0.1, B, A, 5001, 40000, 5000, 1001, "SA", [("MSS", 1460), ("SAckOK", b"")]),
        pcaps.tcp_packet(0.1001, A, B, 40000, 5001, 1001, 5001, "A"),
        *[seg(0.2 + i / 1000, i) for i in range(5)],
        ack(0.3, 0, [(1000, 2000)]), ack(0.301, 0, [(1000, 3000)]), ack(0.302, 0, [(1000, 4000)]),
        seg(0.303, 0),
        ack(0.4, 5000),
    ]


def sctp_capture():
    from support.sctp_scenario import ack, handshake, nr, sent
    over_udp = [pcaps.sctp_packet(p.time, p["IP"].src, p["IP"].dst, p["SCTP"].tag, [bytes(p["SCTP"].payload)],
                                  sport=p["SCTP"].sport, dport=p["SCTP"].dport, udp_port=9899)
                for p in sent(15, 15, t=0.5)]
    trailer = [p.__class__(bytes(p) + b"\0" * 14) for p in sent(16, 16, t=0.6)]
    trailer[0].time = 0.6
    # a chunk whose length runs past the packet: Wireshark's SCTP dissector throws, the frame is malformed
    bad = ack(0.7, pcaps.chunk(0x10, b"\0" * 12, length=400))
    return handshake() + sent(11, 14) + [ack(0.3, nr(14))] + over_udp + trailer + [bad]


def without_plugin_item(text: str) -> str:
    """Drops the plugin's top-level item (and its subtree) and the protocol list line that names it."""
    out, skipping = [], False
    for line in text.splitlines():
        if line.startswith("NR-SACK analysis"):
            skipping = True
            continue
        if skipping and line.startswith(" "):
            continue
        skipping = False
        if "[Protocols in frame:" in line:
            line = line.replace(":nrsack", "")
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("capture", [tfo_capture, sack_capture, sctp_capture], ids=["tcp-fast-open", "plain-sack", "sctp"])
def test_builtin_details_unchanged(nrsack_c_plugin, tmp_path, capture):
    path = pcaps.write(tmp_path / "c.pcap", capture())
    plain = tshark.run_tshark(["-V"], tshark.Plugin.none(), pcap=path).stdout
    with_plugin = tshark.run_tshark(["-V"], nrsack_c_plugin, pcap=path).stdout
    assert "NR-SACK analysis" in with_plugin, "the plugin was not loaded"
    assert {tfo_capture: "TCP Fast Open", sack_capture: "SACK", sctp_capture: "Malformed Packet: SCTP"}[capture] in plain
    assert without_plugin_item(with_plugin) == without_plugin_item(plain)


def test_own_option_is_decoded_where_builtin_saw_unknown_data(nrsack_c_plugin, tmp_path):
    """The kind-254 option with our ExID (last frame of the TFO capture) is ours; everything else is not."""
    path = pcaps.write(tmp_path / "c.pcap", tfo_capture(with_own_option=True))
    args = ["-T", "fields", "-E", "occurrence=a", "-e", "frame.number", "-e", "tcp.options.tfo.cookie",
            "-e", "nrsack.tcp.exid", "-e", "tcp.options.experimental.exid"]
    rows = [line.split("\t") for line in tshark.run_tshark(args, nrsack_c_plugin, pcap=path).stdout.splitlines()]
    assert rows[4][1] and rows[5][1], "Wireshark still decodes the kind-254 Fast Open cookie"
    assert [r[2] for r in rows] == ["", "", "", "", "", "", "", "0x4e52"]
    assert rows[6][3] == "0x1234"
