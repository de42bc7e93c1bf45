"""One usrsctp run: the compiled lab (_usrsctp_lab.c, built at install) in a child process of its own.

usrsctp keeps global state and threads per process (usrsctp_init once, timers that outlive the
sockets), so every run gets a fresh interpreter: `python -m nrsack.lab.usrsctp CONFIG.json OUT` loads
the library with ctypes, runs, writes result.json and leaves with os._exit, which also ends the
stack's threads. A killed child leaves nothing behind (no namespaces, no files outside OUT).
"""

import ctypes
import importlib.machinery
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from .endpoints import RECEIVER, SCTP_PORTS, SENDER, ipv4

PR_SET_PDEATHSIG = 1


class Params(ctypes.Structure):
    _fields_ = [("nrsack", ctypes.c_int32), ("unordered", ctypes.c_int32), ("sndbuf", ctypes.c_int64),
                ("rcvbuf", ctypes.c_int64), ("bytes", ctypes.c_int64), ("message", ctypes.c_int64),
                ("seed", ctypes.c_uint64), ("loss", ctypes.c_double * 2), ("burst", ctypes.c_double * 2),
                ("delay_s", ctypes.c_double * 2), ("bandwidth_bps", ctypes.c_double * 2),
                ("queue_packets", ctypes.c_int32 * 2), ("ip", ctypes.c_uint32 * 2),
                ("port", ctypes.c_uint16 * 2), ("timeout_s", ctypes.c_double),
                ("rto_min_ms", ctypes.c_int32), ("sack_delay_ms", ctypes.c_int32),
                ("drain", ctypes.c_int32), ("virtual_clock", ctypes.c_int32), ("mtu", ctypes.c_int32),
                ("packet_files", ctypes.c_int32)]


class Result(ctypes.Structure):
    _fields_ = [("first_send_us", ctypes.c_int64), ("dry_us", ctypes.c_int64), ("end_us", ctypes.c_int64),
                ("bytes_sent", ctypes.c_int64), ("bytes_received", ctypes.c_int64),
                ("complete", ctypes.c_int32), ("sndbuf_socket", ctypes.c_int32),
                ("packets", ctypes.c_int64 * 2), ("lost", ctypes.c_int64 * 2),
                ("queue_drops", ctypes.c_int64 * 2), ("blocked_us", ctypes.c_int64),
                ("blocked_waits", ctypes.c_int64)]


def library():
    here = Path(__file__).parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = here / f"_usrsctp_lab{suffix}"
        if candidate.exists():
            # RTLD_DEEPBIND: libusrsctp's clock and random reads bind to the lab's definitions
            # (the virtual clock; _usrsctp_lab.c says why a plain dlopen would not do)
            lib = ctypes.CDLL(str(candidate), mode=os.RTLD_DEEPBIND | os.RTLD_NOW)
            lib.lab_usrsctp_run.restype = ctypes.c_int
            lib.lab_usrsctp_run.argtypes = [ctypes.POINTER(Params), ctypes.c_char_p, ctypes.POINTER(Result),
                                            ctypes.c_char_p, ctypes.c_int]
            return lib
    raise ImportError(f"nrsack's compiled usrsctp lab is not built in {here}: reinstall nrsack "
                      "(pip install .) with libusrsctp-dev present so setup.py builds it")


def params_of(cfg, packet_files=True):
    """ctypes parameters from a LabConfig (forward = sender -> receiver, reverse = the acks' way), between
    the simulator's addresses and ports (lab/endpoints.py), so lab and simulated runs name their flows alike;
    packet_files False: no pcaps and no link log."""
    p = Params()
    p.nrsack = cfg.ack == "nrsack"
    p.unordered = cfg.unordered
    p.sndbuf, p.rcvbuf, p.bytes, p.message, p.seed = cfg.sndbuf, cfg.rcvbuf, cfg.bytes, cfg.message, cfg.seed
    p.loss[:] = [cfg.loss, cfg.ack_loss]
    p.burst[:] = [cfg.burst if cfg.loss_model == "gilbert" else 0.0] * 2
    p.delay_s[:] = [cfg.delay_ms / 1e3] * 2
    p.bandwidth_bps[:] = [cfg.bandwidth_mbps * 1e6] * 2
    p.queue_packets[:] = [cfg.queue] * 2
    p.ip[:] = [ipv4(SENDER), ipv4(RECEIVER)]
    p.port[:] = list(SCTP_PORTS)
    p.timeout_s = cfg.timeout_s
    p.rto_min_ms, p.sack_delay_ms, p.drain = cfg.rto_min_ms, cfg.sack_delay_ms, cfg.drain
    p.virtual_clock = cfg.clock == "virtual"
    p.mtu = cfg.mtu
    p.packet_files = packet_files
    return p


def _child(config_json, out_dir):
    from .config import LabConfig

    job = json.loads(Path(config_json).read_text())
    params = params_of(LabConfig(**job["config"]), job.get("packet_files", True))
    result, err = Result(), ctypes.create_string_buffer(512)
    rc = library().lab_usrsctp_run(ctypes.byref(params), str(out_dir).encode(), ctypes.byref(result),
                                   err, len(err))
    data = {name: (list(getattr(result, name)) if name in ("packets", "lost", "queue_drops")
                   else getattr(result, name)) for name, _ in Result._fields_}
    data["error"] = err.value.decode(errors="replace") if rc != 0 else None
    (Path(out_dir) / "result.json").write_text(json.dumps(data) + "\n")
    sys.stdout.flush()
    os._exit(0 if rc == 0 else 1)


def _die_with_parent():
    """In the child before exec: the kernel kills it when the parent dies, even by SIGKILL, so a
    killed command or Dask worker leaves no stack running."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run_child(cfg, out_dir, packet_files=True):
    """Runs the stack in a child process; returns its result dict. Raises RuntimeError on failure.
    packet_files False: the pcaps and link.csv are not written."""
    out_dir = Path(out_dir)
    config_json = out_dir / "lab_config.json"
    job = {"config": cfg.as_dict()} if packet_files else {"config": cfg.as_dict(), "packet_files": False}
    config_json.write_text(json.dumps(job) + "\n")
    (out_dir / "result.json").unlink(missing_ok=True)
    try:
        child = subprocess.run([sys.executable, "-m", "nrsack.lab.usrsctp", str(config_json), str(out_dir)],
                               capture_output=True, text=True, timeout=cfg.timeout_s + 30,
                               preexec_fn=_die_with_parent)
    except subprocess.TimeoutExpired:  # subprocess.run kills the child: nothing of it survives
        raise RuntimeError(f"the usrsctp run did not end within {cfg.timeout_s + 30:.0f} s")
    result_file = out_dir / "result.json"
    if not result_file.exists():
        raise RuntimeError(f"the usrsctp run failed (exit {child.returncode}): "
                           f"{(child.stderr or child.stdout).strip()[-500:]}")
    result = json.loads(result_file.read_text())
    if result["error"]:
        raise RuntimeError(f"the usrsctp run failed: {result['error']}")
    return result


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
