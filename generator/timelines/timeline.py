"""Timelines: the papers' figures as data, turned into pcaps by one function.

A Timeline is a list of Steps, each a capture time (ms after the timeline's epoch), the two
endpoint addresses and a label in the papers' notation ("DATA 11", "S:10;2-3", "N:10;2-4",
"ACK 1 SACK 3-4", ...). A notation module per protocol family turns a label into the transport
layer; this module frames it (Ethernet, IPv4 or IPv6) and writes the pcap. Nothing here is random:
the same timeline gives the same bytes.
"""

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from nrsack.generator.pcapfile import write_packets

# 2010-06-01T00:00:00Z: the year of the SCTP and FSACK papers; any fixed epoch would do.
DEFAULT_EPOCH_S = 1275350400


@dataclass(frozen=True)
class Step:
    t_ms: float
    src: str  # "address:port"
    dst: str
    label: str


@dataclass
class Timeline:
    name: str
    source: str  # paper and figure
    notation: object  # a module or object with build(timeline, step) -> Scapy transport layer
    steps: list
    epoch_s: int = DEFAULT_EPOCH_S
    options: dict = field(default_factory=dict)  # notation settings (payload size, tags, ...)


def split_endpoint(endpoint):
    """'192.0.2.1:5000' or '[2001:db8::1]:5000' -> (address, port)."""
    address, _, port = endpoint.rpartition(":")
    return address.strip("[]"), int(port)


def _mac(address):
    # A stable, locally administered MAC per IP address, so frames look like a real LAN.
    digest = sum(address.encode()) & 0xFF
    return "02:00:00:00:%02x:%02x" % (len(address) & 0xFF, digest)


def frame(step, transport):
    """Ethernet / IP(v6) / transport for one step, timestamped."""
    src, _ = split_endpoint(step.src)
    dst, _ = split_endpoint(step.dst)
    network = IPv6(src=src, dst=dst) if ":" in src else IP(src=src, dst=dst, id=0, flags="DF")
    return Ether(src=_mac(src), dst=_mac(dst)) / network / transport


def packets(timeline):
    """The timeline's frames in capture order, each with its capture time set."""
    frames = []
    for step in sorted(timeline.steps, key=lambda s: s.t_ms):
        pkt = frame(step, timeline.notation.build(timeline, step))
        pkt.time = Decimal(timeline.epoch_s) + Decimal(str(step.t_ms)) / 1000
        frames.append(pkt)
    return frames


def write_pcap(timeline, path):
    """Write the timeline as a microsecond pcap (Ethernet link type)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_packets(path, packets(timeline))
