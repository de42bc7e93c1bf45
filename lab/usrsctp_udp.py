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


def summary(cfg, m, out_dir):
    """truth.json of a usrsctp-udp run: q from the first write to the stack's "nothing unacked or
    pending" (SCTP_STATUS, polled every 0.2 ms), b the sender's waits (truth_blocking.csv)."""
    import pandas as pd

    from .runner import path_counters
    from .truth import blocked_keys, blocked_within

    r = json.loads((Path(out_dir) / "sender.json").read_text())
    start = r["first_send_us"] / 1e6
    complete = bool(r["complete"])
    end = r["done_us"] / 1e6 if complete else start
    q = end - start
    waits = pd.read_csv(Path(out_dir) / "truth_blocking.csv")
    app_blocked = blocked_within(waits[["start_s", "end_s"]].to_numpy(), start, end)
    src, dst = (f"10.0.0.{i + 1}:{port}" for i, port in enumerate(PORTS))
    s = {"id": f"{src} -> {dst}", "protocol": "sctp", "src": src, "dst": dst, "nr_sack": cfg.ack == "nrsack",
         "cmt": len(cfg.paths()) > 1, "data_bytes": cfg.bytes, "q_s": q,
         # the sender's waits are not split by unsent data nor matched with its acks' gap blocks here
         **blocked_keys(q, app_blocked, None, None, None),
         "b_reason": "usrsctp-udp's truth has the writer's whole wait only (app_blocked_s), not the part with "
                     "the buffer full of sent data",
         "sndbuf_bytes": cfg.sndbuf, "sndbuf_estimated": False,
         "throughput_bps": r["bytes_sent"] * 8 / q if complete and q > 0 else 0.0,
         "blocking_intervals": len(waits), "vantage": "sender", "complete": complete, "stack": cfg.stack,
         "truth_source": "sender process and SCTP_STATUS",
         "counters": {"bytes_sent": r["bytes_sent"], **path_counters(m["paths"])}, "parameters": cfg.as_dict()}
    (Path(out_dir) / "truth.json").write_text(json.dumps(s, indent=1) + "\n")
    return s
