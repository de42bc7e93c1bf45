"""The compiled event loop (_fastsim.c) for single-path SCTP and TCP runs and MPTCP, and its pcap
writer for SCTP and TCP (MPTCP's frames, with their DSS options, go through wire.py's writer).

Built with the package at install (setup.py, as `_fastsim` beside this file: a plain shared library,
no Python module init) and loaded with ctypes; for a run that needs what only model.py does,
engine.simulate() uses model.py. Both give the same trace (tests/test_simulator_fast.py). This
module builds on model.py and wire.py; they never import it (engine.py chooses between them).
"""

import copy
import ctypes
import importlib.machinery
import socket
import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import model as M
from . import wire as W
from .profiles import PYTHON_ONLY

CTRL_NAMES = {"sctp": ["INIT", "INIT-ACK", "COOKIE-ECHO", "COOKIE-ACK"], "tcp": ["SYN", "SYN-ACK", "ACK"],
              "mptcp": ["SYN", "SYN-ACK", "ACK", "JOIN-SYN", "JOIN-SYN-ACK", "JOIN-ACK"]}
MAX_PATHS = 16  # model.py's limit, and the C engine's per-path arrays


class Params(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int64) for name in (
        "n", "S", "last_size", "sndbuf", "rcvbuf", "sctp", "nr", "ack_every", "delack_ns",
        "rto_initial", "rto_min", "rto_max", "init_cwnd", "limit_ns", "overhead", "gilbert", "np",
        "gap_filler_delayed", "max_burst", "chunk_header", "window_unit", "by_size",
        "grow_margin", "persistent_htna", "restart_timer_on_cum_ack", "path_max_retrans",
        "cwnd_degrade", "max_burst_cwnd", "slow_start_limit", "refast_retransmit",
        "fr_ssthresh_floor", "U", "rto_restored_on_ack", "mptcp")] + [
        (name, ctypes.c_int64 * MAX_PATHS) for name in (
            "delay", "qcap", "ready_t", "draw_off", "draw_len", "ack_off", "ack_len")] + [
        (name, ctypes.c_double * MAX_PATHS) for name in (
            "ns_per_byte", "loss", "enter_bad", "leave_bad", "ack_loss")]


class Vec(ctypes.Structure):
    _fields_ = [("v", ctypes.POINTER(ctypes.c_int64)), ("n", ctypes.c_int64), ("cap", ctypes.c_int64)]

    def array(self, width=1):
        if self.n == 0:
            return np.zeros((0, width) if width > 1 else 0, dtype=np.int64)
        a = np.ctypeslib.as_array(self.v, shape=(self.n,)).copy()
        return a.reshape(-1, width) if width > 1 else a


VECS = ("f_t", "f_kind", "f_a", "f_b", "a_cum", "a_rwnd", "a_boff", "a_bcnt", "b_s", "b_e", "truth",
        "cwnd", "rec", "r_t", "r_kind", "r_a", "r_b", "a_sbcnt", "f_p", "r_p", "a_scum")


class Out(ctypes.Structure):
    _fields_ = [(name, Vec) for name in VECS] + [
        ("counters", ctypes.c_int64 * 8), ("first_data_ns", ctypes.c_int64),
        ("done_ns", ctypes.c_int64), ("error", ctypes.c_int64)]


_lib = None


def _installed_path():
    """The shared library setup.py built beside this file (its name carries the ABI tag)."""
    here = Path(__file__).parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = here / f"_fastsim{suffix}"
        if candidate.exists():
            return candidate
    raise ImportError(f"nrsack's compiled simulator is not built in {here}: reinstall nrsack "
                      "(pip install .) so setup.py builds it")


def library():
    """The compiled loop, built at install. A missing build is an installation fault and says so,
    rather than falling back silently to the slower Python model."""
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(str(_installed_path()))
    lib.fastsim_run.restype = ctypes.c_int
    lib.fastsim_run.argtypes = [ctypes.POINTER(Params)] + [ctypes.c_void_p] * 8 + [
        ctypes.c_int64, ctypes.c_int, ctypes.POINTER(Out)]
    lib.fastsim_free.argtypes = [ctypes.POINTER(Out)]
    lib.fastsim_write_pcap.restype = ctypes.c_int
    lib.fastsim_write_pcap.argtypes = [ctypes.c_char_p, ctypes.POINTER(WParams)] + [ctypes.c_void_p] * 3 + [
        ctypes.c_int64] + [ctypes.c_void_p] * 6
    _lib = lib
    return lib


def eligible(config, receiver_trace):
    """SCTP, TCP and MPTCP (CMT's path choice and DAC: model.py only), under every profile but the
    Linux ones (their send buffer, RACK and cubic are in model.py only: docs/simulator.md), and
    without a lab run's losses or join replayed (drop_path_packets, join_after_s)."""
    return (config.protocol in ("sctp", "tcp", "mptcp") and config.profile not in PYTHON_ONLY
            and not config.drop_path_packets and not config.join_after_s)


