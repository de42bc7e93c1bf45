"""Capture -> events: the compiled reader's records as numpy columns, read in chunks.

One record per SCTP chunk or TCP segment (analyzer/read/_reader.c, `event_t`), one schema for SCTP, TCP
and MPTCP; gap blocks, NR blocks, duplicate TSNs and addresses live in a side table (`blocks`) that
each event points into with `blk_start` / `blk_count`. Serial numbers arrive as on the wire (32 bit);
flows.py unwraps them to 64 bit once, per sequence space, before anything else looks at them.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
import functools
import ipaddress
import os
import re
import shutil
import time

import numpy as np

from nrsack.analyzer import _native

EVENT_DTYPE = np.dtype([
    ("time_ns", "<i8"), ("dsn", "<u8"), ("data_ack", "<u8"), ("key", "<u8"), ("blk_start", "<i8"),
    ("frame", "<u4"), ("conn", "<i4"), ("seq", "<u4"), ("ack", "<u4"), ("len", "<u4"), ("wnd", "<u4"),
    ("tag", "<u4"), ("aux", "<u4"), ("flags", "<u4"),
    ("stream", "<u2"), ("ssn", "<u2"), ("blk_count", "<u2"), ("dss_len", "<u2"),
    ("dir", "u1"), ("proto", "u1"), ("chunk", "u1"), ("tcp_flags", "u1"),
])
BLOCK_DTYPE = np.dtype([("event", "<i8"), ("lo", "<u8"), ("hi", "<u8"), ("kind", "u1"), ("_pad", "V7")])
assert EVENT_DTYPE.itemsize == _native.EVENT_SIZE and BLOCK_DTYPE.itemsize == _native.BLOCK_SIZE

# event flags (EV_* in _reader.c)
DATA, ACK, NRSACK, UNORDERED = 1 << 0, 1 << 1, 1 << 2, 1 << 3
SACK_PERM, NR_PERM, NEVER_RENEGE, MPTCP_NR_CAP = 1 << 4, 1 << 5, 1 << 6, 1 << 7
EXT_NRSACK, EXT_FSACK, DSS_MAP, DATA_ACK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
MP_CAPABLE, MP_JOIN, DATA_FIN, SCTP_UDP = 1 << 12, 1 << 13, 1 << 14, 1 << 15
IPV6, DSN64, DACK64, TCP_SACK = 1 << 16, 1 << 17, 1 << 18, 1 << 19

# block kinds (BK_* in _reader.c)
BK_R, BK_NR, BK_DUP, BK_TCP_SACK, BK_TCP_NR, BK_MPTCP_NR, BK_ADDR = 1, 2, 3, 4, 5, 6, 7
BLOCK_KIND_NAMES = {BK_R: "r", BK_NR: "nr", BK_DUP: "dup", BK_TCP_SACK: "sack", BK_TCP_NR: "tcp_nr",
                    BK_MPTCP_NR: "mptcp_nr", BK_ADDR: "address"}

PROTO_SCTP, PROTO_TCP = 132, 6
CHUNK_TCP = 255
TCP_SYN, TCP_FIN, TCP_RST = 0x02, 0x01, 0x04

# 65,536 frames (~6 MB of events) per chunk: small enough that each flow's rows are picked from it in
# cache and that a short capture faults in little memory, large enough that the work per chunk in
# Python stays small (10M packets: as fast as with 2^17 or 2^18, in half the memory)
CHUNK_FRAMES = 1 << 16


class CaptureError(Exception):
    """The input cannot be analysed (not a capture, truncated, unknown link type, no flows)."""


@dataclass
class Conn:
    """One address/port pair as the reader saw it (an SCTP path, a TCP connection or MPTCP subflow)."""

    id: int
    proto: int
    udp: bool
    addr_a: str
    port_a: int
    addr_b: str
    port_b: int

    def endpoint(self, side):
        return format_endpoint(*((self.addr_a, self.port_a) if side == 0 else (self.addr_b, self.port_b)))


class ConnList(Sequence):
    """Every conn seen so far, in id order, kept as one packed record each (40 bytes, not a Python
    object with two address strings): a capture of a million connections holds a million of them.
    Indexing gives a Conn."""

    _DTYPE = np.dtype([("proto", "u1"), ("udp", "?"), ("a", "u1", 16), ("pa", "<u2"), ("b", "u1", 16), ("pb", "<u2")])

    def __init__(self):
        self._rows = np.empty(64, self._DTYPE)
        self._n = 0

    def add(self, reader_conns):
        """Appends the reader's conn tuples (id, proto, udp, v6, a, port a, b, port b), ids in order."""
        if not reader_conns:
            return
        need = self._n + len(reader_conns)
        if need > len(self._rows):
            grown = np.empty(max(need, 2 * len(self._rows)), self._DTYPE)
            grown[:self._n] = self._rows[:self._n]
            self._rows = grown
        new = self._rows[self._n:need]
        _, new["proto"], new["udp"], _, a, new["pa"], b, new["pb"] = zip(*reader_conns)
        new["a"] = np.frombuffer(b"".join(a), np.uint8).reshape(-1, 16)
        new["b"] = np.frombuffer(b"".join(b), np.uint8).reshape(-1, 16)
        self._n = need

    def __len__(self):
        return self._n

    def __getitem__(self, i):
        i = range(self._n)[i]  # negative indices, and IndexError beyond the end
        r = self._rows[i]
        return Conn(i, int(r["proto"]), bool(r["udp"]), address_text(r["a"].tobytes()), int(r["pa"]),
                    address_text(r["b"].tobytes()), int(r["pb"]))

    def endpoints(self, ids, flips) -> list:
        """[side 0, side 1] as "addr:port" (Conn.endpoint) of each conn in `ids`, whose endpoint B is side 0
        where `flips` is 1: all at once, as indexing a Conn costs microseconds (a million connections)."""
        rows = self._rows[np.asarray(ids, np.int64)]
        texts = []
        for column, port in (("a", "pa"), ("b", "pb")):
            raw = rows[column]
            # IPv4-mapped addresses (::ffff:a.b.c.d) in dotted form without the ipaddress module
            mapped = ~raw[:, :10].any(1) & (raw[:, 10] == 255) & (raw[:, 11] == 255)
            ends = []
            for is_v4, address, p in zip(mapped.tolist(), raw.tolist(), rows[port].tolist()):
                ends.append("%d.%d.%d.%d:%d" % (*address[12:], p) if is_v4 else format_endpoint(address_text(bytes(address)), p))
            texts.append(ends)
        return [[b, a] if flip else [a, b] for a, b, flip in zip(*texts, np.asarray(flips).tolist())]

    @property
    def ports(self) -> np.ndarray:
        """(conns, 2) int64: port A, port B of every conn."""
        rows = self._rows[:self._n]
        return np.stack((rows["pa"], rows["pb"]), 1).astype(np.int64)


