"""The truth of a lab run from the stack and the sending application, in docs/metrics.md's terms and
the simulator's layout (truth.json with the summary keys, truth_*.csv): every stack's, here alone
(LabTruth: usrsctp over AF_CONN; tcp_summary: Linux TCP and MPTCP; udp_summary: usrsctp over UDP).

The analyzer's key names keep the analyzer's meaning (docs/lab.md, "Truth in the analyzer's
language"): `b_s` is the time the writer waited for send-buffer space while the buffer was full of
SENT data (what a capture can see: B - rtxq < S), `p_s` the part of it during which the last ack
the sender's stack received reported a gap block. The writer's whole wait has names of its own:
`app_blocked_s`, of which `app_blocked_unsent_s` while the buffer held written data not yet sent
(cwnd, not the buffer, held it back: slow start, after a loss) and, for usrsctp, the thread's own
scheduling delay after the stack's wake-up, `app_blocked_wakeup_s`, apart.

usrsctp: q runs from the application's first write to the moment the sender's stack reports all
data acked (SCTP_SENDER_DRY_EVENT); the waits end at the stack's wake-up. Unsent data: messages
written (one DATA chunk each) exceed the distinct TSNs sent, logged as it changes (unsent.csv), not
sampled, so a descheduled sampler cannot stretch it. (The stack's own counts do not tell this:
usrsctp frees the buffer of NR-acked chunks but keeps them on the sent queue, sstat_unackdata.)

Linux TCP / MPTCP: q from the first write to the kernel's last ack, unsent data and gaps from the
sampled TCP_INFO (MPTCP_INFO). usrsctp over UDP: q from the first write to the stack's "nothing
unacked", unsent data and gaps from the sender's capture.
"""

import json
import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from nrsack.generator.sim.truth import to_time_s

from .endpoints import RECEIVER, SENDER, TCP_PORT, sctp_endpoints

LINK_FATES = {0: "delivered", 1: "lost", 2: "queue_drop"}
DATA_CHUNK_OVERHEAD = 16  # what usrsctp's send-buffer use (SCTP_GET_SNDBUF_USE) counts per DATA chunk


def _covered_until(on_starts, on_ends, t):
    """How much of the disjoint sorted intervals (at least one) lies before each time in t."""
    before = np.concatenate(([0], np.cumsum(np.maximum(on_ends - on_starts, 0))))
    k = np.searchsorted(on_starts, t, side="right")  # the intervals starting at or before t
    last = np.maximum(k - 1, 0)
    partial = np.clip(np.minimum(t, on_ends[last]) - on_starts[last], 0, None)
    return np.where(k > 0, before[last] + partial, 0)


def _overlap_each_us(starts, ends, on_starts, on_ends):
    """How much of each interval lies in a set of disjoint sorted intervals."""
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    if not len(on_starts):
        return np.zeros(len(starts), np.int64)
    on_starts, on_ends = np.asarray(on_starts, np.int64), np.asarray(on_ends, np.int64)
    inside = _covered_until(on_starts, on_ends, ends) - _covered_until(on_starts, on_ends, starts)
    return np.maximum(inside, 0)


def _overlap_us(starts, ends, on_starts, on_ends):
    """Total length of the intersection of two sets of disjoint sorted intervals."""
    return int(_overlap_each_us(starts, ends, on_starts, on_ends).sum())


def gap_intervals(acks, end_us):
    """Intervals during which the last ack received reported at least one gap block."""
    if acks.empty:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    t = acks.time_us.to_numpy()
    gap = ((acks.gaps + acks.nr_gaps) > 0).to_numpy().astype(np.int8)
    change = np.diff(np.concatenate(([0], gap, [0])))
    starts = t[np.flatnonzero(change == 1)]
    stop_idx = np.flatnonzero(change == -1)
    ends = np.where(stop_idx < len(t), t[np.minimum(stop_idx, len(t) - 1)], end_us)
    return starts, ends


def intersect(starts, ends, on_starts, on_ends):
    """The intersection of two sets of disjoint sorted intervals, as (starts, ends)."""
    lo, hi = [], []
    for s, e in zip(starts, ends):
        a, b = np.maximum(on_starts, s), np.minimum(on_ends, e)
        keep = b > a
        lo.extend(a[keep])
        hi.extend(b[keep])
    return np.asarray(lo, np.int64), np.asarray(hi, np.int64)


