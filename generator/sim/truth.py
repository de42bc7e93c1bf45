"""The truth of a simulated transfer, in the terms of docs/metrics.md.

Times are the capture timestamps the pcap carries (microseconds, since EPOCH_S), so that an
analyzer reading the sender-side pcap can be compared with these tables exactly.
"""

import json

import numpy as np
import pandas as pd

from .model import ACK, DATA, RTX
from .wire import EPOCH_S, SCTP_PORTS, TCP_PORTS, addresses

RTXQ_COLUMNS = ["flow", "frame", "time_s", "event", "rtxq_sack_bytes", "rtxq_nr_bytes",
                "rtxq_whatif_bytes", "sacked_bytes", "nr_acked_bytes", "blocked", "gap_open"]


def capture_us(t_ns):
    return t_ns // 1000


def to_time_s(us):
    return EPOCH_S + np.asarray(us, dtype=np.int64) / 1e6


def endpoints(config):
    """(sender, receiver) of the data as address:port, on the first path."""
    ports = SCTP_PORTS if config.protocol in ("sctp", "cmt") else TCP_PORTS
    src, dst = addresses(0)
    return f"{src}:{ports[0]}", f"{dst}:{ports[1]}"


def flow_id(config):
    """Decision 13: the direction is named by its data sender, `src -> dst` (address:port)."""
    return " -> ".join(endpoints(config))