def run(sim):
    """Run `sim` (a model.Simulation, used for its set-up: draws, ISN, sizes) in C; return its
    Trace, or None when the compiled loop gave up."""
    lib = library()
    cfg = sim.cfg
    per_path = {name: [0] * MAX_PATHS for name in ("delay", "qcap", "ready_t", "draw_off", "draw_len",
                                                   "ack_off", "ack_len")}
    per_path.update({name: [0.0] * MAX_PATHS for name in ("ns_per_byte", "loss", "enter_bad",
                                                          "leave_bad", "ack_loss")})
    # each path's streams as model.py draws them 65536 at a time: enough for every transmission
    # twice over; the ack streams likewise (a run sends fewer acks than data arrivals plus timers)
    draws, ack_draws = [], []
    for q, path in enumerate(cfg.paths):
        enter_bad, leave_bad = sim.ge[q] if cfg.loss_model == "gilbert" else (0.0, 0.0)
        for name, value in (("delay", sim.delay[q]), ("qcap", path.queue_packets),
                            ("ns_per_byte", sim.ns_per_byte[q]), ("loss", path.loss),
                            ("enter_bad", enter_bad), ("leave_bad", leave_bad),
                            ("ack_loss", path.ack_loss)):
            per_path[name][q] = value
        for stream, rng, name in ((draws, sim.rng_paths[q], "draw"), (ack_draws, sim.rng_acks[q], "ack")):
            count = 2 * sim.n + 65536 if name == "draw" or path.ack_loss > 0 else 0
            per_path[f"{name}_off"][q] = sum(len(a) for a in stream)
            per_path[f"{name}_len"][q] = count
            # from a copy: when the loop gives up, engine.simulate runs `sim` in model.py, whose
            # streams must then be where a Python run finds them
            stream.append(copy.deepcopy(rng).random(count))
    draws, ack_draws = np.concatenate(draws), np.concatenate(ack_draws + [np.zeros(1)])
    ctrl, ready = _handshake(sim)
    for q, t in ready:
        per_path["ready_t"][q] = t
    fields = dict(Params._fields_)
    params = Params(
        n=sim.n, S=sim.S, last_size=sim.last_size, sndbuf=cfg.sndbuf, rcvbuf=cfg.rcvbuf,
        sctp=int(sim.sctp_like), nr=int(sim.nr), ack_every=cfg.ack_every,
        delack_ns=int(cfg.delack_s * M.NS), rto_initial=int(cfg.rto_initial_s * M.NS),
        rto_min=int(cfg.rto_min_s * M.NS), rto_max=int(cfg.rto_max_s * M.NS),
        init_cwnd=cfg.initial_cwnd_packets, limit_ns=int(cfg.max_time_s * M.NS),
        overhead=sim.overhead, gilbert=int(cfg.loss_model == "gilbert"), np=len(cfg.paths),
        gap_filler_delayed=int(sim.prof.gap_filler_delayed), max_burst=sim.prof.max_burst,
        chunk_header=sim.prof.chunk_header_bytes, window_unit=sim.window_unit,
        by_size=int(sim.by_size), grow_margin=sim.grow_margin,
        persistent_htna=int(sim.prof.persistent_htna),
        restart_timer_on_cum_ack=int(sim.prof.restart_timer_on_cum_ack),
        path_max_retrans=sim.prof.path_max_retrans, cwnd_degrade=int(sim.prof.cwnd_degrade),
        max_burst_cwnd=sim.prof.max_burst_cwnd, slow_start_limit=sim.prof.slow_start_limit_packets,
        refast_retransmit=int(sim.prof.refast_retransmit and sim.sctp_like),
        fr_ssthresh_floor=sim.prof.fast_recovery_ssthresh_floor_packets, U=sim.U,
        rto_restored_on_ack=int(sim.prof.rto_restored_on_ack), mptcp=int(sim.mptcp),
        **{name: fields[name](*v) for name, v in per_path.items()})
    first_draw = np.asarray(sim.first_draw, dtype=np.float64)
    drop = np.zeros(sim.n, dtype=np.uint8)
    drop[[u for u in cfg.drop_units if 0 <= u < sim.n]] = 1
    ctrl_t, ctrl_name, ctrl_side, ctrl_path = (np.array(x, dtype=np.int64) for x in zip(*ctrl))
    out = Out()
    try:
        err = lib.fastsim_run(ctypes.byref(params), first_draw.ctypes.data, draws.ctypes.data,
                              ack_draws.ctypes.data, drop.ctypes.data, ctrl_t.ctypes.data,
                              ctrl_name.ctypes.data, ctrl_side.ctypes.data, ctrl_path.ctypes.data,
                              len(ctrl_t), int(sim.record_receiver), ctypes.byref(out))
        if err:
            return None
        return _trace(sim, out, CTRL_NAMES[cfg.protocol])
    finally:
        lib.fastsim_free(ctypes.byref(out))


