"""usrsctp multi-homed with CMT (root): one end per process in the lab's namespaces, over UDP
encapsulation (port 9899), path i between 10.0.i.1 and 10.0.i.2. AF_CONN cannot multi-home
(docs/lab.md), so the ends use the kernel's UDP and the namespaces' forwarders are the link
(lab/namespaces.py); lab/truth.py makes the run's truth.

`python -m nrsack.lab.usrsctp_udp send|receive CONFIG.json OUT_DIR`, inside the namespace; the
compiled part is lab/_usrsctp_udp.c (in the lab's extension)."""

import ctypes
import json
import sys
from pathlib import Path

from .endpoints import SCTP_PORTS, ipv4, path_addresses

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


def end(role, cfg, out_dir):
    """One end of the association, in this process (which then leaves: usrsctp's threads stay)."""
    from .usrsctp import library

    lib = library()
    lib.lab_udp_run.restype = ctypes.c_int
    sending = role == "send"
    paths = range(1 + len(cfg["more_paths"]))
    mine = [path_addresses(i)[0 if sending else 1] for i in paths]
    peers = [path_addresses(i)[1 if sending else 0] for i in paths]
    p = Params(nrsack=cfg["ack"] == "nrsack", cmt=len(mine) > 1, drain=cfg["drain"], n_local=len(mine),
               n_remote=len(peers), port=SCTP_PORTS[0 if sending else 1],
               peer_port=SCTP_PORTS[1 if sending else 0],
               sndbuf=cfg["sndbuf"], rcvbuf=cfg["rcvbuf"], bytes=cfg["bytes"], message=cfg["message"],
               timeout_s=cfg["timeout_s"], hb_interval_ms=HEARTBEAT_MS)
    for i, (a, b) in enumerate(zip(mine, peers)):
        p.local[i], p.remote[i] = ipv4(a), ipv4(b)
    r, err = Result(), ctypes.create_string_buffer(512)
    waits = Path(out_dir) / "truth_blocking.csv"
    rc = lib.lab_udp_run(ctypes.byref(p), 0 if sending else 1, str(waits).encode(), ctypes.byref(r), err, 512)
    if rc != 0:
        print(err.value.decode(), file=sys.stderr, flush=True)
        return 1
    if sending:
        Path(out_dir, "sender.json").write_text(json.dumps({name: getattr(r, name) for name, _ in Result._fields_}))
    return 0


def ends(cfg, out_dir):
    """The receiver's and the sender's command lines, run in their namespaces (namespaces.run)."""
    config = out_dir / "config.json"
    config.write_text(json.dumps(cfg.as_dict()))
    me = [sys.executable, "-m", "nrsack.lab.usrsctp_udp"]
    return [*me, "receive", str(config), str(out_dir)], [*me, "send", str(config), str(out_dir)]


if __name__ == "__main__":
    import os

    role, config, out = sys.argv[1:4]
    code = end(role, json.loads(Path(config).read_text()), out)
    sys.stdout.flush()
    os._exit(code)
