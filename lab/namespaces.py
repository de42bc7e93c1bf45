"""The lab's network (root): sender - middle - receiver namespaces joined by veth pairs, one pair each
side per path, for the stacks that run in the kernel's network (linux-tcp, linux-mptcp, and
usrsctp-udp over UDP).

The middle namespace has no addresses: a user-space forwarder (this module, `forward`) copies
Ethernet frames between its two veths through AF_PACKET sockets, holding each for the one-way
delay (this kernel has no netem) and dropping data segments (forward) or acks (reverse) by a draw
from the seed and the frame's number, so the same seed drops the same frame numbers. A token bucket
(tbf) on each middle veth is the bottleneck. By default the sender has `gso_max_segs 1` (else
un-acked data may exceed SO_SNDBUF by a GSO burst); with `gso` on it keeps veth's GSO/TSO, as real
hosts capture (segments of many MSS in the sender's capture), and the forwarder cuts them into
wire-sized segments. tcpdump captures on the sender's and the receiver's veth.

The ends are the stack's own module (linux_tcp, usrsctp_udp), run inside their namespaces.
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
import time
from pathlib import Path

from .endpoints import SCTP_OVER_UDP_PORT, TCP_PORT, path_addresses

RUN_NICENESS = -15  # root only, as the namespaces are

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


def run(cfg, out_dir, ends):
    """One transfer; returns the sender's measurements and the forwarders' drop logs (one per path).
    Path i is a veth pair sender - middle and one middle - receiver, its own forwarder, tbf and
    subnet; linux-mptcp opens its second subflow on path 1 when the receiver announces it. `ends`:
    (cfg, out_dir) -> the receiver's and the sender's command lines (the stack module's `ends`)."""
    out_dir = Path(out_dir).resolve()
    os.chmod(out_dir, 0o777)  # tcpdump drops to its own user before writing
    remove_stale_namespaces()
    tag = str(os.getpid())
    ns = {k: f"nrlab{k}{tag}" for k in ("s", "m", "r")}
    mptcp = cfg.stack == "linux-mptcp"
    usrsctp = cfg.stack == "usrsctp-udp"
    capture_filter = f"udp port {SCTP_OVER_UDP_PORT}" if usrsctp else f"tcp port {TCP_PORT}"
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
    # the run's processes (forwarders, tcpdump, both ends, the sender's sampler) inherit a raised
    # priority: on a loaded machine they were descheduled for tens of ms, which stretched the link's
    # delays and the writer's waits and left the truth's samplers blind (lab/truth.py sampler_coverage)
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, RUN_NICENESS)
    me = [sys.executable, "-m", "nrsack.lab.namespaces"]
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
        receive_cmd, send_cmd = ends(cfg, out_dir)
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
        os.setpriority(os.PRIO_PROCESS, 0, niceness)
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    role, args = sys.argv[1], sys.argv[2:]
    if role == "forward":
        forward(args[0], args[1], float(args[2]), float(args[3]), float(args[4]), int(args[5]), args[6], int(args[7]))