def _handshake(sim):
    """model.py's _handshake: the control frames as (time, name index, side, path) in its push
    order (each step at the sender, then at the receiver, which sees the sender's frames one delay
    later and sent its own one delay earlier), and (path, time) each path may carry data from."""
    d = sim.delay
    if sim.sctp_like:
        steps = [(0, 0, True), (2 * d[0], 1, False), (2 * d[0], 2, True), (4 * d[0], 3, False)]
        paths, ready = [0] * 4, [(0, 4 * d[0])]
    else:
        steps = [(0, 0, True), (2 * d[0], 1, False), (2 * d[0], 2, True)]
        paths, ready = [0] * 3, [(0, 2 * d[0])]
        for q in range(1, sim.P):  # MPTCP's joins
            steps += [(2 * d[0], 3, True), (2 * d[0] + 2 * d[q], 4, False), (2 * d[0] + 2 * d[q], 5, True)]
            paths += [q] * 3
            ready.append((q, 2 * d[0] + 2 * d[q]))
    ctrl = []
    for (t, name, from_sender), q in zip(steps, paths):
        ctrl.append((t, name, 0, q))
        if sim.record_receiver:
            ctrl.append((t + d[q] if from_sender else t - d[q], name, 1, q))
    return ctrl, ready


class LazyFrames(Sequence):
    """trace.sender of a compiled run: columns, turned into model.py's frame tuples only when
    someone asks for them (the pcap writer and the truth read the columns)."""

    def __init__(self, columns, names, mptcp=False):
        self.columns = columns
        self.names = names
        self.mptcp = mptcp
        self._frames = None

    def _list(self):
        if self._frames is None:
            c = self.columns
            b_s, b_e = c["b_s"].tolist(), c["b_e"].tolist()
            acks = [(cum, tuple(zip(b_s[off:off + cnt], b_e[off:off + cnt])), rwnd, None, ())
                    for cum, rwnd, off, cnt in zip(c["a_cum"].tolist(), c["a_rwnd"].tolist(),
                                                   c["a_boff"].tolist(), c["a_bcnt"].tolist())]
            if self.mptcp:  # the subflow's cum ack and SACK blocks (after the data-level blocks)
                acks = [(cum, blocks, rwnd, scum,
                         tuple(zip(b_s[off + nd:off + nd + ns], b_e[off + nd:off + nd + ns])))
                        for (cum, blocks, rwnd, _, _), scum, off, nd, ns in zip(
                            acks, c["a_scum"].tolist(), c["a_boff"].tolist(), c["a_bcnt"].tolist(),
                            c["a_sbcnt"].tolist())]
            frames = []
            for t, kind, p, a, b in zip(c["t"].tolist(), c["kind"].tolist(), c["p"].tolist(),
                                        c["a"].tolist(), c["b"].tolist()):
                if kind == M.ACK:
                    frames.append((t, kind, p, acks[a], None))
                elif kind == M.CTRL:
                    frames.append((t, kind, p, self.names[a], None))
                else:
                    frames.append((t, kind, p, a, b))
            self._frames = frames
        return self._frames

    def __len__(self):
        return len(self.columns["t"])

    def __getitem__(self, i):
        return self._list()[i]

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other):
        return list(self) == list(other)


def _trace(sim, out, names):
    tr = sim.trace
    columns = {"t": out.f_t.array(), "kind": out.f_kind.array(), "p": out.f_p.array(), "a": out.f_a.array(),
               "b": out.f_b.array(), "a_cum": out.a_cum.array(), "a_rwnd": out.a_rwnd.array(),
               "a_boff": out.a_boff.array(), "a_bcnt": out.a_bcnt.array(),
               "b_s": out.b_s.array(), "b_e": out.b_e.array(), "a_sbcnt": out.a_sbcnt.array(),
               "a_scum": out.a_scum.array()}
    tr.columns = columns
    tr.sender = LazyFrames(columns, names, sim.mptcp)
    if sim.record_receiver:
        acks = {k: v for k, v in columns.items() if k.startswith(("a_", "b_"))}
        tr.receiver_columns = dict(acks, t=out.r_t.array(), kind=out.r_kind.array(), p=out.r_p.array(),
                                   a=out.r_a.array(), b=out.r_b.array())
        tr.receiver = LazyFrames(tr.receiver_columns, names, sim.mptcp)
    tr.rtxq = out.truth.array(9)
    tr.cwnd = [tuple(r) for r in out.cwnd.array(4).tolist()]
    kinds = ("fast", "rto")
    tr.recovery = [(p, kinds[k], s, e if e >= 0 else None) for p, k, s, e in out.rec.array(4).tolist()]
    tr.first_data_ns = out.first_data_ns if out.first_data_ns >= 0 else None
    tr.done_ns = out.done_ns if out.done_ns >= 0 else None
    c = list(out.counters)
    tr.counters = dict(data_packets=c[0], retransmissions=c[1], fast_retransmits=c[2],
                       timeouts=c[3], acks=c[4], queue_drops=c[5], random_drops=c[6],
                       acked_bytes=c[7])
    return tr


