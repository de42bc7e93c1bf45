"""Hostile captures, made byte by byte: the classes of bad input users meet (lengths the wire contradicts,
odd clocks, acks far outside the window, DSS options whose flags and lengths disagree, captures cut
short, damaged records) and a few more, each from a small well-formed transfer.

`build_all()` returns them as [(name, file bytes, expectation)]; expectation is "usable"
(analyze exits 0, check 0 or 1) or "unusable" (both exit 2). Figures are checked by the tests.
"""

import hashlib
import math
import random
import struct
import zlib

from nrsack.generator.pcapfile import file_header, record_header
from support.pcaps import FSACK_INIT, NR_SACK, chunk, data_chunk, init_chunk, nr_sack_chunk

EPOCH = 1_700_000_000
A, B = bytes([192, 0, 2, 1]), bytes([198, 51, 100, 2])
LINK_ETHERNET, LINK_RAW = 1, 101
SNAPLEN = 262144  # what tcpdump writes by default, as the captures these imitate carry


# ---- transport and IP ----

def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload, total=None):
    total = 20 + len(payload) if total is None else total
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 1, 0x4000, 64, proto, 0, src, dst)
    return header[:10] + struct.pack("!H", checksum(header)) + header[12:] + payload


def tcp(sport, dport, seq, ack, flags, options=b"", payload=b""):
    options += b"\x01" * (-len(options) % 4)
    offset = (20 + len(options)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, offset << 4, flags, 65535,
                       0, 0) + options + payload


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01
SACK_PERM = b"\x04\x02"
NR_PERM = b"\xfd\x05" + struct.pack("!H", 0x4E52) + b"\x00"


def sack_option(blocks):
    return bytes([5, 2 + 8 * len(blocks)]) + b"".join(struct.pack("!II", l & 0xFFFFFFFF, r & 0xFFFFFFFF) for l, r in blocks)


def nr_option(blocks):
    return bytes([253, 4 + 8 * len(blocks)]) + struct.pack("!H", 0x4E52) + b"".join(
        struct.pack("!II", l & 0xFFFFFFFF, r & 0xFFFFFFFF) for l, r in blocks)


def sctp_packet(vtag, chunks, sport=5000, dport=5001):
    body = struct.pack("!HHII", sport, dport, vtag, 0) + b"".join(chunks)
    crc = zlib.crc32(body) & 0xFFFFFFFF  # not CRC32c: the analyzer does not check it
    return body[:8] + struct.pack("<I", crc) + body[12:]


# ---- well-formed transfers: [(time in s, direction 0 = A->B, IP payload bytes, IP protocol)] ----

def tcp_transfer(segments=12, size=1000, isn=0x7FFFFF00, loss=(3,)):
    """A -> B with SACK and NR-SACK negotiated; the segments in `loss` arrive only when retransmitted."""
    out = [(0.0, 0, tcp(40000, 80, isn, 0, SYN, SACK_PERM + NR_PERM), 6),
           (0.01, 1, tcp(80, 40000, 7, isn + 1, SYN | ACK, SACK_PERM + NR_PERM), 6),
           (0.011, 0, tcp(40000, 80, isn + 1, 8, ACK), 6)]
    t, base = 0.02, isn + 1
    got = []
    for k in range(segments):
        seq = base + k * size
        out.append((t, 0, tcp(40000, 80, seq, 8, ACK | PSH, payload=b"x" * size), 6))
        t += 0.001
        if k not in loss:
            got.append((seq, seq + size))
            cum = base
            for lo, hi in sorted(got):
                if lo == cum:
                    cum = hi
            above = [(lo, hi) for lo, hi in sorted(got) if lo > cum]
            options = nr_option(above[-1:]) + sack_option(above[:1]) if above else b""
            out.append((t + 0.005, 1, tcp(80, 40000, 8, cum, ACK, options), 6))
    for k in loss:
        seq = base + k * size
        out.append((t + 0.05, 0, tcp(40000, 80, seq, 8, ACK, payload=b"x" * size), 6))
    end = base + segments * size
    out.append((t + 0.06, 1, tcp(80, 40000, 8, end, ACK), 6))
    out.append((t + 0.07, 0, tcp(40000, 80, end, 8, ACK | FIN), 6))
    out.append((t + 0.08, 1, tcp(80, 40000, 8, end + 1, ACK | FIN), 6))
    return out