def blocked_keys(q, app_blocked, app_unsent, b, p):
    """truth.json's blocking figures, seconds: the analyzer's names (b, p: a buffer full of sent data)
    and the writer's own."""
    ratio = lambda x: x / q if q > 0 else 0.0  # noqa: E731
    assert -1e-9 <= p <= b + 1e-9 <= app_blocked + 2e-9, (p, b, app_blocked)
    return {"b_s": b, "p_s": p, "b_over_q": ratio(b), "p_over_q": ratio(p),
            "app_blocked_s": app_blocked, "app_blocked_unsent_s": app_unsent,
            "app_blocked_over_q": ratio(app_blocked)}


def blocked_within(waits, start, end):
    """Total of the [start, end) waits clipped to the transfer [start, end]."""
    w = np.asarray(waits, dtype=float).reshape(-1, 2)
    return float(np.clip(np.minimum(w[:, 1], end) - np.maximum(w[:, 0], start), 0, None).sum())


def time_where(t, holds, starts, ends):
    """Time inside the [starts, ends) intervals during which a sampled condition held (each sample
    holds until the next; the last for one median sample period)."""
    t = np.asarray(t, dtype=float)
    if len(t) == 0:
        return 0.0
    step = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    nxt = np.append(t[1:], t[-1] + step)
    on = np.asarray(holds, bool)
    return float(sum(np.clip(np.minimum(nxt[on], e) - np.maximum(t[on], s), 0, None).sum()
                     for s, e in zip(starts, ends)))


SAMPLER_GAP_S = 0.005  # five periods of the 1 ms sampler: the sampling thread was not running


def sampler_coverage(times, start, end):
    """The share of [start, end] the kernel's samples cover: time inside gaps between samples (or
    between an end and the nearest sample) longer than SAMPLER_GAP_S is time nobody looked. A loaded
    machine deschedules the sampler (and the writer, whose waits then outlast the stack's), so a run
    whose samples cover much less than all of q has a truth that measured the machine, not the stack."""
    if end <= start:
        return None
    t = np.asarray(times, dtype=float)
    t = np.concatenate(([start], t[(t > start) & (t < end)], [end]))
    gaps = np.diff(t)
    return float(1 - gaps[gaps > SAMPLER_GAP_S].sum() / (end - start))


