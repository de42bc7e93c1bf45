"""Linux TCP in network namespaces (root): sender - middle - receiver, joined by veth pairs.

The middle namespace has no addresses: a user-space forwarder (this module, `forward`) copies
Ethernet frames between its two veths through AF_PACKET sockets, holding each for the one-way
delay (this kernel has no netem) and dropping data segments (forward) or acks (reverse) by a draw
from the seed and the frame's number, so the same seed drops the same frame numbers. A token bucket
(tbf) on each middle veth is the bottleneck. By default the sender has `gso_max_segs 1` (else
un-acked data may exceed SO_SNDBUF by a GSO burst); with `gso` on it keeps veth's GSO/TSO, as real
hosts capture (segments of many MSS in the sender's capture), and the forwarder cuts them into
wire-sized segments. tcpdump captures on the sender's and the receiver's veth.

Sender and receiver are this module too (`send`, `receive`), run inside their namespaces; the
sender times every wait from EAGAIN until a write succeeds and samples TCP_INFO every millisecond.
"""

import json
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

PORT = 5201  # nrsack.lab.runner.PORT_TCP names it in truth.json
ADDRESSES = ("10.0.0.1", "10.0.0.2")  # the simulator's (nrsack.generator.sim.wire.addresses(0))
ETH_P_ALL = 0x0003
UDP_ENCAPS_PORT = 9899  # usrsctp-udp's SCTP over UDP (RFC 6951)


def _draw(seed, direction, index):
    """Uniform in [0, 1) from (seed, direction, frame number) only."""
    x = (seed * 0x9E3779B97F4A7C15 + direction * 0xBF58476D1CE4E5B9 + index) & (2**64 - 1)
    for mult in (0xBF58476D1CE4E5B9, 0x94D049BB133111EB):
        x = ((x ^ (x >> 31)) * mult) & (2**64 - 1)
    return (x ^ (x >> 29)) / 2**64


def _with_tcp_checksum(frame):
    """The frame with its TCP checksum computed: veth leaves it to offload (CHECKSUM_PARTIAL), so a
    frame re-sent from a packet socket would reach the receiver with a checksum it drops."""
    ihl = (frame[14] & 0x0F) * 4
    total = int.from_bytes(frame[16:18], "big")
    tcp = bytearray(frame[14 + ihl:14 + total])
    tcp[16:18] = b"\0\0"
    data = frame[26:34] + struct.pack("!HH", 6, len(tcp)) + bytes(tcp) + (b"\0" if len(tcp) & 1 else b"")
    folded = int.from_bytes(data, "big") % 0xFFFF  # congruent to the sum of the 16-bit words
    tcp[16:18] = struct.pack("!H", (~folded) & 0xFFFF or 0xFFFF)
    return frame[:14 + ihl] + bytes(tcp) + frame[14 + total:]


def _without_udp_checksum(frame):
    """The frame with UDP checksum 0 ("none", RFC 768; the SCTP inside has its own CRC32c): as for
    TCP, veth leaves the checksum to offload."""
    offset = 14 + (frame[14] & 0x0F) * 4 + 6
    return frame[:offset] + b"\0\0" + frame[offset + 2:]


MTU = 1500


def _ip_checksum(header):
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def wire_segments(frame):
    """A TCP frame larger than the MTU (a GSO/TSO segment, as the sender's device hands it over) cut
    into MTU-sized segments as the device would: sequence numbers advanced, PSH and FIN on the last
    only, CWR on the first only, IP lengths, ids and checksums rewritten (TCP's by the caller)."""
    ihl = (frame[14] & 0x0F) * 4
    total = int.from_bytes(frame[16:18], "big")
    if frame[23] != 6 or total <= MTU:
        return [frame]
    tcp = 14 + ihl
    thl = (frame[tcp + 12] >> 4) * 4
    payload = frame[tcp + thl:14 + total]
    mss = MTU - ihl - thl
    seq, ip_id, flags = int.from_bytes(frame[tcp + 4:tcp + 8], "big"), int.from_bytes(frame[18:20], "big"), frame[tcp + 13]
    out = []
    for k, at in enumerate(range(0, len(payload), mss)):
        last = at + mss >= len(payload)
        part = payload[at:at + mss]
        ip = bytearray(frame[14:tcp])
        ip[2:4] = (ihl + thl + len(part)).to_bytes(2, "big")
        ip[4:6] = ((ip_id + k) & 0xFFFF).to_bytes(2, "big")
        ip[10:12] = b"\0\0"
        ip[10:12] = _ip_checksum(bytes(ip)).to_bytes(2, "big")
        head = bytearray(frame[tcp:tcp + thl])
        head[4:8] = ((seq + at) & 0xFFFFFFFF).to_bytes(4, "big")
        head[13] = flags & ~(0x09 if not last else 0) & ~(0x80 if k else 0)  # FIN|PSH, CWR
        out.append(frame[:14] + bytes(ip) + bytes(head) + part)
    return out