def sctp_transfer(chunks=12, size=800, tsn0=0xFFFFFFF8, loss=(2,), tags=(0x1111, 0x2222)):
    """An NR-SACK association A -> B (A's tag, B's tag); TSNs wrap inside the transfer."""
    tag_a, tag_b = tags
    out = [(0.0, 0, sctp_packet(0, [init_chunk(tag_a, tsn0, ext=[NR_SACK, FSACK_INIT])]), 132),
           (0.01, 1, sctp_packet(tag_a, [init_chunk(tag_b, 1, ext=[NR_SACK, FSACK_INIT], ack=True)], 5001, 5000), 132),
           (0.011, 0, sctp_packet(tag_b, [chunk(0x0A, b"cookie00")]), 132),
           (0.02, 1, sctp_packet(tag_a, [chunk(0x0B, b"")], 5001, 5000), 132)]
    t = 0.03
    cum = tsn0 - 1
    got = set()
    for k in range(chunks):
        tsn = tsn0 + k
        out.append((t, 0, sctp_packet(tag_b, [data_chunk(tsn, size)]), 132))
        t += 0.001
        if k not in loss:
            got.add(k)
            while (cum - tsn0 + 1) in got:
                cum += 1
            nr = [(k2 - (cum - tsn0), k2 - (cum - tsn0)) for k2 in sorted(got) if tsn0 + k2 > cum]
            out.append((t + 0.004, 1, sctp_packet(tag_a, [nr_sack_chunk(cum, nr_gaps=nr[:1])], 5001, 5000), 132))
    for k in loss:
        out.append((t + 0.05, 0, sctp_packet(tag_b, [data_chunk(tsn0 + k, size)]), 132))
    out.append((t + 0.06, 1, sctp_packet(tag_a, [nr_sack_chunk(tsn0 + chunks - 1)], 5001, 5000), 132))
    return out


def sctp_shutdown(t, tags=(0x1111, 0x2222), cum=0):
    """SHUTDOWN (A, with its cum ack of B's TSNs), SHUTDOWN-ACK (B), SHUTDOWN-COMPLETE (A) from time t."""
    tag_a, tag_b = tags
    return [(t, 0, sctp_packet(tag_b, [chunk(0x07, struct.pack("!I", cum & 0xFFFFFFFF))]), 132),
            (t + 0.001, 1, sctp_packet(tag_a, [chunk(0x08, b"")], 5001, 5000), 132),
            (t + 0.002, 0, sctp_packet(tag_b, [chunk(0x0E, b"")]), 132)]


def shifted(transfer, dt):
    return [(t + dt, direction, payload, proto) for t, direction, payload, proto in transfer]


def nr_sack_too_short():
    """nplab packetdrill's nr-sack-too-short-2: an NR-SACK chunk of 20 bytes whose counts (65,535 R,
    NR and dup each) need 786,440, its cum ack beyond every TSN sent; the rest a clean transfer."""
    transfer = sctp_transfer()
    bogus = chunk(NR_SACK, struct.pack("!IIHHHH", 0x7FFF0000, 65536, 0xFFFF, 0xFFFF, 0xFFFF, 0))
    transfer.insert(7, (transfer[6][0] + 0.0001, 1, sctp_packet(0x1111, [bogus], 5001, 5000), 132))
    return transfer