class LabTruth:
    def __init__(self, cfg, result, out_dir):
        self.cfg, self.result, self.out_dir = cfg, result, out_dir
        read = lambda name: pd.read_csv(out_dir / name)  # noqa: E731
        self.blocked = read("blocked.csv")
        self.stack = read("stack.csv")
        self.acks = read("acks.csv")
        self.unsent = read("unsent.csv")
        self.first_us = result["first_send_us"]
        self.complete = bool(result["complete"])
        self.end_us = result["dry_us"] if self.complete else result["end_us"]
        src, dst = sctp_endpoints()
        self.flow = f"{src} -> {dst}"
        b_start = np.clip(self.blocked.start_us.to_numpy(), self.first_us, self.end_us)
        b_end = np.clip(self.blocked.end_us.to_numpy(), self.first_us, self.end_us)
        self.app_blocked_us = int((b_end - b_start).sum())
        g_start, g_end = gap_intervals(self.acks, self.end_us)
        # the waits and gaps, clipped to q, for blocking_table (written truth only, not the summary)
        self._waits, self._gaps = (b_start, b_end), (g_start, g_end)
        u_start, u_end = self._unsent_intervals()
        self.app_unsent_us = _overlap_us(b_start, b_end, u_start, u_end)
        # p: the waits with the buffer full of sent data (not unsent) and a gap open
        both_start, both_end = intersect(b_start, b_end, u_start, u_end)
        self.p_us = (_overlap_us(b_start, b_end, g_start, g_end)
                     - _overlap_us(both_start, both_end, g_start, g_end))
        resumed = np.clip(self.blocked.resumed_us.to_numpy(), self.first_us, self.end_us)
        self.wakeup_us = int((resumed - b_end).sum())

    def _unsent_intervals(self):
        """When the buffer held chunks not yet sent."""
        changes = self.unsent
        t, on = changes.time_us.to_numpy(), changes.unsent.to_numpy().astype(bool)
        return t[on], np.append(t[1:], self.end_us)[on]

    @property
    def q_s(self):
        return (self.end_us - self.first_us) / 1e6

    def blocking_table(self):
        b = self.blocked
        queue = self._stack_at(b.start_us.to_numpy())
        gap_open = _overlap_each_us(*self._waits, *self._gaps) > 0
        return pd.DataFrame({"flow": self.flow, "start_s": to_time_s(b.start_us), "end_s": to_time_s(b.end_us),
                             "duration_s": (b.end_us - b.start_us) / 1e6, "resumed_s": to_time_s(b.resumed_us),
                             "stack_queue_bytes_at_start": queue, "gap_open": gap_open})

    def _stack_at(self, us):
        """The stack's sampled send-queue use (SCTP_GET_SNDBUF_USE) at the last sample before `us`."""
        if self.stack.empty:
            return np.zeros(len(us), np.int64)
        i = np.searchsorted(self.stack.time_us.to_numpy(), us, side="right") - 1
        return np.where(i >= 0, self.stack.sndbuf_use.to_numpy()[np.maximum(i, 0)], 0)

    def stack_table(self):
        """The samples, with the stack's RtxQ in chunks: its buffer use in chunks (NR-acked ones are
        freed at once) less the chunks written but not yet sent."""
        s = self.stack.copy()
        s.insert(0, "time_s", to_time_s(s.pop("time_us")))
        in_buffer = np.rint(s.sndbuf_use / (self.cfg.message + DATA_CHUNK_OVERHEAD)).astype(np.int64)
        s["stack_rtxq_chunks"] = in_buffer - (s.written_chunks - s.sent_chunks)
        return s

    def link_table(self):
        k = pd.read_csv(self.out_dir / "link.csv")
        k.insert(0, "time_s", to_time_s(k.pop("time_us")))
        k["direction"] = k.direction.map({0: "forward", 1: "reverse"})
        k["fate"] = k.fate.map(LINK_FATES)
        return k

    def acks_table(self):
        a = self.acks.copy()
        a.insert(0, "time_s", to_time_s(a.pop("time_us")))
        a["chunk"] = a.chunk.map({3: "sack", 16: "nr-sack"})
        return a

    def summary(self):
        cfg, r = self.cfg, self.result
        q = self.q_s
        src, dst = sctp_endpoints()
        sent = r["bytes_sent"] if self.complete else 0
        return {
            "id": self.flow, "protocol": "sctp", "src": src, "dst": dst, "nr_sack": cfg.ack == "nrsack",
            "data_bytes": cfg.bytes, "q_s": q,
            **blocked_keys(q, self.app_blocked_us / 1e6, self.app_unsent_us / 1e6, (self.app_blocked_us - self.app_unsent_us) / 1e6,
                           self.p_us / 1e6),
            "app_blocked_wakeup_s": self.wakeup_us / 1e6,
            "sndbuf_bytes": cfg.sndbuf, "sndbuf_estimated": False,
            "throughput_bps": sent * 8 / q if q > 0 else 0.0,
            "blocking_intervals": len(self.blocked), "vantage": "sender", "complete": self.complete,
            "stack": cfg.stack, "truth_source": "stack",
            "max_stack_queue_bytes": int(self.stack.sndbuf_use.max()) if len(self.stack) else 0,
            "counters": {"bytes_sent": r["bytes_sent"], "bytes_received": r["bytes_received"],
                         "packets_forward": r["packets"][0], "packets_reverse": r["packets"][1],
                         "lost_forward": r["lost"][0], "lost_reverse": r["lost"][1],
                         "queue_drops_forward": r["queue_drops"][0], "queue_drops_reverse": r["queue_drops"][1],
                         "blocked_waits": r["blocked_waits"], "sndbuf_socket": r["sndbuf_socket"]},
            "wall_s": r["end_us"] / 1e6,
            "parameters": cfg.as_dict(),
        }

    def write(self):
        out = self.out_dir
        self.blocking_table().to_csv(out / "truth_blocking.csv", index=False, float_format="%.6f")
        self.stack_table().to_csv(out / "truth_stack.csv", index=False, float_format="%.6f")
        self.link_table().to_csv(out / "truth_link.csv", index=False, float_format="%.6f")
        self.acks_table().to_csv(out / "truth_acks.csv", index=False, float_format="%.6f")
        for raw in ("blocked.csv", "stack.csv", "link.csv", "acks.csv", "unsent.csv"):
            (out / raw).unlink()
        summary = self.summary()
        (out / "truth.json").write_text(json.dumps(summary, indent=1) + "\n")
        return summary


