"""The one Python pcap writer: classic libpcap files, little-endian, microsecond or nanosecond.

The simulator (generator/sim/engine.py's Python path), the timelines and the tests' capture
builders write through this module; the compiled simulator writes the same header and records in
C (generator/sim/_fastsim.c), held byte-identical to this by tests/test_simulator_fast.py.
"""

import struct

MAGIC_MICRO = 0xA1B2C3D4
MAGIC_NANO = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
SNAPLEN = 65535

_HEADER = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")
_FLUSH_BYTES = 1 << 24  # buffer this much before a write: one syscall per 16 MB on a big run


def file_header(linktype=LINKTYPE_ETHERNET, nano=False, snaplen=SNAPLEN):
    """The 24-byte global header: version 2.4, zone 0, sigfigs 0."""
    return _HEADER.pack(MAGIC_NANO if nano else MAGIC_MICRO, 2, 4, 0, 0, snaplen, linktype)


def record_header(sec, frac, caplen, orig_len):
    """A record's 16-byte header; frac is microseconds or nanoseconds as the file's magic says.
    The values are written as given (the bad-input tests write impossible ones on purpose)."""
    return _RECORD.pack(sec, frac, caplen, orig_len)


class PcapWriter:
    """Streams records into `path`; use as a context manager. `count` is the records written."""

    def __init__(self, path, linktype=LINKTYPE_ETHERNET, nano=False, snaplen=SNAPLEN):
        self._file = open(path, "wb")
        self._out = bytearray(file_header(linktype, nano, snaplen))
        self._pack = _RECORD.pack
        self.count = 0

    def write(self, sec, frac, data, orig_len=None):
        """One record holding `data`; orig_len is the length on the wire when data was cut."""
        out = self._out
        out += self._pack(sec, frac, len(data), len(data) if orig_len is None else orig_len)
        out += data
        self.count += 1
        if len(out) > _FLUSH_BYTES:
            self._file.write(out)
            out.clear()

    def close(self):
        if self._file.closed:
            return
        self._file.write(self._out)
        self._out.clear()
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_packets(path, packets, linktype=LINKTYPE_ETHERNET):
    """Write Scapy packets, each stamped with its `time` (seconds, float or Decimal), as a
    microsecond pcap; the fraction is rounded to the nearest microsecond, as Scapy's writer does."""
    with PcapWriter(path, linktype) as writer:
        for pkt in packets:
            sec = int(pkt.time)
            writer.write(sec, int(round((pkt.time - sec) * 1_000_000)), bytes(pkt))
    return path