def flows_after_flows():
    """A second flow on the same endpoints after the first: {name: transfer}. TCP: a new SYN (new ISN)
    121 s after both FINs (TIME-WAIT: the last ACK is not captured) or after a RST; SCTP: a restart
    (an INIT with new tags and a new initial TSN, no SHUTDOWN; RFC 9260 5.2.4) and a new association
    after SHUTDOWN-COMPLETE."""
    first_tcp = tcp_transfer(loss=())  # clean: tcp_transfer's NR blocks with a loss break TN-03
    rst = first_tcp[:-2] + [(first_tcp[-2][0], 0, tcp(40000, 80, 0x7FFFFF01 + 12000, 8, 0x04), 6)]
    second_tcp = shifted(tcp_transfer(isn=0x1234, loss=()), 121.0)
    first_sctp = sctp_transfer()
    second_sctp = shifted(sctp_transfer(tsn0=0x40000000, tags=(0x3333, 0x4444)), 30.0)
    return {"tcp-reused-4tuple-timewait": first_tcp + second_tcp,
            "tcp-reused-4tuple-rst": rst + second_tcp,
            "sctp-restart": first_sctp + second_sctp,
            "sctp-after-shutdown-complete": first_sctp + sctp_shutdown(first_sctp[-1][0] + 0.01) + second_sctp}


def dss_option(flags, body):
    return bytes([30, 4 + len(body), 0x20, flags]) + body


def mptcp_transfer(segments=8, size=1000, rng=None):
    """One subflow with DSS mappings and DATA ACKs; with `rng`, every DSS gets random flags and length."""
    isn = 1000
    capable = bytes([30, 12, 0x01, 0x81]) + struct.pack("!Q", 0x1234)
    out = [(0.0, 0, tcp(41000, 443, isn, 0, SYN, capable + SACK_PERM), 6),
           (0.01, 1, tcp(443, 41000, 5, isn + 1, SYN | ACK, capable + SACK_PERM), 6),
           (0.011, 0, tcp(41000, 443, isn + 1, 6, ACK, capable), 6)]
    t, dsn = 0.02, 0x10000
    for k in range(segments):
        mapping = dss_option(0x04, struct.pack("!IIHH", dsn + k * size, 1 + k * size, size, 0))
        ack = dss_option(0x01, struct.pack("!I", dsn + (k + 1) * size))
        if rng is not None:
            flags = rng.randrange(256)
            mapping = bytes([30, rng.randrange(4, 40), 0x20, flags]) + bytes(rng.randrange(256) for _ in range(36))
            ack = bytes([30, rng.randrange(4, 40), 0x20, rng.randrange(256)]) + bytes(rng.randrange(256) for _ in range(36))
            mapping, ack = mapping[:mapping[1]], ack[:ack[1]]
        out.append((t, 0, tcp(41000, 443, isn + 1 + k * size, 6, ACK, mapping, b"m" * size), 6))
        out.append((t + 0.003, 1, tcp(443, 41000, 6, isn + 1 + (k + 1) * size, ACK, ack), 6))
        t += 0.004
    return out



def random_dss(rng, data_ack, dsn, ssn, dll):
    """A DSS option of random flags (every bit, F and the reserved one too) around plausible fields: the
    DATA ACK, DSN, subflow sequence number and Data-Level Length given, each sometimes replaced by a
    random value; NR blocks with a random count; half the time at the length its flags ask for, else
    cut or padded with random bytes to a random length."""
    flags = rng.randrange(256)
    def value(v, bits):
        return rng.randrange(1 << bits) if rng.random() < 0.15 else v % (1 << bits)
    body = b""
    if flags & 0x01:
        body += struct.pack("!Q", value(data_ack, 64)) if flags & 0x02 else struct.pack("!I", value(data_ack, 32))
    if flags & 0x04:
        body += struct.pack("!Q", value(dsn, 64)) if flags & 0x08 else struct.pack("!I", value(dsn, 32))
        body += struct.pack("!IH", value(ssn, 32), dll)
        if rng.random() < 0.3:
            body += b"\0\0"  # a checksum
    if flags & 0x20:
        count = rng.randrange(4)
        body += bytes([count, 0])
        wide = flags & 0x40
        for _ in range(count if rng.random() < 0.7 else rng.randrange(4)):
            start = rng.randrange(2000)
            end = start + rng.randrange(-10, 500)
            body += struct.pack("!QQ", start, end % (1 << 64)) if wide else struct.pack("!II", start, end % (1 << 32))
    if rng.random() < 0.5:
        length = rng.randrange(4, 41)
        body = (body + bytes(rng.randrange(256) for _ in range(40)))[:length - 4]
    body = body[:36]
    return bytes([30, 4 + len(body), 0x20, flags]) + body