# Linux TCP and MPTCP (lab/linux_tcp.py in lab/namespaces.py's network)

TCP_INFO_COLUMNS = ["unacked", "sacked", "lost", "retrans", "snd_mss", "snd_cwnd", "notsent_bytes", "bytes_acked"]
BUFFER_COLUMNS = ["sk_sndbuf", "sk_wmem_queued", "outq_bytes"]  # linux_tcp.buffer_state
MPTCP_INFO_COLUMNS = ["subflows", "write_seq", "snd_una", "retransmits", "bytes_retrans", "bytes_sent",
                      "bytes_acked"]


# the largest DSS option a subflow's data segment carries (net/mptcp/protocol.h TCPOLEN_MPTCP_DSS_BASE +
# _ACK64 + _MAP64 + _CHECKSUM, 4 + 8 + 14 + 2), which tcpi_snd_mss leaves in: a segment of a subflow
# carries snd_mss less the option (the lab's captures: 1424 of 1448, a 24-byte DSS)
MPTCP_DSS_MAX_BYTES = 28


def _connection_samples(cfg, m, out_dir):
    """The sampled view of the sender's kernel, written to the truth files (out_dir None: not written);
    -> (time_s, bytes held unsent, gap open, payload bytes sent and not acked, the payload of a full
    segment) per sample. linux-mptcp: the connection level (MPTCP_INFO, data
    sequence numbers made relative to the first byte written) in truth_mptcp_info.csv and every
    subflow's TCP_INFO (MPTCP_TCPINFO) in truth_tcp_info.csv; linux-tcp: TCP_INFO. Both with the
    socket's buffer (sk_sndbuf, sk_wmem_queued, SIOCOUTQ).

    Gap open, the kernel's view of the last ack: TCP, segments SACKed above snd_una (tcpi_sacked);
    MPTCP, a data-level gap (decisions.md 12): a subflow holds SACKed segments, or the subflows have
    acked more bytes than the data level (their cumulative acks cover DSNs above the DATA ACK; bytes
    the connection re-sent on another subflow are acked twice, so they are taken off)."""
    if cfg.stack != "linux-mptcp":
        info = pd.DataFrame(m["samples"], columns=["time_s", *TCP_INFO_COLUMNS, *BUFFER_COLUMNS])
        if out_dir is not None:
            info.to_csv(out_dir / "truth_tcp_info.csv", index=False, float_format="%.6f")
        return (info.time_s, info.notsent_bytes, (info.sacked > 0).to_numpy(), info.outq_bytes - info.notsent_bytes,
                info.snd_mss)
    subflows = pd.DataFrame(m["subflow_samples"], columns=["time_s", "subflow", *TCP_INFO_COLUMNS])
    if out_dir is not None:
        subflows.to_csv(out_dir / "truth_tcp_info.csv", index=False, float_format="%.6f")
    # data sequence numbers relative to the first byte written, in Python's integers (64 bits: they
    # may exceed int64)
    first = m["samples"][-1][2] - m["sent"] if m["samples"] else 0
    rows = []
    for t, subflow_count, write_seq, snd_una, retransmits, bytes_retrans, bytes_sent, bytes_acked, *buf in m["samples"]:
        written = (write_seq - first) % 2**64
        # bytes_sent counts new data only (the subflows' own retransmissions are not the connection's)
        rows.append((t, subflow_count, written, (write_seq - snd_una) % 2**64, written - bytes_sent, retransmits,
                     bytes_retrans, bytes_sent, bytes_acked, *buf))
    conn = pd.DataFrame(rows, columns=["time_s", "subflows", "written_bytes", "unacked_bytes", "notsent_bytes",
                                       *MPTCP_INFO_COLUMNS[3:], *BUFFER_COLUMNS])
    per_time = subflows.groupby("time_s")
    sub_acked = per_time.bytes_acked.sum().reindex(conn.time_s, fill_value=0).to_numpy()
    sub_sacked = per_time.sacked.sum().reindex(conn.time_s, fill_value=0).to_numpy()
    # a subflow's tcpi_bytes_acked counts its SYN (and at the end its FIN) as one byte each
    sequence_flags = 2 * per_time.size().reindex(conn.time_s, fill_value=0).to_numpy()
    conn["subflow_acked_above_data_ack"] = np.maximum(
        sub_acked - conn.bytes_acked.to_numpy() - conn.bytes_retrans.to_numpy() - sequence_flags, 0)
    conn["gap_open"] = (sub_sacked > 0) | (conn.subflow_acked_above_data_ack.to_numpy() > 0)
    # the connection hands data to a subflow's write queue before that subflow's window lets it out
    # (net/mptcp/protocol.c __mptcp_push_pending): MPTCP_INFO counts it sent, the wire has not seen it
    conn["subflow_notsent_bytes"] = per_time.notsent_bytes.sum().reindex(conn.time_s, fill_value=0).to_numpy()
    if out_dir is not None:
        conn.to_csv(out_dir / "truth_mptcp_info.csv", index=False, float_format="%.6f")
    mss = float(subflows.snd_mss.median()) if len(subflows) else 1448.0
    unsent = conn.notsent_bytes + conn.subflow_notsent_bytes
    return conn.time_s, unsent, conn.gap_open.to_numpy(), conn.unacked_bytes - unsent, mss - MPTCP_DSS_MAX_BYTES


