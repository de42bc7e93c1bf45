"""Linux TCP and MPTCP ends of a lab run, inside the lab's namespaces (lab/namespaces.py): `send` and
`receive`. The sender times every wait from EAGAIN until a write succeeds and samples TCP_INFO
(MPTCP_INFO) every millisecond.
"""

import json
import os
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from .endpoints import RECEIVER, TCP_PORT

IPPROTO_MPTCP = 262
SOL_MPTCP = 284
MPTCP_INFO, MPTCP_TCPINFO = 1, 2
TCP_INFO_SIZE = 232


def _stream_socket(mptcp):
    return socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP if mptcp else 0)


def _tcp_info(raw):
    """unacked, sacked, lost, retrans, snd_mss, snd_cwnd, notsent_bytes, bytes_acked of one struct
    tcp_info (sacked: segments SACKed above snd_una, the kernel's gap-open state)."""
    f = struct.unpack_from("8x19I", raw)
    return (f[4], f[5], f[6], f[7], f[2], f[18], struct.unpack_from("I", raw, 144)[0],
            struct.unpack_from("Q", raw, 120)[0])


SO_MEMINFO = 55
SK_MEMINFO_SNDBUF, SK_MEMINFO_WMEM_QUEUED = 3, 5
TIOCOUTQ = 0x5411


def buffer_state(s):
    """The socket's send buffer as the kernel sees it: sk_sndbuf and sk_wmem_queued (SO_MEMINFO,
    bytes with skb overhead: the buffer is full when queued >= sndbuf) and the payload bytes written
    and not yet acked (SIOCOUTQ). -1 where the socket does not report it."""
    import fcntl

    try:
        meminfo = struct.unpack("9I", s.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 36))
        sndbuf, queued = meminfo[SK_MEMINFO_SNDBUF], meminfo[SK_MEMINFO_WMEM_QUEUED]
    except OSError:
        sndbuf, queued = -1, -1
    try:
        outq = struct.unpack("i", fcntl.ioctl(s.fileno(), TIOCOUTQ, b"\0" * 4))[0]
    except OSError:
        outq = -1
    return sndbuf, queued, outq


def mptcp_info(s):
    """The connection level (struct mptcp_info, as far as this kernel fills it): subflows, the
    data sequence written and acked, bytes sent and retransmitted (0 where the kernel is older)."""
    raw = s.getsockopt(SOL_MPTCP, MPTCP_INFO, 96)
    raw = raw + bytes(96 - len(raw))
    subflows = raw[0]
    write_seq, snd_una = struct.unpack_from("QQ", raw, 16)
    retransmits, bytes_retrans, bytes_sent, bytes_acked = (struct.unpack_from("I", raw, 44)[0],
                                                           *struct.unpack_from("QQ8xQ", raw, 48))
    return subflows, write_seq, snd_una, retransmits, bytes_retrans, bytes_sent, bytes_acked


def _getsockopt_in(s, level, name, buffer):
    """getsockopt with a buffer the kernel reads first (Python's getsockopt passes zeros)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(buffer, len(buffer))
    size = ctypes.c_uint32(len(buffer))
    if libc.getsockopt(s.fileno(), level, name, buf, ctypes.byref(size)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return buf.raw[:size.value]


def subflow_infos(s, most=4):
    """TCP_INFO of every subflow (MPTCP_TCPINFO: a struct mptcp_subflow_data header, then the array)."""
    header = struct.pack("IIII", 16, 0, 0, TCP_INFO_SIZE)
    raw = _getsockopt_in(s, SOL_MPTCP, MPTCP_TCPINFO, header + bytes(most * TCP_INFO_SIZE))
    _, count, _, size = struct.unpack_from("IIII", raw)
    return [_tcp_info(raw[16 + i * size:16 + (i + 1) * size]) for i in range(min(count, most))]


def receive(host, mptcp=False):
    srv = _stream_socket(mptcp)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # MPTCP: the joins to an announced address arrive at this listener, so it listens on every address
    srv.bind(("" if mptcp else host, TCP_PORT))
    srv.listen(1)
    print("ready", flush=True)
    conn, _ = srv.accept()
    total = 0
    while True:
        got = len(conn.recv(1 << 20))
        if not got:
            break
        total += got
    print(f"received {total}", flush=True)


def send(host, total, sndbuf, message, out, timeout_s, mptcp=False, cc=""):
    s = _stream_socket(mptcp)
    if sndbuf:  # 0: none set, the kernel autotunes (tcp_wmem)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    if cc:  # MPTCP: every subflow inherits it
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    s.connect((host, TCP_PORT))
    s.setblocking(False)
    try:  # the congestion control in use, as the kernel reports it
        cc_used = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()
    except OSError:
        cc_used = None
    samples, subflow_samples, stop = [], [], threading.Event()

    def unacked():
        if mptcp:  # the data level: written and not yet data-acked
            _, write_seq, snd_una, *_ = mptcp_info(s)
            return write_seq - snd_una
        return _tcp_info(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SIZE))[0]

    def sample():
        while not stop.is_set():
            now = time.time()
            if mptcp:
                samples.append((now, *mptcp_info(s), *buffer_state(s)))
                subflow_samples.extend((now, i, *info) for i, info in enumerate(subflow_infos(s)))
            else:
                samples.append((now, *_tcp_info(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SIZE)),
                                *buffer_state(s)))
            time.sleep(0.001)

    threading.Thread(target=sample, daemon=True).start()
    chunk = b"x" * message
    sent, waits = 0, []
    start = time.time()
    deadline = start + timeout_s
    while sent < total and time.time() < deadline:
        try:
            sent += s.send(chunk[: min(len(chunk), total - sent)])
        except BlockingIOError:
            # retry rather than poll(): poll() reports writable only once a third of the buffer is
            # free, send() succeeds as soon as one more segment fits
            t0 = time.time()
            while time.time() < deadline:
                try:
                    sent += s.send(chunk[: min(len(chunk), total - sent)])
                    break
                except BlockingIOError:
                    pass
            waits.append((t0, time.time()))
    done = None
    while time.time() < deadline:  # until the kernel has every byte acked
        if unacked() == 0:
            done = time.time()
            break
        time.sleep(0.0002)
    stop.set()
    time.sleep(0.01)
    s.close()
    Path(out).write_text(json.dumps({"start": start, "done": done, "sent": sent, "waits": waits, "cc": cc_used,
                                     "samples": samples, "subflow_samples": subflow_samples}))


def ends(cfg, out_dir):
    """The receiver's and the sender's command lines, run in their namespaces (namespaces.run)."""
    me = [sys.executable, "-m", "nrsack.lab.linux_tcp"]
    mode = ["mptcp"] if cfg.stack == "linux-mptcp" else []
    return ([*me, "receive", RECEIVER, *mode],
            [*me, "send", RECEIVER, str(cfg.bytes), str(cfg.sndbuf), str(cfg.message), str(out_dir / "sender.json"),
             str(cfg.timeout_s), cfg.cc or "-", *mode])


if __name__ == "__main__":
    role, args = sys.argv[1], sys.argv[2:]
    if role == "receive":
        receive(args[0], mptcp=args[1:] == ["mptcp"])
    elif role == "send":
        send(args[0], int(args[1]), int(args[2]), int(args[3]), args[4], float(args[5]), mptcp=args[7:] == ["mptcp"],
             cc="" if args[6] == "-" else args[6])