def mptcp_idsn(key):
    """RFC 8684 3.1, version 1: the least significant 64 bits of SHA-256 of the key."""
    return int.from_bytes(hashlib.sha256(struct.pack("!Q", key)).digest()[-8:], "big")


def mptcp_random_dss(rng, segments=600, max_payload=10):
    """An MPTCP connection with a valid handshake (keys, NR-SACK capability) whose client sends small
    segments (0 to max_payload bytes, now and then one sent again), each with a random DSS (random_dss:
    flags, lengths, Data-Level Lengths; some with no DSS at all), and whose server acks each with a
    random DSS and no payload. The capture class of issue 29's data-level probe: a mapping's length may
    claim far more than the segment carries."""
    key_c, key_s, isn_c, isn_s = 0x1111222233334444, 0x5555666677778888, 1000, 5000
    nr = b"\xfd\x05" + struct.pack("!H", 0x4E52) + b"\x02"
    out = [(0.0, 0, tcp(41000, 443, isn_c, 0, SYN, bytes([30, 4, 0x01, 0x01]) + SACK_PERM + nr), 6),
           (0.01, 1, tcp(443, 41000, isn_s, isn_c + 1, SYN | ACK,
                         bytes([30, 12, 0x01, 0x01]) + struct.pack("!Q", key_s) + SACK_PERM + nr), 6),
           (0.011, 0, tcp(41000, 443, isn_c + 1, isn_s + 1, ACK,
                          bytes([30, 20, 0x01, 0x01]) + struct.pack("!QQ", key_c, key_s)), 6)]
    dsn_c, dsn_s = mptcp_idsn(key_c) + 1, mptcp_idsn(key_s) + 1
    t, sent, acked = 0.02, 0, 0
    for _ in range(segments):
        size = rng.randrange(max_payload + 1)
        offset = sent if rng.random() > 0.05 or not sent else max(0, sent - rng.randrange(1, 30))
        size = size if offset == sent else min(size, sent - offset) or 1
        dll = rng.choice((size, size + rng.randrange(1, 20), rng.randrange(1 << 16), 0))
        option = random_dss(rng, dsn_s, dsn_c + offset, 1 + offset, dll) if rng.random() > 0.1 else b""
        out.append((t, 0, tcp(41000, 443, isn_c + 1 + offset, isn_s + 1, ACK | PSH, option, b"m" * size), 6))
        sent = max(sent, offset + size)
        acked = rng.randrange(acked, sent + 1)
        option = random_dss(rng, dsn_c + acked, dsn_s, 1, rng.randrange(1 << 16))
        out.append((t + 0.0005, 1, tcp(443, 41000, isn_s + 1, isn_c + 1 + acked, ACK, option), 6))
        t += 0.001
    return out


# ---- files ----

def ip_frames(transfer, link=LINK_ETHERNET, total=None):
    """[(t, frame bytes)] of a transfer; total(i, payload) -> the IP total length to write (None: true)."""
    frames = []
    # a capture is in time order (the transfers list an ack right after the segment it answers)
    transfer = sorted(transfer, key=lambda packet: packet[0])
    for i, (t, direction, payload, proto) in enumerate(transfer):
        src, dst = (A, B) if direction == 0 else (B, A)
        packet = ipv4(src, dst, proto, payload, None if total is None else total(i, payload))
        if link == LINK_ETHERNET:
            packet = b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + packet
        frames.append((t, packet))
    return frames