class WParams(ctypes.Structure):
    _fields_ = ([(name, ctypes.c_int64) for name in (
        "sctp", "nr", "n", "S", "last_size", "total_bytes", "isn", "peer_seq", "epoch", "unused")]
        + [("tpl_full", ctypes.c_char_p), ("tpl_last", ctypes.c_char_p)]
        + [(name, ctypes.c_int64) for name in ("len_full", "len_last", "sum_full", "sum_last")]
        + [("ack_head", ctypes.c_char_p)]
        + [(name, ctypes.c_int64) for name in ("sport", "dport", "tag", "pseudo_base", "wscale")]
        + [("ctrl", ctypes.c_char_p), ("ctrl_off", ctypes.c_void_p), ("ctrl_len", ctypes.c_void_p)])


def write_pcap(trace, frames, path, wire):
    """Write the sender or receiver frames of a compiled run with the compiled writer; False when
    it does not apply (then engine.write_pcap takes the Python writer). The bytes are wire.py's (tests check)."""
    columns = getattr(frames, "columns", None)
    if columns is None or frames.mptcp:  # MPTCP's DSS options: wire.py's writer
        return False
    lib = library()
    n, S = wire.n, wire.S
    full = bytes(wire.data(0, 0, 0)) if n > 1 else None
    last = bytes(wire.data(0, n - 1, n - 1))
    full = full or last
    sctp = trace.config.protocol == "sctp"
    sum_full = sum_last = 0
    if not sctp:  # words of pseudo header + header (seq and checksum zero) + payload, mod 0xFFFF
        def tcp_sum(frame):
            tcp = bytearray(frame[W.ETH_IP:])
            tcp[4:8] = b"\0\0\0\0"
            tcp[16:18] = b"\0\0"
            return (wire._pseudo_sum(0, True, len(tcp)) + W._ones_sum(bytes(tcp))) % 0xFFFF
        sum_full, sum_last = tcp_sum(full), tcp_sum(last)
    ack_head = bytearray(wire.eth_ip(0, False, 0))
    ack_head[W.ETH_IP - 18:W.ETH_IP - 16] = b"\0\0"  # IP total length
    ack_head[W.ETH_IP - 10:W.ETH_IP - 8] = b"\0\0"  # IP checksum
    names = frames.names
    ctrl = [wire.ctrl(0, name) for name in names]
    ctrl_off = np.cumsum([0] + [len(c) for c in ctrl[:-1]]).astype(np.int64)
    ctrl_len = np.array([len(c) for c in ctrl], dtype=np.int64)
    src, dst = W.addresses(0)
    pseudo_base = W._ones_sum(socket.inet_aton(dst) + socket.inet_aton(src) + struct.pack(">H", 6))
    ports = W.SCTP_PORTS if sctp else W.TCP_PORTS
    w = WParams(sctp=int(sctp), nr=int(wire.nr), n=n, S=S, last_size=wire.last_size,
                total_bytes=trace.config.total_bytes, isn=wire.isn,
                peer_seq=0 if sctp else wire.peer_seq(0), epoch=W.EPOCH_S, unused=0,
                tpl_full=full, tpl_last=last, len_full=len(full), len_last=len(last),
                sum_full=sum_full, sum_last=sum_last, ack_head=bytes(ack_head),
                sport=ports[1], dport=ports[0], tag=wire.tag_to_sender if sctp else 0,
                pseudo_base=pseudo_base, wscale=W.WSCALE, ctrl=b"".join(ctrl),
                ctrl_off=ctrl_off.ctypes.data, ctrl_len=ctrl_len.ctypes.data)
    c = {k: np.ascontiguousarray(v, dtype=np.int64) for k, v in columns.items()}
    err = lib.fastsim_write_pcap(str(path).encode(), ctypes.byref(w), c["t"].ctypes.data,
                                 c["kind"].ctypes.data, c["a"].ctypes.data, len(c["t"]),
                                 c["a_cum"].ctypes.data, c["a_rwnd"].ctypes.data,
                                 c["a_boff"].ctypes.data, c["a_bcnt"].ctypes.data,
                                 c["b_s"].ctypes.data, c["b_e"].ctypes.data)
    if err:
        raise OSError(f"cannot write {path}")
    return True