def path_counters(logs):
    """Frames and drops per direction from the forwarders' logs, summed; per path too when 2+."""
    paths = [{"packets_forward": log["frames"][0], "packets_reverse": log["frames"][1],
              "lost_forward": sum(1 for d in log["drops"] if d[0] == 0),
              "lost_reverse": sum(1 for d in log["drops"] if d[0] == 1)} for log in logs]
    counters = {key: sum(path[key] for path in paths) for key in paths[0]}
    if len(paths) > 1:
        counters["paths"] = paths
    return counters


def _linux_q(m):
    """(start, end, q, complete) of a Linux run: from the first write to the kernel's last ack."""
    start, done = m["start"], m["done"]
    complete = done is not None
    end = done if complete else (m["samples"][-1][0] if m["samples"] else start)
    return start, end, end - start, complete


def _split_waits(m, start, end, times, notsent, gap, segment):
    """The writer's waits inside q, and the samples' split of them: -> (wait starts, ends, unsent per
    sample, time on unsent data, time on a buffer full of sent data with a gap open). As for usrsctp:
    waits while the kernel held a full segment or more unsent are invisible to a capture (less than
    one is a write waiting to fill one, not a full buffer of sent data)."""
    waits = np.asarray(m["waits"], dtype=float).reshape(-1, 2)
    w_start, w_end = np.maximum(waits[:, 0], start), np.minimum(waits[:, 1], end)
    unsent = (notsent >= segment).to_numpy()
    return (w_start, w_end, unsent, time_where(times, unsent, w_start, w_end),
            time_where(times, ~unsent & gap, w_start, w_end))


def linux_b_p_over_q(stack, m):
    """(b/q, p/q) of a Linux run from its sender's measurements (its sender.json), by tcp_summary's
    rules: for runs whose truth.json an earlier rule wrote (decisions.md 94)."""
    start, end, q, _ = _linux_q(m)
    if q <= 0:
        return None, None
    times, notsent, gap, _, segment = _connection_samples(SimpleNamespace(stack=stack), m, None)
    _, _, _, app_unsent, p = _split_waits(m, start, end, times, notsent, gap, segment)
    return (blocked_within(m["waits"], start, end) - app_unsent) / q, p / q