def pcap_bytes(records, link=LINK_ETHERNET, nano=False):
    """records: [(seconds, fraction, caplen bytes, orig length)]."""
    out = [file_header(link, nano, snaplen=SNAPLEN)]
    for sec, frac, data, orig in records:
        out.append(record_header(sec & 0xFFFFFFFF, frac, len(data), orig) + data)
    return b"".join(out)


def plain_records(frames, start=EPOCH):
    out = []
    for t, data in frames:
        usec = int(round(t * 1e6))
        out.append((start + usec // 1_000_000, usec % 1_000_000, data, len(data)))
    return out


def pcapng_bytes(frames, tsresol=6, start=EPOCH, interfaces=((LINK_ETHERNET,),), which=None):
    """frames [(t, data)] as Enhanced Packet Blocks; tsresol the if_tsresol option byte (6: us, 0: s)."""
    def block(kind, body):
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", kind, 12 + len(body)) + body + struct.pack("<I", 12 + len(body))

    out = [block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))]
    for (link,) in interfaces:
        options = struct.pack("<HHB", 9, 1, tsresol) + b"\0\0\0" + struct.pack("<HH", 0, 0)
        out.append(block(1, struct.pack("<HHI", link, 0, 262144) + options))
    unit = 10 ** tsresol if tsresol < 128 else 2 ** (tsresol & 127)
    for i, (t, data) in enumerate(frames):
        ts = int(start * unit + t * unit) & 0xFFFFFFFFFFFFFFFF
        iface = 0 if which is None else which(i)
        out.append(block(6, struct.pack("<IIIII", iface, ts >> 32, ts & 0xFFFFFFFF, len(data), len(data)) + data))
    return b"".join(out)


