"""usrsctp multi-homed with CMT (root): one end per process in the linux-tcp namespaces, over UDP
encapsulation (port 9899), path i between 10.0.i.1 and 10.0.i.2. AF_CONN cannot multi-home
(docs/lab.md), so the ends use the kernel's UDP and the namespaces' forwarders are the link.

`python -m nrsack.lab.usrsctp_udp send|receive CONFIG.json OUT_DIR`, inside the namespace; the
compiled part is lab/_usrsctp_udp.c (in the lab's extension)."""

import ctypes
import json
import socket
import struct
import sys
from pathlib import Path

UDP_ENCAPS_PORT = 9899
PORTS = (5001, 5002)  # the simulator's SCTP ports
MAX_ADDRESSES = 8
HEARTBEAT_MS = 200  # confirms the second path soon after the handshake


class Params(ctypes.Structure):
    _fields_ = [("nrsack", ctypes.c_int32), ("cmt", ctypes.c_int32), ("drain", ctypes.c_int32),
                ("n_local", ctypes.c_int32), ("n_remote", ctypes.c_int32), ("port", ctypes.c_uint16),
                ("peer_port", ctypes.c_uint16), ("sndbuf", ctypes.c_int64), ("rcvbuf", ctypes.c_int64),
                ("bytes", ctypes.c_int64), ("message", ctypes.c_int64),
                ("local", ctypes.c_uint32 * MAX_ADDRESSES), ("remote", ctypes.c_uint32 * MAX_ADDRESSES),
                ("timeout_s", ctypes.c_double), ("hb_interval_ms", ctypes.c_uint32)]


class Result(ctypes.Structure):
    _fields_ = [("first_send_us", ctypes.c_int64), ("done_us", ctypes.c_int64), ("bytes_sent", ctypes.c_int64),
                ("bytes_received", ctypes.c_int64), ("blocked_us", ctypes.c_int64),
                ("blocked_waits", ctypes.c_int64), ("complete", ctypes.c_int32)]


def _ip(text):
    return struct.unpack("=I", socket.inet_aton(text))[0]  # network order, as the C side stores it


def end(role, cfg, out_dir):
    """One end of the association, in this process (which then leaves: usrsctp's threads stay)."""
    from .linux_tcp import path_addresses
    from .usrsctp import library

    lib = library()
    lib.lab_udp_run.restype = ctypes.c_int
    sending = role == "send"
    paths = range(1 + len(cfg["more_paths"]))
    mine = [path_addresses(i)[0 if sending else 1] for i in paths]
    peers = [path_addresses(i)[1 if sending else 0] for i in paths]
    p = Params(nrsack=cfg["ack"] == "nrsack", cmt=len(mine) > 1, drain=cfg["drain"], n_local=len(mine),
               n_remote=len(peers), port=PORTS[0 if sending else 1], peer_port=PORTS[1 if sending else 0],
               sndbuf=cfg["sndbuf"], rcvbuf=cfg["rcvbuf"], bytes=cfg["bytes"], message=cfg["message"],
               timeout_s=cfg["timeout_s"], hb_interval_ms=HEARTBEAT_MS)
    for i, (a, b) in enumerate(zip(mine, peers)):
        p.local[i], p.remote[i] = _ip(a), _ip(b)
    r, err = Result(), ctypes.create_string_buffer(512)
    waits = Path(out_dir) / "truth_blocking.csv"
    rc = lib.lab_udp_run(ctypes.byref(p), 0 if sending else 1, str(waits).encode(), ctypes.byref(r), err, 512)
    if rc != 0:
        print(err.value.decode(), file=sys.stderr, flush=True)
        return 1
    if sending:
        Path(out_dir, "sender.json").write_text(json.dumps({name: getattr(r, name) for name, _ in Result._fields_}))
    return 0


if __name__ == "__main__":
    import os

    role, config, out = sys.argv[1:4]
    code = end(role, json.loads(Path(config).read_text()), out)
    sys.stdout.flush()
    os._exit(code)