class Truth:
    """Tables and summary of one trace."""

    def __init__(self, trace):
        self.trace = trace
        cfg = self.config = trace.config
        self.flow = flow_id(cfg)
        rows = np.array(trace.rtxq, dtype=np.int64).reshape(-1, 9)
        self.us = capture_us(rows[:, 1])
        self.frame = rows[:, 0] + 1
        self.is_ack = rows[:, 2].astype(bool)
        self.rtxq_sack = rows[:, 3]
        self.rtxq_nr = rows[:, 4]
        self.sacked = rows[:, 5]
        self.nr_acked = rows[:, 6]
        self.blocked = rows[:, 7].astype(bool)
        self.gap_open = rows[:, 8].astype(bool)
        self.rtxq = self.rtxq_nr if cfg.ack == "nrsack" else self.rtxq_sack
        self.complete = trace.done_ns is not None
        last_frame_us = capture_us(trace.last_frame_ns())
        self.first_us = capture_us(trace.first_data_ns) if trace.first_data_ns is not None else 0
        self.end_us = capture_us(trace.done_ns) if self.complete else last_frame_us
        self._integrate()

    def _integrate(self):
        us = self.us
        if len(us) == 0:
            self.p_us = self.b_us = 0
            self.intervals = pd.DataFrame(columns=["flow", "start_s", "end_s", "duration_s",
                                                   "rtxq_bytes_at_start", "gap_open"])
            return
        nxt = np.append(us[1:], self.end_us)
        lo = np.clip(us, self.first_us, self.end_us)
        hi = np.clip(nxt, self.first_us, self.end_us)
        dur = hi - lo
        self.p_us = int(dur[self.blocked & self.gap_open].sum())
        self.b_us = int(dur[self.blocked].sum())
        b = self.blocked.astype(np.int8)
        change = np.diff(np.concatenate(([0], b, [0])))
        starts = np.flatnonzero(change == 1)
        ends = np.flatnonzero(change == -1)  # index of the row that unblocks (len(us): never)
        end_us = np.where(ends < len(us), us[np.minimum(ends, len(us) - 1)], self.end_us)
        start_us = us[starts]
        # an interval is inside loss recovery when gap_open held at any event within it
        gap_cum = np.concatenate(([0], np.cumsum(self.gap_open)))
        self.intervals = pd.DataFrame({
            "flow": self.flow,
            "start_s": to_time_s(start_us),
            "end_s": to_time_s(end_us),
            "duration_s": (end_us - start_us) / 1e6,
            "rtxq_bytes_at_start": self.rtxq[starts],
            "gap_open": (gap_cum[ends] - gap_cum[starts]) > 0,
        })

    @property
    def q_s(self):
        return (self.end_us - self.first_us) / 1e6

    def rtxq_table(self):
        return pd.DataFrame({
            "flow": pd.Categorical.from_codes(np.zeros(len(self.frame), np.int8), [self.flow]),
            "frame": self.frame,
            "time_s": to_time_s(self.us),
            "event": pd.Categorical.from_codes(self.is_ack.astype(np.int8), ["data", "ack"]),
            "rtxq_sack_bytes": self.rtxq_sack,
            "rtxq_nr_bytes": self.rtxq_nr,
            "rtxq_whatif_bytes": self.rtxq_sack - self.sacked,
            "sacked_bytes": self.sacked,
            "nr_acked_bytes": self.nr_acked,
            "blocked": self.blocked,
            "gap_open": self.gap_open,
        }, columns=RTXQ_COLUMNS)

    def cwnd_table(self):
        c = np.array(self.trace.cwnd, dtype=np.int64).reshape(-1, 4)
        return pd.DataFrame({"time_s": to_time_s(capture_us(c[:, 0])), "path": c[:, 1],
                             "cwnd_bytes": c[:, 2], "ssthresh_bytes": c[:, 3]})

    def recovery_table(self):
        rec = self.trace.recovery
        end = [capture_us(r[3]) if r[3] is not None else self.end_us for r in rec]
        return pd.DataFrame({
            "path": [r[0] for r in rec],
            "kind": [r[1] for r in rec],
            "start_s": to_time_s([capture_us(r[2]) for r in rec]),
            "end_s": to_time_s(end),
            "ended": [r[3] is not None for r in rec],
        })

    def summary(self):
        cfg, tr = self.config, self.trace
        q = self.q_s
        acked = tr.counters.get("acked_bytes", 0)
        src, dst = endpoints(cfg)
        kinds = tr.frame_kinds()
        return {
            "id": self.flow,
            "protocol": "sctp" if cfg.protocol in ("sctp", "cmt") else cfg.protocol,
            "src": src,
            "dst": dst,
            "nr_sack": cfg.ack == "nrsack",
            "data_bytes": cfg.total_bytes,
            "q_s": q,
            "p_s": self.p_us / 1e6,
            "b_s": self.b_us / 1e6,
            "p_over_q": self.p_us / 1e6 / q if q > 0 else 0.0,
            "b_over_q": self.b_us / 1e6 / q if q > 0 else 0.0,
            "sndbuf_bytes": cfg.sndbuf,
            "sndbuf_estimated": False,
            "max_rtxq_sack_bytes": int(self.rtxq_sack.max(initial=0)),
            "max_rtxq_nr_bytes": int(self.rtxq_nr.max(initial=0)),
            "max_rtxq_whatif_bytes": int((self.rtxq_sack - self.sacked).max(initial=0)),
            "throughput_bps": acked * 8 / q if q > 0 else 0.0,
            "blocking_intervals": len(self.intervals),
            "vantage": "sender",
            "complete": self.complete,
            "frames": len(kinds),
            "data_frames": int(np.count_nonzero((kinds == DATA) | (kinds == RTX))),
            "ack_frames": int(np.count_nonzero(kinds == ACK)),
            "counters": tr.counters,
            "parameters": parameters(cfg),
        }

    def write(self, out_dir, fmt="csv"):
        tables = {"truth_rtxq": self.rtxq_table(), "truth_blocking": self.intervals,
                  "truth_cwnd": self.cwnd_table(), "truth_recovery": self.recovery_table()}
        for name, df in tables.items():
            if fmt == "parquet":
                df.to_parquet(out_dir / f"{name}.parquet", index=False)
            else:
                df.to_csv(out_dir / f"{name}.csv", index=False, float_format="%.6f")
        (out_dir / "truth.json").write_text(json.dumps(self.summary(), indent=1) + "\n")


def parameters(cfg):
    return {
        "protocol": cfg.protocol, "ack": cfg.ack, "sndbuf": cfg.sndbuf, "bytes": cfg.total_bytes,
        "payload": cfg.payload, "seed": cfg.seed, "rcvbuf": cfg.rcvbuf,
        "loss_model": cfg.loss_model, "burst": cfg.burst, "isn": cfg.isn,
        "profile": cfg.profile, "duration_s": cfg.duration_s,
        "paths": [{"bandwidth_bps": p.bandwidth_bps, "delay_s": p.delay_s, "loss": p.loss,
                   "queue_packets": p.queue_packets, "ack_loss": p.ack_loss} for p in cfg.paths],
    }