def build_all():
    """Every hostile capture: -> [(name, file bytes, expectation)]."""
    made = []

    def put(name, data, expectation="usable"):
        made.append((name, data, expectation))

    transfers = {"tcp": tcp_transfer(), "sctp": sctp_transfer(), "mptcp": mptcp_transfer()}
    for kind, transfer in transfers.items():
        frames = ip_frames(transfer)
        records = plain_records(frames)
        put(f"{kind}-clean", pcap_bytes(records))
        # lengths: IP total length 0 (offload), with the original length below the captured one
        put(f"{kind}-iplen-zero", pcap_bytes(plain_records(ip_frames(transfer, total=lambda i, p: 0))))
        put(f"{kind}-iplen-zero-orig-short", pcap_bytes(
            [(s, f, d, 10) for s, f, d, _ in plain_records(ip_frames(transfer, total=lambda i, p: 0))]))
        put(f"{kind}-orig-below-caplen", pcap_bytes([(s, f, d, max(len(d) - 30, 0)) for s, f, d, _ in records]))
        put(f"{kind}-orig-huge", pcap_bytes([(s, f, d, 0xFFFFFFF0) for s, f, d, _ in records]))
        put(f"{kind}-iplen-65535", pcap_bytes(plain_records(ip_frames(transfer, total=lambda i, p: 65535))))
        put(f"{kind}-iplen-65535-every-other", pcap_bytes(plain_records(
            ip_frames(transfer, total=lambda i, p: 65535 if i % 2 else None))))
        put(f"{kind}-raw-ip", pcap_bytes(plain_records(ip_frames(transfer, LINK_RAW)), LINK_RAW))
        # clocks
        put(f"{kind}-after-2038", pcap_bytes(plain_records(frames, start=(1 << 31) + 5)))
        put(f"{kind}-near-2106", pcap_bytes(plain_records(frames, start=(1 << 32) - 2)))
        put(f"{kind}-nano-fraction-too-big", pcap_bytes(
            [(s, 999_999_999 + i, d, o) for i, (s, f, d, o) in enumerate(records)], nano=True))
        for step_name, step in (("back-1h", -3600), ("back-years", -(1 << 30)), ("forward-years", 1 << 30),
                                ("back-10ms", -0.01)):
            half = len(frames) // 2
            shifted = frames[:half] + [(t + step, d) for t, d in frames[half:]]
            put(f"{kind}-clock-{step_name}", pcap_bytes(plain_records(shifted, start=EPOCH + (1 << 30))))
        put(f"{kind}-clock-zero", pcap_bytes([(0, 0, d, o) for _, _, d, o in records]))
        put(f"{kind}-clock-shuffled", pcap_bytes(random.Random(7).sample(records, len(records))))
        put(f"{kind}-pcapng-us", pcapng_bytes(frames))
        put(f"{kind}-pcapng-seconds-large", pcapng_bytes(frames, tsresol=0, start=(1 << 62)))
        put(f"{kind}-pcapng-2pow-large", pcapng_bytes(frames, tsresol=0x80 | 30, start=(1 << 40)))
        # resolutions a 64-bit count cannot reach a second in (tshark reads them: every frame at time 0)
        put(f"{kind}-pcapng-tsresol-2pow127", pcapng_bytes(frames, tsresol=0xFF))
        put(f"{kind}-pcapng-tsresol-10pow30", pcapng_bytes(frames, tsresol=30))
        # cut short: inside the last record's data, inside its header, and in the first record
        whole = pcap_bytes(records)
        put(f"{kind}-cut-last-data", whole[:-5])
        put(f"{kind}-cut-last-header", whole[:len(whole) - len(records[-1][2]) - 8])
        put(f"{kind}-cut-first-record", whole[:24 + 16 + 3], "unusable")
        # damaged records: random bytes flipped in the packets (headers of the records kept)
        for seed in range(3):
            rng = random.Random(seed)
            damaged = []
            for s, f, d, o in records:
                d = bytearray(d)
                for _ in range(3):
                    d[rng.randrange(14, len(d))] = rng.randrange(256)
                damaged.append((s, f, bytes(d), o))
            put(f"{kind}-bitflips-{seed}", pcap_bytes(damaged))
        # a record claiming more captured bytes than libpcap allows, in the middle
        put(f"{kind}-bogus-caplen-mid", pcap_bytes(records[:4]) + struct.pack("<IIII", records[4][0], 0, 1 << 30, 1 << 30)
            + b"\0" * 64)
    # acks far outside the window: one ack 2^31 away, then the transfer goes on
    tcp_frames = tcp_transfer()
    far = list(tcp_frames)
    far.insert(8, (far[7][0] + 0.0001, 1, tcp(80, 40000, 8, 0x7FFFFF01 + (1 << 31), ACK), 6))
    put("tcp-ack-2pow31-away", pcap_bytes(plain_records(ip_frames(far))))
    far3 = list(tcp_frames)
    for k in (6, 9, 12):
        far3.insert(k, (far3[k - 1][0] + 0.0001, 1, tcp(80, 40000, 8, 0x12345678 + k, ACK), 6))
    put("tcp-acks-random-far", pcap_bytes(plain_records(ip_frames(far3))))
    sctp_frames = sctp_transfer()
    far_sctp = list(sctp_frames)
    far_sctp.insert(7, (far_sctp[6][0] + 0.0001, 1, sctp_packet(0x1111, [nr_sack_chunk(0x7FFFFFF0)], 5001, 5000), 132))
    put("sctp-ack-2pow31-away", pcap_bytes(plain_records(ip_frames(far_sctp))))
    bad_counts = list(sctp_frames)
    bad_counts.insert(7, (bad_counts[6][0] + 0.0001, 1, sctp_packet(0x1111, [nr_sack_chunk(
        0xFFFFFFF8, nr_gaps=[(2, 1)], n_r=4000, n_nr=4000)], 5001, 5000), 132))
    put("sctp-nrsack-counts-lie", pcap_bytes(plain_records(ip_frames(bad_counts))))
    put("sctp-nrsack-too-short", pcap_bytes(plain_records(ip_frames(nr_sack_too_short()))))
    for name, transfer in flows_after_flows().items():
        put(name, pcap_bytes(plain_records(ip_frames(transfer))))
    # DSS options with random flags and lengths
    for seed in range(12):
        put(f"mptcp-dss-random-{seed}", pcap_bytes(plain_records(ip_frames(mptcp_transfer(rng=random.Random(seed))))))
    # random DSS options around plausible fields on small segments: mappings claiming more than is carried
    for seed in range(6):
        put(f"mptcp-dss-mapped-random-{seed}", pcap_bytes(plain_records(ip_frames(mptcp_random_dss(random.Random(seed))))))
    # several interfaces of different link types, several sections
    frames = ip_frames(tcp_transfer())
    raw = ip_frames(tcp_transfer(), LINK_RAW)
    mixed = [frames[i] if i % 2 == 0 else raw[i] for i in range(len(frames))]
    put("tcp-pcapng-two-linktypes", pcapng_bytes(mixed, interfaces=((LINK_ETHERNET,), (LINK_RAW,)), which=lambda i: i % 2))
    half = len(frames) // 2
    put("tcp-pcapng-two-sections", pcapng_bytes(frames[:half]) + pcapng_bytes(frames[half:]))
    # nothing to analyse
    put("empty-file", b"", "unusable")
    put("header-only", pcap_bytes([]), "unusable")
    put("text-file", b"not a capture\n" * 40, "unusable")
    put("unknown-linktype", pcap_bytes(plain_records(frames), link=147), "unusable")
    put("pcapng-unknown-linktype", pcapng_bytes(frames, interfaces=((147,),)), "unusable")
    put("udp-only", pcap_bytes(plain_records([(0.0, b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00" + ipv4(
        A, B, 17, struct.pack("!HHHH", 53, 53, 12, 0) + b"abcd"))])), "unusable")
    return made