@dataclass
class Capture:
    """Events of a whole capture, or of one chunk of it (`offset`: the capture-wide index of ev[0];
    block indices are chunk-relative; `conns` holds every conn seen so far)."""

    path: str
    linktype: int
    frames: int
    ev: np.ndarray       # EVENT_DTYPE
    blocks: np.ndarray   # BLOCK_DTYPE
    conns: Sequence      # ConnList
    findings: list = field(default_factory=list)  # [(frame, reason)] GEN-01
    rule_findings: list = field(default_factory=list)  # [(frame, rule, reason)] NR-05 / TN-05 / MN-02 / GEN-02 seen by the reader
    offset: int = 0
    truncated: str = None  # why reading stopped before the end of the file (None: it did not)


_V4_MAPPED = bytes(10) + b"\xff\xff"


@functools.lru_cache(maxsize=1 << 16)  # the checker asks for the same few addresses on every event
def address_text(raw16: bytes) -> str:
    if raw16[:12] == _V4_MAPPED:  # dotted as ipaddress writes it, ~10x faster (a flood's addresses are all new)
        return "%d.%d.%d.%d" % tuple(raw16[12:])
    address = ipaddress.IPv6Address(raw16)
    return str(address.ipv4_mapped) if address.ipv4_mapped else str(address)


