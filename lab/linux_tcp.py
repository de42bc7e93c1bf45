"""Linux TCP in network namespaces (root): sender - middle - receiver, joined by veth pairs.

The middle namespace has no addresses: a user-space forwarder (this module, `forward`) copies
Ethernet frames between its two veths through AF_PACKET sockets, holding each for the one-way
delay (this kernel has no netem) and dropping data segments (forward) or acks (reverse) by a draw
from the seed and the frame's number, so the same seed drops the same frame numbers. A token bucket
(tbf) on each middle veth is the bottleneck. The sender has `gso_max_segs 1` (else un-acked data may
exceed SO_SNDBUF by a GSO burst); tcpdump captures on the sender's and the receiver's veth.

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


def forward(dev_a, dev_b, delay_s, loss, ack_loss, seed, log_path):
    """Frames a -> b (towards the receiver) and b -> a, each after `delay_s`, TCP frames dropped as
    drawn; runs until SIGTERM, then writes its drop log."""
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
            is_tcp = len(frame) >= 34 and frame[12:14] == b"\x08\x00" and frame[23] == 6
            if is_tcp:
                i = index[d]
                index[d] += 1
                rate = loss if d == 0 else ack_loss
                if rate > 0 and _draw(seed, d, i) < rate:
                    log.append((d, i, time.time()))
                    continue
                frame = _with_tcp_checksum(frame)
            queues[d].append((time.monotonic() + delay_s, frame))
    Path(log_path).write_text(json.dumps({"drops": log, "frames": index}))


def receive(host):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, PORT))
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


def send(host, total, sndbuf, message, out, timeout_s):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    s.connect((host, PORT))
    s.setblocking(False)
    samples, stop = [], threading.Event()

    def sample():
        while not stop.is_set():
            raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 232)
            f = struct.unpack_from("8x19I", raw)
            # unacked, sacked, lost, retrans, snd_mss, snd_cwnd, notsent_bytes (offset 144)
            samples.append((time.time(), f[4], f[5], f[6], f[7], f[2], f[18], struct.unpack_from("I", raw, 144)[0]))
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
        raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        if struct.unpack_from("8x19I", raw)[4] == 0:
            done = time.time()
            break
        time.sleep(0.0002)
    stop.set()
    time.sleep(0.01)
    s.close()
    Path(out).write_text(json.dumps({"start": start, "done": done, "sent": sent, "waits": waits,
                                     "samples": samples}))


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


def namespaces_unavailable():
    """None when linux-tcp runs can be made here, else why not (one line)."""
    problem = namespace_problem(("ip", "tc", "tcpdump"))
    return problem and f"linux-tcp {problem}; run as root or use --stack usrsctp"


def remove_stale_namespaces():
    """Namespaces of lab runs whose process is gone (a command killed by SIGKILL cannot clean up):
    named nrlab{s,m,r}PID by run() below."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    for name in listed:
        m = re.fullmatch(r"nrlab[smr](\d+)", name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def run(cfg, out_dir):
    """One transfer; returns the sender's measurements and the forwarder's drop log."""
    out_dir = Path(out_dir).resolve()
    os.chmod(out_dir, 0o777)  # tcpdump drops to its own user before writing
    remove_stale_namespaces()
    tag = str(os.getpid())
    ns = {k: f"nrlab{k}{tag}" for k in ("s", "m", "r")}
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
    try:
        for name in ns.values():
            sh("ip", "netns", "add", name)
        sh("ip", "link", "add", f"s{tag}", "netns", ns["s"], "type", "veth", "peer", "name", f"ms{tag}", "netns", ns["m"])
        sh("ip", "link", "add", f"r{tag}", "netns", ns["r"], "type", "veth", "peer", "name", f"mr{tag}", "netns", ns["m"])
        sh("ip", "addr", "add", f"{ADDRESSES[0]}/24", "dev", f"s{tag}", name="s")
        sh("ip", "addr", "add", f"{ADDRESSES[1]}/24", "dev", f"r{tag}", name="r")
        for name, dev in (("s", f"s{tag}"), ("m", f"ms{tag}"), ("m", f"mr{tag}"), ("r", f"r{tag}")):
            sh("ip", "link", "set", dev, "up", name=name)
            sh("ip", "link", "set", "lo", "up", name=name)
        sh("ip", "link", "set", f"s{tag}", "gso_max_segs", "1", name="s")
        rate = f"{cfg.bandwidth_mbps}mbit"
        limit = str(max(cfg.queue, 2) * 1514)
        for dev in (f"ms{tag}", f"mr{tag}"):
            sh("tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate, "burst", "16kb", "limit", limit, name="m")
        fwd = spawn("m", *me, "forward", f"ms{tag}", f"mr{tag}", str(cfg.delay_ms / 1e3), str(cfg.loss),
                    str(cfg.ack_loss), str(cfg.seed), str(out_dir / "drops.json"), stdout=subprocess.PIPE)
        assert fwd.stdout.readline().strip() == "forwarding"
        dumps = []
        for name, dev, pcap in (("s", f"s{tag}", "sender.pcap"), ("r", f"r{tag}", "receiver.pcap")):
            d = spawn(name, "tcpdump", "-i", dev, "--immediate-mode", "-s", "128", "-w", str(out_dir / pcap),
                      "-U", f"tcp port {PORT}", stderr=subprocess.PIPE)
            line = d.stderr.readline()
            if "listening" not in line:
                raise RuntimeError(f"tcpdump: {line.strip()}")
            dumps.append(d)
        receiver = spawn("r", *me, "receive", ADDRESSES[1], stdout=subprocess.PIPE)
        assert receiver.stdout.readline().strip() == "ready"
        sender = subprocess.run(["ip", "netns", "exec", ns["s"], *me, "send", ADDRESSES[1], str(cfg.bytes),
                                 str(cfg.sndbuf), str(cfg.message), str(out_dir / "sender.json"), str(cfg.timeout_s)],
                                capture_output=True, text=True, timeout=cfg.timeout_s + 30)
        if sender.returncode != 0:
            raise RuntimeError(f"the TCP sender failed: {sender.stderr.strip()[-300:]}")
        receiver.wait(timeout=30)
        time.sleep(0.2)
        for d in dumps:
            d.send_signal(signal.SIGINT)
            d.wait(timeout=10)
        fwd.send_signal(signal.SIGTERM)
        fwd.wait(timeout=10)
        measured = json.loads((out_dir / "sender.json").read_text())
        measured["link"] = json.loads((out_dir / "drops.json").read_text())
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
        forward(args[0], args[1], float(args[2]), float(args[3]), float(args[4]), int(args[5]), args[6])
    elif role == "receive":
        receive(args[0])
    elif role == "send":
        send(args[0], int(args[1]), int(args[2]), int(args[3]), args[4], float(args[5]))