def write_transfers(folder, transfers):
    """{name: transfer} -> {name: path of its pcap in folder}."""
    paths = {}
    for name, transfer in transfers.items():
        paths[name] = folder / f"{name}.pcap"
        paths[name].write_bytes(pcap_bytes(plain_records(ip_frames(transfer))))
    return paths


def many_blocks_capture(path, blocks, acks, data=True):
    """An NR-SACK association whose receiver sends `acks` NR-SACKs of `blocks` R and `blocks` NR gap
    blocks each (every other TSN of 4 * blocks outstanding TSNs: R, NR, R, NR ...); data=False leaves
    out the DATA chunks, so checking it costs the acks alone. For the check's bench and the dashboard."""
    transfer = [(0.0, 0, sctp_packet(0, [init_chunk(1, 1, ext=[NR_SACK])]), 132),
                (0.001, 1, sctp_packet(1, [init_chunk(2, 1, ext=[NR_SACK], ack=True)], sport=5001, dport=5000), 132)]
    t, tsns = 0.002, 4 * blocks + 2
    for first in range(1, tsns + 1 if data else 1, 700):  # DATA chunks of 4 bytes, 700 to a packet
        chunks = [data_chunk(tsn, size=4) for tsn in range(first, min(first + 700, tsns + 1))]
        transfer.append((t, 0, sctp_packet(2, chunks), 132))
        t += 0.0001
    # cum ack 1; gap blocks at offsets 2, 4, 6 ... alternately R and NR, each one TSN
    r = [(2 + 4 * k, 2 + 4 * k) for k in range(blocks)]
    nr = [(4 + 4 * k, 4 + 4 * k) for k in range(blocks)]
    for k in range(acks):
        transfer.append((t + 0.01 * (k + 1), 1, sctp_packet(1, [nr_sack_chunk(1, r, nr)], sport=5001, dport=5000),
                         132))
    with open(path, "wb") as f:
        f.write(pcap_bytes(plain_records(ip_frames(transfer, link=LINK_RAW)), link=LINK_RAW))


