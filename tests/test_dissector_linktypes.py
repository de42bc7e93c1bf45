"""C plugin on link types where Wireshark hands the packets to its SCTP / IP dissectors: LINKTYPE_SCTP
(248, raw SCTP with no IP header: usrsctp's packet dumps through text2pcap) and LINKTYPE_NFLOG (239,
Linux's nflog: a header and TLVs, the packet in the payload TLV). The plugin follows Wireshark's SCTP
and TCP dissectors wherever they are called from (ip.proto, udp.port, wtap_encap), so each capture
shows the same analysis as the same packets over Ethernet and IP. Raw SCTP names no address: its ends
read 0.0.0.0:PORT, as the analyzer's reader names them (docs/decisions.md 43)."""

import struct

import pytest

from nrsack.generator.pcapfile import PcapWriter

from support import pcaps, tcp_scenario, tshark
from support.sctp_scenario import ack, handshake, nr, sent

pytestmark = pytest.mark.tshark

LINKTYPE_NFLOG, LINKTYPE_SCTP = 239, 248
AF_INET, NFULA_PAYLOAD = 2, 9


def write_linktype(path, linktype, frames) -> str:
    """A classic pcap of (time, frame bytes) with the given link type."""
    with PcapWriter(path, linktype) as writer:
        for t, frame in frames:
            writer.write(int(t), round((t % 1) * 1e6), frame)
    return str(path)


def nflog_frame(ip_packet: bytes) -> bytes:
    """NFLOG header (family, version, resource id) and one payload TLV (length, type: host order, here
    little-endian), padded to 4 bytes."""
    tlv = struct.pack("<HH", 4 + len(ip_packet), NFULA_PAYLOAD) + ip_packet
    return struct.pack("!BBH", AF_INET, 0, 0) + tlv + b"\0" * (-len(tlv) % 4)


SCTP = handshake() + sent() + [ack(0.3, nr(10, (2, 2))), ack(0.31, pcaps.sack_chunk(10, gaps=[(3, 3)])),
                               ack(0.4, nr(14))]
TCP = (tcp_scenario.handshake(nr_flags=(1, 1)) + tcp_scenario.four_segments()
       + [tcp_scenario.ack(0.3, 0, nr=[(1000, 2000)]), tcp_scenario.ack(0.4, 4000)])


def table(g, rename=None):
    """Every row's nrsack fields, with direction names mapped through `rename`."""
    out = []
    for row in g.rows:
        row = dict(row)
        row["nrsack.direction"] = [rename.get(d, d) if rename else d for d in row["nrsack.direction"]]
        out.append(row)
    return out


@pytest.mark.parametrize("name,packets,linktype,frame_of,rename", [
    ("sctp-raw", SCTP, LINKTYPE_SCTP, lambda p: bytes(p["SCTP"]),
     {"10.0.0.1:5000 -> 10.0.0.2:5001": "0.0.0.0:5000 -> 0.0.0.0:5001",
      "10.0.0.2:5001 -> 10.0.0.1:5000": "0.0.0.0:5001 -> 0.0.0.0:5000"}),
    ("sctp-nflog", SCTP, LINKTYPE_NFLOG, lambda p: nflog_frame(bytes(p["IP"])), None),
    ("tcp-nflog", TCP, LINKTYPE_NFLOG, lambda p: nflog_frame(bytes(p["IP"])), None),
])
def test_link_type_shows_what_ethernet_shows(name, packets, linktype, frame_of, rename, nrsack_c_plugin, tmp_path):
    ether = tshark.parse_golden(tshark.golden_output(pcaps.write(tmp_path / "ether.pcap", packets), nrsack_c_plugin))
    path = write_linktype(tmp_path / f"{name}.pcap", linktype, [(float(p.time), frame_of(p)) for p in packets])
    got = tshark.parse_golden(tshark.golden_output(path, nrsack_c_plugin))
    assert sum(bool(r["nrsack.rtxq.bytes"]) for r in got.rows) >= 6, "the plugin analysed the packets"
    assert table(got) == table(ether, rename)
    assert got.expert == ether.expert