def forward(dev_a, dev_b, delay_s, loss, ack_loss, seed, log_path, path=0):
    """Frames a -> b (towards the receiver) and b -> a, each after `delay_s`, TCP frames dropped as
    drawn (path p draws as directions 2p, 2p + 1); runs until SIGTERM, then writes its drop log."""
    socks = []
    for dev in (dev_a, dev_b):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.bind((dev, 0))
        socks.append(s)
    queues, index, log = ([], []), [0, 0], []
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    print("forwarding", flush=True)
    while not stop:
        now = time.monotonic()
        for d in (0, 1):
            q = queues[d]
            while q and q[0][0] <= now:
                socks[1 - d].send(q.pop(0)[1])
        due = min((q[0][0] for q in queues if q), default=now + 0.05)
        try:
            ready, _, _ = select.select(socks, [], [], max(0.0, due - time.monotonic()))
        except InterruptedError:
            continue
        for d, s in enumerate(socks):
            if s not in ready:
                continue
            frame, meta = s.recvfrom(65536)
            if meta[2] == socket.PACKET_OUTGOING:  # our own sends on this interface
                continue
            proto = frame[23] if len(frame) >= 34 and frame[12:14] == b"\x08\x00" else None
            if proto not in (6, 17):
                queues[d].append((time.monotonic() + delay_s, frame))
                continue
            for segment in wire_segments(frame):  # TCP, or UDP carrying usrsctp's SCTP
                i = index[d]
                index[d] += 1
                rate = loss if d == 0 else ack_loss
                if rate > 0 and _draw(seed, 2 * path + d, i) < rate:
                    log.append((d, i, time.time()))
                    continue
                segment = _with_tcp_checksum(segment) if proto == 6 else _without_udp_checksum(segment)
                queues[d].append((time.monotonic() + delay_s, segment))
    Path(log_path).write_text(json.dumps({"drops": log, "frames": index}))


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
    srv.bind(("" if mptcp else host, PORT))
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
    s.connect((host, PORT))
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