def tcp_summary(cfg, m, out_dir):
    """truth.json of a Linux TCP / MPTCP run: q from the first write to the kernel's last ack (TCP_INFO
    unacked 0; MPTCP: the data level's snd_una at write_seq), b the sender's measured waits for buffer
    space; the sampled kernel state in truth_tcp_info.csv (and truth_mptcp_info.csv)."""
    start, end, q, complete = _linux_q(m)
    app_blocked = blocked_within(m["waits"], start, end)
    times, notsent, gap, sent_unacked, segment = _connection_samples(cfg, m, out_dir)
    w_start, w_end, unsent, app_unsent, p = _split_waits(m, start, end, times, notsent, gap, segment)
    # B in the analyzer's sense (payload a full buffer holds): the kernel's sent-unacked payload at
    # the samples inside waits on a buffer full of sent data; it varies (truesize, GSO), so its spread
    # goes beside it
    t = times.to_numpy()
    inside = np.zeros(len(t), bool)
    for a, z in zip(w_start, w_end):
        inside[np.searchsorted(t, a):np.searchsorted(t, z)] = True
    held = sent_unacked.to_numpy()[inside & ~unsent]
    held_at_waits = ({"median": int(np.median(held)), "p10": int(np.percentile(held, 10)),
                      "p90": int(np.percentile(held, 90)), "samples": int(len(held))} if len(held) else None)
    pd.DataFrame(m["waits"], columns=["start_s", "end_s"]).to_csv(out_dir / "truth_blocking.csv", index=False,
                                                                  float_format="%.6f")
    counters = path_counters(m["paths"])
    mptcp = cfg.stack == "linux-mptcp"
    summary = {"id": f"{SENDER} -> {RECEIVER}:{TCP_PORT}", "protocol": "mptcp" if mptcp else "tcp",
               "src": SENDER, "dst": f"{RECEIVER}:{TCP_PORT}", "nr_sack": False, "data_bytes": cfg.bytes,
               "q_s": q, **blocked_keys(q, app_blocked, app_unsent, app_blocked - app_unsent, p),
               "sndbuf_bytes": held_at_waits["median"] if held_at_waits else None,
               "sndbuf_payload_at_waits": held_at_waits, "sndbuf_socket": cfg.sndbuf or "autotuned",
               "sndbuf_estimated": False,
               "throughput_bps": m["sent"] * 8 / q if complete and q > 0 else 0.0,
               "blocking_intervals": len(m["waits"]), "vantage": "sender", "complete": complete,
               "stack": cfg.stack, "congestion_control": m.get("cc"), "gso": cfg.gso,
               "truth_source": "sender process and " + ("MPTCP_INFO, MPTCP_TCPINFO" if mptcp else "TCP_INFO")
               + ", SO_MEMINFO, SIOCOUTQ", "sampler_coverage": sampler_coverage(times, start, end),
               "counters": {"bytes_sent": m["sent"], **counters},
               "parameters": cfg.as_dict()}
    (out_dir / "truth.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


# usrsctp multi-homed over UDP (lab/usrsctp_udp.py in lab/namespaces.py's network)

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
                gaps, more = struct.unpack_from("!HH", frame, at + 12)
                cum, = struct.unpack_from("!I", frame, at + 4)
                acks.append((t, gaps, more if kind == 16 else 0, cum))
            at += (length + 3) & ~3
    return data, acks


def sent_full_and_gaps(waits, message, pcap, start_us, end_us):
    """The waits split by whether the buffer held written data not yet sent, and the gap-open
    intervals, from the waits' written bytes and the sender's capture (this lab's usrsctp runs in
    its own process over the kernel's UDP, so the DATA and acks on its veth are what it sent and
    received): a wait is on unsent data until the capture shows as many TSNs first sent as chunks
    written (one a write). -> ((unsent starts, ends), (sent-full starts, ends), (gap starts, ends)), us."""
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


def udp_summary(cfg, m, out_dir):
    """truth.json of a usrsctp-udp run: q from the first write to the stack's "nothing unacked or
    pending" (SCTP_STATUS, polled every 0.2 ms), the writer's waits (truth_blocking.csv) split by
    unsent data and matched with the acks' gap blocks from the sender's capture (sent_full_and_gaps)."""
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
    src, dst = sctp_endpoints()
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