def format_endpoint(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def block_address(lo: int, hi: int) -> str:
    return address_text(int(lo).to_bytes(8, "big") + int(hi).to_bytes(8, "big"))


def no_flows(path, cap: "Capture | None") -> CaptureError:
    """The error for a capture that holds no SCTP or TCP flow, with the reader's first reason when it
    had one (frames it could not read: an interface it does not take, a damaged header)."""
    if cap is None:
        return CaptureError(f"{path}: no SCTP or TCP flows in 0 frames")
    why = f" (frame {cap.findings[0][0]}: {cap.findings[0][1]})" if cap.findings else ""
    return CaptureError(f"{path}: no SCTP or TCP flows in {cap.frames} frames{why}")


def read_capture(path, progress=None) -> Capture:
    """The whole capture at once (the checker and the in-memory API need every event)."""
    return next(read_chunks(path, None, progress))


def read_chunks(path, frames=CHUNK_FRAMES, progress=None, wait_s=None, name=None):
    """Yields the capture at `path` (or a Ring of files: one capture) as Capture chunks of `frames` frames
    each (None: one chunk with everything);
    `progress(bytes_read)` after every CHUNK_FRAMES frames read. Findings accumulate: the last chunk
    carries all of them. wait_s: a chunk also ends when input pauses, at most wait_s after its first
    frame came (a slow live input; frames are then read one at a time). name: the capture's name in the Captures (its
    path by default)."""
    if isinstance(path, Ring):
        reader = RingReader(path)
        try:
            yield from _read_chunks(path.name if name is None else os.fspath(name), reader, frames, progress, None,
                                    wait_s)
        finally:
            reader.close()
        return
    path = os.fspath(path)
    name = path if name is None else os.fspath(name)
    # "-" is standard input; FIFOs and character devices stream like files
    if path != "-" and not os.path.exists(path):
        raise CaptureError(f"{name}: no such file")
    if os.path.isdir(path):
        raise CaptureError(f"{name}: is a folder, not a capture")
    decompressing = decompressing_of(path, name)
    try:
        reader = _open_reader(path, name, decompressing)
        yield from _read_chunks(name, reader, frames, progress, decompressing, wait_s)
    finally:
        if decompressing is not None:
            reader = None  # closes the pipe: a decompressor still writing (the reading stopped early) ends
            decompressing.stop()


@dataclass(frozen=True)
class Ring:
    """Files that continue each other (a tcpdump -C / -G ring, editcap -c pieces), in time order: read as
    one capture (inputs.py decides which files do). name: the capture's name in the outputs."""

    paths: tuple
    name: str

    def __str__(self):
        return self.name

    def size(self) -> int:
        return sum(os.path.getsize(path) for path in self.paths)


class RingReader:
    """The compiled Reader over a Ring's files one after the other (Reader.open_next: frame numbers,
    connections, clock and findings carry over), with the Reader's interface for _read_chunks."""

    def __init__(self, ring):
        self.paths, self.at, self.before = ring.paths, 0, 0
        self.cut = []  # "FILE: why" of files before the current one that ended inside a record
        self.decompressing = decompressing_of(self.paths[0])
        self.reader = _open_reader(self.paths[0], self.paths[0], self.decompressing)

    def read(self, max_frames):
        got = self.reader.read(max_frames)
        while got < max_frames and self.at + 1 < len(self.paths):
            cut = self.reader.truncated()
            if cut:
                self.cut.append(f"{self.paths[self.at]}: {cut}")
            self.before += os.path.getsize(self.paths[self.at])
            self.at += 1
            self.close()
            path = self.paths[self.at]
            self.decompressing = decompressing_of(path)
            try:
                self.reader.open_next(path if self.decompressing is None else self.decompressing.source)
            except _native.ReaderError as error:
                raise CaptureError(f"{path}: not a readable capture: {error}") from None
            finally:
                if self.decompressing is not None:
                    self.decompressing.opened()
            got += self.reader.read(max_frames - got)
        return got

    def position(self):
        return self.before + self.reader.position()

    def truncated(self):
        last = self.reader.truncated()
        if len(self.paths) == 1:
            return last
        return "; ".join(self.cut + ([f"{self.paths[self.at]}: {last}"] if last else [])) or None

    def close(self):
        if self.decompressing is not None:
            self.decompressing.stop()
            self.decompressing = None

    def __getattr__(self, name):  # take_chunk, conns, findings, frames, linktype ...: the Reader's own
        return getattr(self.reader, name)


# the first bytes of the compressed files Wireshark opens -> (what it is, the command that streams it out)
COMPRESSIONS = {b"\x1f\x8b": ("gzip", ["gzip", "-dc"]),
                b"\x28\xb5\x2f\xfd": ("zstd", ["zstd", "-dcq"]),
                b"\x04\x22\x4d\x18": ("lz4", ["lz4", "-dcq"])}
# libpcap's words for a file shorter than its header
_SHORT_HEADER = re.compile(r"truncated dump file; tried to read (\d+) file header bytes, only got (\d+)")


def _compression(path):
    """-> (name, command) when `path` is a regular file compressed as Wireshark reads them, else None.
    Standard input is not peeked at: its first bytes would be gone for the reader."""
    if path == "-" or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            first = handle.read(4)
    except OSError as error:  # the reader would fail alike; say it in one line here, where it is found
        raise CaptureError(f"{path}: cannot be read ({error.strerror or error})") from None
    return next((found for magic, found in COMPRESSIONS.items() if first.startswith(magic)), None)


def decompressing_of(path, name=None) -> "Decompressing | None":
    """The decompression streaming the file at `path` (shown as `name`) out, when it is compressed."""
    compression = _compression(path)
    return None if compression is None else Decompressing(path if name is None else name, path, *compression)


class Decompressing:
    """A compressed capture streamed through its decompressor's command into the reader, as a pipe:
    bounded memory, and the reader reads pipes already."""

    def __init__(self, shown, path, name, command):
        if shutil.which(command[0]) is None:
            raise CaptureError(f"{shown}: {name}-compressed; reading it needs the {command[0]} command "
                               f"(Debian package {command[0]})")
        import subprocess  # here: a plain capture's start-up does without it

        self.name = name
        self._complaint = None
        self.process = subprocess.Popen([*command, path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.source = f"/dev/fd/{self.process.stdout.fileno()}"

    def opened(self):
        """The reader has opened the pipe with a descriptor of its own: ours would keep it open."""
        self.process.stdout.close()

    def failure(self, wait_s=5.0):
        """-> why the decompression failed ("gzip: ...: unexpected end of file"), or None when it did not
        (or is still running after `wait_s`: then the bytes it gives are what is wrong)."""
        import subprocess

        try:
            code = self.process.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None
        if code <= 0:  # 0, or ended by SIGPIPE: the reading stopped early
            return None
        if self._complaint is None:
            lines = self.process.stderr.read().decode(errors="replace").strip().splitlines()
            self._complaint = f"{self.name} decompression failed: {lines[-1] if lines else f'exit status {code}'}"
        return self._complaint

    def stop(self):
        self.process.stdout.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stderr.close()


def _open_reader(path, name, decompressing=None):
    """The compiled Reader of `path` (through `decompressing`, when compressed); libpcap's errors are
    said in nrsack's words, of the capture called `name`."""
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        raise CaptureError(f"{name}: not a readable capture: the file is empty")
    try:
        reader = _native.Reader(path if decompressing is None else decompressing.source)
    except _native.ReaderError as error:
        message = str(error)
        short = _SHORT_HEADER.search(message)
        failed = None if decompressing is None else decompressing.failure(wait_s=1.0)
        if failed:
            message = failed
        elif decompressing is not None and short and short.group(2) == "0":
            message = f"empty inside its {decompressing.name} compression"
        elif short:
            message = f"cut short inside its file header ({short.group(2)} of {short.group(1)} bytes)"
        elif "unknown file format" in message:
            message = "neither pcap nor pcapng" + (f" inside its {decompressing.name} compression" if decompressing
                                                   else " (nor a gzip, zstd or lz4 compressed one)")
        raise CaptureError(f"{name}: not a readable capture: {message}") from None
    finally:
        if decompressing is not None:
            decompressing.opened()
    return reader


def _read_chunks(name, reader, frames, progress, decompressing, wait_s):
    _native.keep_freed_memory()
    conns = ConnList()
    offset = 0
    done = interrupted = False
    while not done:
        wanted = frames or CHUNK_FRAMES
        first_at = None  # when the chunk's first frame came
        while True:
            step = 1 if wait_s is not None else min(wanted, CHUNK_FRAMES)
            try:
                if first_at is not None:  # frames to show: no waiting past wait_s after the first of them
                    left = wait_s - (time.monotonic() - first_at)
                    if left <= 0 or not reader.ready(left):
                        break
                got = reader.read(step)
            except _native.ReaderError as error:
                failed = None if decompressing is None else decompressing.failure(wait_s=1.0)
                raise CaptureError(f"{name}: damaged or truncated capture, {failed or error}") from None
            except KeyboardInterrupt:  # Ctrl-C while waiting for a live input: its frames so far still count
                interrupted = done = True
                break
            if progress is not None:
                progress(reader.position())
            if got < step:
                done = True
                break
            if frames:
                wanted -= got
                if wanted == 0:
                    break
            if wait_s is not None and first_at is None:
                first_at = time.monotonic()
        # the reader's own buffers, handed over and viewed in place (no copy)
        ev_buffer, ev_used, block_buffer, block_used = reader.take_chunk()
        conns.add(reader.conns(len(conns)))
        ev = np.frombuffer(ev_buffer, EVENT_DTYPE, count=ev_used // EVENT_DTYPE.itemsize)
        blocks = np.frombuffer(block_buffer, BLOCK_DTYPE, count=block_used // BLOCK_DTYPE.itemsize)
        noted = [(int(frame), rule, reason) for frame, rule, reason in reader.rule_findings() + reader.notes()]
        truncated = reader.truncated()
        if done and decompressing is not None:  # the capture ends where its decompression failed
            truncated = "; ".join(filter(None, (truncated, decompressing.failure()))) or truncated
        yield Capture(name, reader.linktype(), reader.frames(), ev, blocks, conns,
                      [(int(frame), reason) for frame, reason in reader.findings()],
                      sorted(noted, key=lambda f: f[0]), offset, truncated)
        offset += len(ev)
    if interrupted:
        raise KeyboardInterrupt


def join_chunks(chunks) -> Capture:
    """One Capture of consecutive chunks (block and event indices made capture-wide)."""
    if len(chunks) == 1:
        return chunks[0]
    last = chunks[-1]
    ev = np.concatenate([c.ev for c in chunks])
    blocks = np.concatenate([c.blocks for c in chunks])
    block_offset = 0
    start = 0
    for c in chunks:
        n = len(c.ev)
        ev["blk_start"][start:start + n] += block_offset
        blocks["event"][block_offset:block_offset + len(c.blocks)] += c.offset
        start += n
        block_offset += len(c.blocks)
    return Capture(last.path, last.linktype, last.frames, ev, blocks, last.conns, last.findings, last.rule_findings,
                   truncated=last.truncated)