def wire_events(pcap):
    """The sender's capture (Ethernet, IPv4, UDP, SCTP; whole frames): per DATA chunk (time_us, TSN
    relative to the first), per SACK / NR-SACK (time_us, gap blocks, NR gap blocks, cum TSN ack)."""
    data, acks = [], []
    raw = Path(pcap).read_bytes()
    nano = raw[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    order = "<" if raw[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off, first = 24, None
    while off + 16 <= len(raw):
        sec, frac, incl, _ = struct.unpack_from(order + "IIII", raw, off)
        frame, off = raw[off + 16:off + 16 + incl], off + 16 + incl
        t = sec * 1_000_000 + (frac // 1000 if nano else frac)
        if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
            continue
        at = 14 + (frame[14] & 0x0F) * 4 + 8 + 12  # past IP, UDP and SCTP's common header
        while at + 4 <= len(frame):
            kind, length = frame[at], struct.unpack_from("!H", frame, at + 2)[0]
            if length < 4:
                break
            if kind == 0 and at + 8 <= len(frame):
                tsn = struct.unpack_from("!I", frame, at + 4)[0]
                first = tsn if first is None else first
                data.append((t, (tsn - first) % 2**32))
            elif kind in (3, 16) and at + 16 <= len(frame):
                cum, = struct.unpack_from("!I", frame, at + 4)
                gaps, more = struct.unpack_from("!HH", frame, at + 12)
                acks.append((t, gaps, more if kind == 16 else 0, cum))
            at += (length + 3) & ~3
    return data, acks


def sent_full_and_gaps(waits, message, pcap, start_us, end_us):
    """The waits split by whether the buffer held written data not yet sent, and the gap-open
    intervals, from the waits' written bytes and the sender's capture (this lab's usrsctp runs in
    its own process over the kernel's UDP, so the DATA and acks on its veth are what it sent and
    received): a wait is on unsent data until the capture shows as many TSNs first sent as chunks
    written (one a write). -> ((unsent starts, ends), (sent-full starts, ends), (gap starts, ends)), us."""
    import numpy as np
    import pandas as pd

    from .truth import gap_intervals

    data, acks = wire_events(pcap)
    first_sent = pd.DataFrame(data, columns=["time_us", "tsn"]).groupby("tsn").time_us.min()
    # the k-th chunk written is TSN k - 1 (one a write): it had left once it or any later TSN was seen, so
    # a frame the capture missed does not shift the chunks after it
    seen = first_sent.reindex(range(int(first_sent.index.max()) + 1 if len(first_sent) else 0)).to_numpy(float)
    sent_at = np.minimum.accumulate(np.nan_to_num(seen, nan=np.inf)[::-1])[::-1]
    sent_at = np.where(np.isfinite(sent_at), sent_at, end_us).astype(np.int64)
    w_start = np.clip((waits.start_s.to_numpy() * 1e6).astype(np.int64), start_us, end_us)
    w_end = np.clip((waits.end_s.to_numpy() * 1e6).astype(np.int64), start_us, end_us)
    chunks = -(-waits.written_bytes.to_numpy() // message)
    all_sent = np.array([sent_at[k - 1] if 0 < k <= len(sent_at) else end_us for k in chunks], np.int64)
    split = np.clip(all_sent, w_start, w_end)
    gaps = pd.DataFrame(acks, columns=["time_us", "gaps", "nr_gaps", "cum"])
    # an ack older than one already received (its cum TSN below, CMT's acks crossing on two paths) is
    # dropped by the stack (usrsctp sctp_handle_sack / sctp_express_handle_sack: "old ack"): its gaps
    # are not the sender's view
    cum = (gaps.cum.to_numpy(np.int64) - (int(gaps.cum.iloc[0]) if len(gaps) else 0)) % 2**32
    cum = np.where(cum >= 2**31, cum - 2**32, cum)
    gaps = gaps[cum >= np.maximum.accumulate(cum)] if len(gaps) else gaps
    return (w_start, split), (split, w_end), gap_intervals(gaps, end_us)


def summary(cfg, m, out_dir):
    """truth.json of a usrsctp-udp run: q from the first write to the stack's "nothing unacked or
    pending" (SCTP_STATUS, polled every 0.2 ms), the writer's waits (truth_blocking.csv) split by
    unsent data and matched with the acks' gap blocks from the sender's capture (sent_full_and_gaps)."""
    import pandas as pd

    from .runner import path_counters
    from .truth import _overlap_us, blocked_keys

    r = json.loads((Path(out_dir) / "sender.json").read_text())
    start = r["first_send_us"]
    complete = bool(r["complete"])
    end = r["done_us"] if complete else start
    q = (end - start) / 1e6
    waits = pd.read_csv(Path(out_dir) / "truth_blocking.csv")
    unsent, sent_full, gaps = sent_full_and_gaps(waits, cfg.message, Path(out_dir) / "sender.pcap", start, end)
    app_unsent = float((unsent[1] - unsent[0]).sum()) / 1e6
    b = float((sent_full[1] - sent_full[0]).sum()) / 1e6
    p = _overlap_us(*sent_full, *gaps) / 1e6
    src, dst = (f"10.0.0.{i + 1}:{port}" for i, port in enumerate(PORTS))
    s = {"id": f"{src} -> {dst}", "protocol": "sctp", "src": src, "dst": dst, "nr_sack": cfg.ack == "nrsack",
         "cmt": len(cfg.paths()) > 1, "data_bytes": cfg.bytes, "q_s": q,
         **blocked_keys(q, app_unsent + b, app_unsent, b, p),
         "sndbuf_bytes": cfg.sndbuf, "sndbuf_estimated": False,
         "throughput_bps": r["bytes_sent"] * 8 / q if complete and q > 0 else 0.0,
         "blocking_intervals": len(waits), "vantage": "sender", "complete": complete, "stack": cfg.stack,
         "truth_source": "sender process, SCTP_STATUS and the sender's capture (TSNs sent, acks' gap blocks)",
         "counters": {"bytes_sent": r["bytes_sent"], **path_counters(m["paths"])}, "parameters": cfg.as_dict()}
    (Path(out_dir) / "truth.json").write_text(json.dumps(s, indent=1) + "\n")
    return s