def frame_bytes_bound(path):
    """-> what the capture's frames can hold: the sum of the records' lengths as the reader believes
    them, at least captured and at most 262,144, from the pcap record headers (pcapng: its size, the
    records lie inside it)."""
    data = path.read_bytes()
    if data[:4] not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        return len(data)
    total, off = 0, 24
    while off + 16 <= len(data):
        _, _, caplen, orig = struct.unpack_from("<IIII", data, off)
        total += min(max(orig, caplen), 262144)
        off += 16 + caplen
    return total


def check_bounds(entry, bound):
    """Every figure of a summary entry within its bounds: 0 <= p <= b <= q, or null with the reason
    where the capture cannot tell B; byte counts within `bound`."""
    p, b, q = entry["p_ns"], entry["b_ns"], entry["q_ns"]
    if entry["sndbuf_verdict"] == "cannot tell":  # figures the capture cannot support: null, with the reason
        assert p is b is entry["p_over_q"] is entry["b_over_q"] is entry["blocking_intervals"] is None, entry["id"]
        assert entry["sndbuf_bytes"] is None and entry["sndbuf_reason"], entry["id"]
    else:
        assert 0 <= p <= b <= q, (entry["id"], p, b, q)
        assert 0 <= entry["p_over_q"] <= entry["b_over_q"] <= 1, entry["id"]
        assert entry["blocking_intervals"] >= 0
    for key in ("data_bytes", "acked_bytes", "max_rtxq_sack_bytes", "max_rtxq_nr_bytes", "max_rtxq_whatif_bytes",
                "sndbuf_bytes", "max_payload_bytes"):
        if key != "sndbuf_bytes" or entry[key] is not None:  # no B: never full, or cannot tell
            assert 0 <= entry[key] <= bound, (entry["id"], key, entry[key], bound)
    assert entry["acked_bytes"] <= entry["data_bytes"], entry["id"]
    assert entry["throughput_bps"] >= 0 and math.isfinite(entry["throughput_bps"]), entry["id"]


# ---- floods of flows (issue 29): written straight to a file, a record at a time, for a million flows ----

FLOOD_KINDS = ("syn", "data", "unacked")


def write_flood(path, flows, kind="syn", gap_us=10):
    """A pcap (raw IP) of `flows` TCP flows on distinct client endpoints, one every gap_us, none ever closed:
    "syn": one SYN each (a SYN flood); "data": handshake, 100 bytes of data and their ack; "unacked": the
    same with the data never acked. The packets are packed from templates (no checksums: nothing reads
    them) so a million flows take seconds. -> the number of frames written."""
    packets = {"syn": [(0, SYN, 0, 0)], "unacked": [(0, SYN, 0, 0), (1, SYN | ACK, 0, 1), (0, ACK, 1, 1),
                                                     (0, PSH | ACK, 1, 1)]}
    packets["data"] = packets["unacked"] + [(1, ACK, 1, 101)]
    steps = packets[kind]
    payload = b"x" * 100
    isn = (0x10000000, 0x20000000)  # client, server
    frames = 0
    with open(path, "wb") as out:
        out.write(file_header(LINK_RAW, snaplen=SNAPLEN))
        batch = []
        for k in range(flows):
            client = bytes([10, (k >> 16) & 0xFF, (k >> 8) & 0xFF, k & 0xFF])
            port = 1024 + (k % 60000)
            usec = k * gap_us
            for step, (side, flags, seq_off, ack_off) in enumerate(steps):
                data = payload if flags & PSH else b""
                src, dst, sport, dport = (client, B, port, 80) if side == 0 else (B, client, 80, port)
                seq = isn[side] + seq_off
                ack = isn[1 - side] + ack_off if flags & ACK else 0
                segment = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + data
                packet = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + len(data), 1, 0x4000, 64, 6, 0, src, dst) + segment
                t = usec + step
                batch.append(record_header(EPOCH + t // 1_000_000, t % 1_000_000, len(packet), len(packet)))
                batch.append(packet)
                frames += 1
            if len(batch) > 65536:
                out.write(b"".join(batch))
                batch = []
        out.write(b"".join(batch))
    return frames