def namespace_problem(tools=("ip",)):
    """None when this process can make network namespaces and run `tools`, else why not (one line).
    The tests that build namespaces of their own ask this too."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in tools:
        if not shutil.which(tool):
            return f"needs {tool} on PATH"
    probe = f"nrlab-probe-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make network namespaces: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


def namespaces_unavailable(stack="linux-tcp"):
    """None when linux-tcp (linux-mptcp) runs can be made here, else why not (one line)."""
    mptcp = stack == "linux-mptcp"
    problem = namespace_problem(("ip", "tc", "tcpdump") + (("mergecap",) if stack != "linux-tcp" else ()))
    if problem:
        return f"{stack} {problem}; run as root or use --stack usrsctp"
    switch = Path("/proc/sys/net/mptcp/enabled")
    if mptcp and not (switch.exists() and switch.read_text().strip() == "1"):
        return "linux-mptcp needs a kernel with MPTCP enabled (sysctl net.mptcp.enabled=1)"
    return None


def remove_stale_namespaces():
    """Namespaces of lab runs whose process is gone (a command killed by SIGKILL cannot clean up):
    named nrlab{s,m,r}PID by run() below."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    for name in listed:
        m = re.fullmatch(r"nrlab[smr](\d+)", name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def path_addresses(i):
    """Path i's sender and receiver addresses: 10.0.i.1 and 10.0.i.2 (path 0 the simulator's)."""
    return f"10.0.{i}.1", f"10.0.{i}.2"


def run(cfg, out_dir):
    """One transfer; returns the sender's measurements and the forwarders' drop logs (one per path).
    Path i is a veth pair sender - middle and one middle - receiver, its own forwarder, tbf and
    subnet; linux-mptcp opens its second subflow on path 1 when the receiver announces it."""
    out_dir = Path(out_dir).resolve()
    os.chmod(out_dir, 0o777)  # tcpdump drops to its own user before writing
    remove_stale_namespaces()
    tag = str(os.getpid())
    ns = {k: f"nrlab{k}{tag}" for k in ("s", "m", "r")}
    mptcp = cfg.stack == "linux-mptcp"
    usrsctp = cfg.stack == "usrsctp-udp"
    capture_filter = f"udp port {UDP_ENCAPS_PORT}" if usrsctp else f"tcp port {PORT}"
    # SCTP's INIT lists addresses and extensions past 128 bytes: whole frames, as the AF_CONN lab writes
    snaplen = "0" if usrsctp else "128"
    paths = cfg.paths()
    procs = []

    def sh(*cmd, name=None):
        full = (["ip", "netns", "exec", ns[name]] if name else []) + list(cmd)
        subprocess.run(full, check=True, capture_output=True, text=True, timeout=20)

    def spawn(name, *cmd, **kw):
        p = subprocess.Popen(["ip", "netns", "exec", ns[name], *cmd], text=True, **kw)
        procs.append(p)
        return p

    previous = signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))  # a killed run still cleans up
    me = [sys.executable, "-m", "nrsack.lab.linux_tcp"]
    mode = ["mptcp"] if mptcp else []
    try:
        for name in ns.values():
            sh("ip", "netns", "add", name)
        for name in ns:
            sh("ip", "link", "set", "lo", "up", name=name)
        forwarders, dumps, captures = [], [], {"sender": [], "receiver": []}
        for i, (loss, delay_ms, bandwidth) in enumerate(paths):
            s_dev, ms_dev, mr_dev, r_dev = (f"{x}{i}{tag}" for x in ("s", "ms", "mr", "r"))
            sh("ip", "link", "add", s_dev, "netns", ns["s"], "type", "veth", "peer", "name", ms_dev, "netns", ns["m"])
            sh("ip", "link", "add", r_dev, "netns", ns["r"], "type", "veth", "peer", "name", mr_dev, "netns", ns["m"])
            sender_ip, receiver_ip = path_addresses(i)
            sh("ip", "addr", "add", f"{sender_ip}/24", "dev", s_dev, name="s")
            sh("ip", "addr", "add", f"{receiver_ip}/24", "dev", r_dev, name="r")
            for name, dev in (("s", s_dev), ("m", ms_dev), ("m", mr_dev), ("r", r_dev)):
                sh("ip", "link", "set", dev, "up", name=name)
            if not cfg.gso:
                sh("ip", "link", "set", s_dev, "gso_max_segs", "1", name="s")
            limit = str(max(cfg.queue, 2) * 1514)
            for dev in (ms_dev, mr_dev):
                sh("tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{bandwidth}mbit", "burst", "16kb",
                   "limit", limit, name="m")
            drops = out_dir / ("drops.json" if len(paths) == 1 else f"drops-{i}.json")
            fwd = spawn("m", *me, "forward", ms_dev, mr_dev, str(delay_ms / 1e3), str(loss), str(cfg.ack_loss),
                        str(cfg.seed), str(drops), str(i), stdout=subprocess.PIPE)
            assert fwd.stdout.readline().strip() == "forwarding"
            forwarders.append((fwd, drops))
            for name, dev, side in (("s", s_dev, "sender"), ("r", r_dev, "receiver")):
                pcap = out_dir / (f"{side}.pcap" if len(paths) == 1 else f"{side}-{i}.pcap")
                # a 16 MiB ring (tcpdump's default is 2): a loaded machine can leave tcpdump unscheduled
                # long enough for the kernel to drop frames, and the truth is read from these captures
                d = spawn(name, "tcpdump", "-i", dev, "--immediate-mode", "-B", "16384", "-s", snaplen,
                          "-w", str(pcap), "-U", capture_filter, stderr=subprocess.PIPE)
                line = d.stderr.readline()
                if "listening" not in line:
                    raise RuntimeError(f"tcpdump: {line.strip()}")
                dumps.append(d)
                captures[side].append(pcap)
        if mptcp:
            # the receiver announces path 1's address (ADD_ADDR); the sender joins it from path 1's
            # own address, as routing picks it, so each subflow stays on its path
            sh("ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2", name="s")
            sh("ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2", name="r")
            for i in range(1, len(paths)):
                sh("ip", "mptcp", "endpoint", "add", path_addresses(i)[1], "dev", f"r{i}{tag}", "signal", name="r")
        if usrsctp:
            (out_dir / "config.json").write_text(json.dumps(cfg.as_dict()))
            ends = [sys.executable, "-m", "nrsack.lab.usrsctp_udp"]
            receive_cmd = [*ends, "receive", str(out_dir / "config.json"), str(out_dir)]
            send_cmd = [*ends, "send", str(out_dir / "config.json"), str(out_dir)]
        else:
            receive_cmd = [*me, "receive", ADDRESSES[1], *mode]
            send_cmd = [*me, "send", ADDRESSES[1], str(cfg.bytes), str(cfg.sndbuf), str(cfg.message),
                        str(out_dir / "sender.json"), str(cfg.timeout_s), cfg.cc or "-", *mode]
        receiver = spawn("r", *receive_cmd, stdout=subprocess.PIPE)
        assert receiver.stdout.readline().strip() == "ready"
        sender = subprocess.run(["ip", "netns", "exec", ns["s"], *send_cmd], capture_output=True, text=True,
                                timeout=cfg.timeout_s + 30)
        if sender.returncode != 0:
            raise RuntimeError(f"the sender failed: {sender.stderr.strip()[-300:]}")
        # the receiver ends after the connection's close, which the lossy link (resends after backed-off
        # timeouts) and a loaded machine can delay past a fixed 30 s: it gets the run's bound, as the sender does
        receiver.wait(timeout=cfg.timeout_s + 30)
        time.sleep(0.2)
        dropped = 0
        for d in dumps:
            d.send_signal(signal.SIGINT)
            d.wait(timeout=10)
            dropped += sum(int(n) for n in re.findall(r"(\d+) packets? dropped by kernel", d.stderr.read()))
        if dropped:
            raise RuntimeError(f"the captures dropped {dropped} frames (a loaded machine?): the truth read "
                               "from them would be wrong; run it again")
        for fwd, _ in forwarders:
            fwd.send_signal(signal.SIGTERM)
            fwd.wait(timeout=10)
        if len(paths) > 1:  # one capture per side, every path's frames in time order
            for side, parts in captures.items():
                subprocess.run(["mergecap", "-F", "pcap", "-w", str(out_dir / f"{side}.pcap"), *map(str, parts)],
                               check=True, capture_output=True, timeout=60)
                for part in parts:
                    part.unlink()
        measured = json.loads((out_dir / "sender.json").read_text())
        logs = [json.loads(drops.read_text()) for _, drops in forwarders]
        measured["paths"] = logs
        measured["link"] = logs[0]
        return measured
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for name in ns.values():
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    role, args = sys.argv[1], sys.argv[2:]
    if role == "forward":
        forward(args[0], args[1], float(args[2]), float(args[3]), float(args[4]), int(args[5]), args[6], int(args[7]))
    elif role == "receive":
        receive(args[0], mptcp=args[1:] == ["mptcp"])
    elif role == "send":
        send(args[0], int(args[1]), int(args[2]), int(args[3]), args[4], float(args[5]), mptcp=args[7:] == ["mptcp"],
             cc="" if args[6] == "-" else args[6])
