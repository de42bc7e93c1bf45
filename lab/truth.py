"""The truth of a lab run from the stack and the sending application, in docs/metrics.md's terms and
the simulator's layout (truth.json with the summary keys, truth_*.csv).

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
"""

import json

import numpy as np
import pandas as pd

from nrsack.generator.sim.truth import to_time_s
from nrsack.generator.sim.wire import SCTP_PORTS, addresses

LINK_FATES = {0: "delivered", 1: "lost", 2: "queue_drop"}
DATA_CHUNK_OVERHEAD = 16  # what usrsctp's send-buffer use (SCTP_GET_SNDBUF_USE) counts per DATA chunk


def endpoints():
    (src, dst), (sport, dport) = addresses(0), SCTP_PORTS
    return f"{src}:{sport}", f"{dst}:{dport}"


def _overlap_us(starts, ends, on_starts, on_ends):
    """Total length of the intersection of two sets of disjoint sorted intervals."""
    total = 0
    for s, e in zip(starts, ends):
        lo = np.maximum(on_starts, s)
        hi = np.minimum(on_ends, e)
        total += int(np.clip(hi - lo, 0, None).sum())
    return total


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


class LabTruth:
    def __init__(self, cfg, result, out_dir):
        self.cfg, self.result, self.out_dir = cfg, result, out_dir
        read = lambda name: pd.read_csv(out_dir / name)  # noqa: E731
        self.blocked = read("blocked.csv")
        self.stack = read("stack.csv")
        self.link = read("link.csv")
        self.acks = read("acks.csv")
        self.unsent = read("unsent.csv")
        self.first_us = result["first_send_us"]
        self.complete = bool(result["complete"])
        self.end_us = result["dry_us"] if self.complete else result["end_us"]
        src, dst = endpoints()
        self.flow = f"{src} -> {dst}"
        b_start = np.clip(self.blocked.start_us.to_numpy(), self.first_us, self.end_us)
        b_end = np.clip(self.blocked.end_us.to_numpy(), self.first_us, self.end_us)
        self.app_blocked_us = int((b_end - b_start).sum())
        g_start, g_end = gap_intervals(self.acks, self.end_us)
        self.blocking_gap = [(_overlap_us([s], [e], g_start, g_end) > 0) for s, e in zip(b_start, b_end)]
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
        return pd.DataFrame({"flow": self.flow, "start_s": to_time_s(b.start_us), "end_s": to_time_s(b.end_us),
                             "duration_s": (b.end_us - b.start_us) / 1e6, "resumed_s": to_time_s(b.resumed_us),
                             "stack_queue_bytes_at_start": queue, "gap_open": self.blocking_gap})

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
        k = self.link.copy()
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
        src, dst = endpoints()
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
