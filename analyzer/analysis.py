"""Flows and scoreboard -> results: RtxQ step functions, blocking intervals, p, q, b, throughput.

The definitions are ../shared/spec/metrics.md with the readings of docs/decisions.md (1-12); the
per-event work runs in the compiled scoreboard, everything here is vectorised over its output.
"""

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from nrsack.analyzer import _reader, events as E, flows as F

SUMMARY_KEYS = [
    "id", "protocol", "src", "dst", "nr_sack", "data_bytes", "q_s", "p_s", "b_s", "p_over_q", "b_over_q",
    "sndbuf_bytes", "sndbuf_estimated", "max_rtxq_sack_bytes", "max_rtxq_nr_bytes", "max_rtxq_whatif_bytes",
    "throughput_bps", "blocking_intervals", "vantage", "complete",
]

# vantage: the capture sits next to the endpoint whose handshake gap is the short one (its own
# processing time, against a round trip for the other); "short" means under 1/2.5 of the other gap.
# A real Linux pair on veth shows 58 us against 18 us.
VANTAGE_RATIO = 2.5


@dataclass
class Entry:
    """Results of one sender direction, path or subflow (columns as numpy arrays)."""

    summary: dict
    rtxq_columns: dict
    blocking_columns: dict
    serials: tuple = None  # (event indices, unwrapped 64-bit TSN / seq / DSN or cum ack, is data)
    paths: list = field(default_factory=list)

    @property
    def rtxq(self) -> pd.DataFrame:
        return rtxq_frame([self])

    @property
    def blocking(self) -> pd.DataFrame:
        return blocking_frame([self])


def run_scoreboard(stream: F.Stream, lo=None, hi=None, blo=None, bhi=None):
    """-> rtxq_sack, sacked, nr_acked, freed (int64 arrays per row) and flags (int8)."""
    n = len(stream.rows)
    lo = stream.lo if lo is None else lo
    hi = stream.hi if hi is None else hi
    blo = stream.blo if blo is None else blo
    bhi = stream.bhi if bhi is None else bhi
    outs = [np.zeros(n, np.int64) for _ in range(4)]
    flags = np.zeros(n, np.int8)
    c = np.ascontiguousarray
    _reader.scoreboard(c(stream.kind, np.int8), c(lo, np.int64), c(hi, np.int64), c(stream.bstart, np.int64),
                       c(stream.bcount, np.int32), c(blo, np.int64), c(bhi, np.int64), c(stream.bnr, np.int8),
                       *outs, flags)
    return (*outs, flags)


def vantage(ev, flow: F.Flow, sender: int) -> str:
    if len(flow.handshake) < 3:
        return "unknown"
    t0, t1, t2 = (int(ev["time_ns"][i]) for i in flow.handshake)
    reply, confirm = t1 - t0, t2 - t1
    if reply > VANTAGE_RATIO * confirm:
        near = 0  # the opener's reply came back late and it confirmed at once: we sit by the opener
    elif confirm > VANTAGE_RATIO * reply:
        near = 1
    else:
        return "middle"
    return "sender" if near == sender else "receiver"


def measure(cap: E.Capture, stream: F.Stream, entry_id: str, base: dict, nr_sack: bool, sndbuf, end_ns: int) -> Entry:
    ev = cap.ev
    rows = stream.rows
    times = ev["time_ns"][rows]
    frames = ev["frame"][rows]
    sack, sacked, nr_acked, freed, flags = run_scoreboard(stream)
    rtxq_nr = sack - nr_acked
    whatif = sack - sacked
    rtxq = rtxq_nr if nr_sack else sack
    is_data = stream.kind == 0
    data_idx = np.flatnonzero(is_data)
    sizes = (stream.hi - stream.lo)[data_idx]
    max_payload = int(sizes.max()) if len(sizes) else 0
    estimated = sndbuf is None
    capacity = int(rtxq.max()) if estimated and len(rtxq) else int(sndbuf or 0)
    blocked = (capacity - rtxq) < max_payload
    gap_open = sacked > 0 if stream.gap_from_sacked else (flags & 2) != 0
    snd_lo = int(stream.lo[data_idx].min()) if len(data_idx) else 0
    data_end = int(stream.hi[data_idx].max()) if len(data_idx) else 0
    cum = np.maximum.accumulate(np.where(is_data, np.iinfo(np.int64).min, stream.hi)) if len(rows) else np.empty(0, np.int64)
    done = np.flatnonzero(~is_data & (cum >= data_end)) if len(data_idx) else np.empty(0, np.int64)
    done = done[done > data_idx[-1]] if len(data_idx) else done
    complete = bool(len(done))
    if len(data_idx):
        i0 = int(data_idx[0])
        i1 = int(done[0]) if complete else len(rows) - 1
        t_start = int(times[i0])
        t_end = int(times[i1]) if complete else max(int(end_ns), int(times[i1]))
        window = slice(i0, i1 + 1)
        t = times[window]
        dt = np.diff(np.concatenate((t, [t_end])))  # integer ns: p, b and q are exact sums
        bw, gw = blocked[window], gap_open[window]
        p_ns = int(dt[bw & gw].sum())
        b_ns = int(dt[bw].sum())
        q_ns = t_end - t_start
        acked = min(int(cum[i1]), data_end) - snd_lo if (~is_data[: i1 + 1]).any() else 0
        intervals = _intervals(entry_id, t, t_end, bw, gw, rtxq[window], frames[window])
    else:
        p_ns = b_ns = q_ns = 0
        acked = 0
        intervals = _intervals(entry_id, np.empty(0, np.int64), 0, np.empty(0, bool), np.empty(0, bool),
                               np.empty(0, np.int64), np.empty(0, np.uint32))
    changed = (flags & 1) != 0
    every = bool(changed.all())

    def pick(values):
        # almost every event changes the scoreboard: keep the arrays instead of copying them
        return values if every else values[changed]

    table = {
        "time_ns": pick(times),
        "rtxq_sack_bytes": pick(sack),
        "rtxq_nr_bytes": pick(rtxq_nr),
        "rtxq_whatif_bytes": pick(whatif),
        "sacked_bytes": pick(sacked),
        "nr_acked_bytes": pick(nr_acked),
        "blocked": pick(blocked),
        "gap_open": pick(gap_open),
        "frame": pick(frames).astype(np.int64),
        "is_data": pick(is_data),
        "rtxq_bytes": pick(rtxq),
        "freed_bytes": pick(freed),
    }
    if stream.units_lo is not None:
        # SCTP: the same figures counted in TSNs
        u_sack, u_sacked, u_nr, _, _ = run_scoreboard(stream, stream.units_lo, stream.units_hi, stream.unit_blo, stream.unit_bhi)
        table["rtxq_sack_tsns"] = pick(u_sack)
        table["rtxq_nr_tsns"] = pick(u_sack - u_nr)
        table["rtxq_whatif_tsns"] = pick(u_sack - u_sacked)
    summary = dict(base)
    summary.update({
        "id": entry_id,
        "nr_sack": bool(nr_sack),
        "data_bytes": data_end - snd_lo,
        "q_s": q_ns / 1e9, "p_s": p_ns / 1e9, "b_s": b_ns / 1e9,
        "p_over_q": p_ns / q_ns if q_ns > 0 else 0.0,
        "b_over_q": b_ns / q_ns if q_ns > 0 else 0.0,
        "sndbuf_bytes": capacity,
        "sndbuf_estimated": estimated,
        "max_rtxq_sack_bytes": int(sack.max()) if len(sack) else 0,
        "max_rtxq_nr_bytes": int(rtxq_nr.max()) if len(sack) else 0,
        "max_rtxq_whatif_bytes": int(whatif.max()) if len(sack) else 0,
        "throughput_bps": acked * 8e9 / q_ns if q_ns > 0 else 0.0,
        "blocking_intervals": len(intervals["start_ns"]),
        "complete": complete,
        "max_payload_bytes": max_payload,
        "acked_bytes": acked,
        "retransmissions": int(((flags & 4) != 0).sum()),
        "first_frame": int(frames[data_idx[0]]) if len(data_idx) else None,
        "q_ns": q_ns, "p_ns": p_ns, "b_ns": b_ns,
    })
    # of the scoreboard input only the unwrapped serial numbers stay (events' `serial` column)
    return Entry(summary, table, intervals, (stream.rows, stream.serial, stream.kind == 0))


def _intervals(entry_id, t, t_end, blocked, gap_open, rtxq, frames) -> dict:
    """Runs of blocked events: start at the event after which blocked holds, end at the one after
    which it no longer does (decision 10), or at the end of q."""
    edges = np.diff(np.concatenate(([0], blocked.astype(np.int8), [0])))
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1)  # index of the first unblocked event (may be len(t))
    end_t = np.append(t, t_end)[stops].astype(np.int64)
    gap_cum = np.concatenate(([0], np.cumsum(gap_open)))
    end_frames = np.append(frames.astype(np.int64), -1)[stops]
    return {
        "start_ns": t[starts].astype(np.int64),
        "end_ns": end_t,
        "rtxq_bytes_at_start": rtxq[starts].astype(np.int64),
        "gap_open": (gap_cum[stops] - gap_cum[starts]) > 0,
        "start_frame": frames[starts].astype(np.int64),
        "end_frame": end_frames,  # -1: still blocked at the end of q
    }


def rtxq_frame(entries) -> pd.DataFrame:
    """metrics.md's rtxq.csv columns, then frame, event, rtxq_bytes, freed_bytes (acks only), time_ns
    and, for SCTP, the figures in TSNs (NA elsewhere)."""
    cols = _stack(entries, "rtxq")
    is_data = cols["is_data"]
    frame = pd.DataFrame({
        "flow": cols["flow"],
        "time_s": cols["time_ns"] / 1e9,
        **{k: cols[k] for k in ("rtxq_sack_bytes", "rtxq_nr_bytes", "rtxq_whatif_bytes", "sacked_bytes",
                                "nr_acked_bytes", "blocked", "gap_open", "frame")},
        "event": pd.Categorical.from_codes((~is_data).astype(np.int8), ["data", "ack"]),
        "rtxq_bytes": cols["rtxq_bytes"],
        "freed_bytes": pd.arrays.IntegerArray(cols["freed_bytes"], is_data.astype(bool)),
        "time_ns": cols["time_ns"],
    }, copy=False)  # the columns are fresh arrays: no need to copy them into 2-D blocks
    for name in ("rtxq_sack_tsns", "rtxq_nr_tsns", "rtxq_whatif_tsns"):
        if name in cols:
            frame[name] = cols[name]
    return frame


def blocking_frame(entries) -> pd.DataFrame:
    cols = _stack(entries, "blocking")
    end_frame = cols["end_frame"]
    return pd.DataFrame({
        "flow": cols["flow"],
        "start_s": cols["start_ns"] / 1e9,
        "end_s": cols["end_ns"] / 1e9,
        "duration_s": (cols["end_ns"] - cols["start_ns"]) / 1e9,
        "rtxq_bytes_at_start": cols["rtxq_bytes_at_start"],
        "gap_open": cols["gap_open"],
        "start_frame": cols["start_frame"],
        "end_frame": pd.arrays.IntegerArray(np.maximum(end_frame, 0), end_frame < 0),
        "start_ns": cols["start_ns"],  # exact; the float seconds above round to ~0.2 us
        "end_ns": cols["end_ns"],
    }, copy=False)


def _stack(entries, attribute) -> dict:
    """Concatenates the entries' column dicts; `flow` becomes a categorical of the entry ids; a column
    some entries lack becomes a nullable integer column, NA there."""
    parts = [getattr(e, f"{attribute}_columns") for e in entries]
    lengths = [len(next(iter(p.values()))) if p else 0 for p in parts]
    ids = [e.summary["id"] for e in entries]
    out = {"flow": pd.Categorical.from_codes(np.repeat(np.arange(len(ids)), lengths).astype(np.int64), ids)}
    names = list(dict.fromkeys(k for p in parts for k in p))
    for name in names:
        present = [p.get(name) for p in parts]
        if all(a is not None for a in present):
            if len(present) == 1:
                out[name] = present[0]
                continue
            out[name] = joined = np.concatenate(present)
            # the entries now view the joined column, so their own copies can go (peak memory)
            offset = 0
            for part, n in zip(parts, lengths):
                part[name] = joined[offset:offset + n]
                offset += n
        else:
            values = np.concatenate([a if a is not None else np.zeros(n, np.int64) for a, n in zip(present, lengths)])
            mask = np.concatenate([np.zeros(n, bool) if a is not None else np.ones(n, bool) for a, n in zip(present, lengths)])
            out[name] = pd.arrays.IntegerArray(values.astype(np.int64), mask)
    return out


def analyse_flow(cap, flow: F.Flow, rows_all, side_of, sndbuf, end_ns) -> list:
    """Entries of every sender direction of one flow that sent data (rows_all: its events, in order)."""
    ev = cap.ev
    sides = side_of[rows_all]
    entries = []
    for sender in (0, 1):
        base = {"protocol": flow.protocol, "src": flow.endpoints[sender], "dst": flow.endpoints[1 - sender],
                "flow": flow.id, "side": sender, "level": "association" if flow.protocol == "sctp" else "connection",
                "vantage": vantage(ev, flow, sender)}
        entry_id = f"{flow.id}{'ab'[sender]}"
        if flow.protocol == "sctp":
            stream = F.sctp_stream(cap, rows_all, sides, sender)
        elif flow.protocol == "tcp":
            stream = F.tcp_stream(cap, rows_all, sides, flow.conns[0], sender, flow.never_renege[1 - sender])
        else:
            stream = F.mptcp_stream(cap, rows_all, sides, sender)
        if not (stream.kind == 0).any():
            continue
        nr_sack = flow.negotiated_nr or stream.nr_seen or flow.never_renege[1 - sender]
        entry = measure(cap, stream, entry_id, base, nr_sack, sndbuf, end_ns)
        sub_conns = flow.conns if flow.protocol == "mptcp" or len(flow.conns) > 1 else []
        for k, conn in enumerate(sub_conns):
            c = cap.conns[conn]
            path_side = sender ^ _conn_flip(ev, rows_all, sides, conn)
            path_base = dict(base, src=c.endpoint(path_side), dst=c.endpoint(1 - path_side),
                             level="path" if flow.protocol == "sctp" else "subflow", parent=entry_id)
            if flow.protocol == "sctp":
                sub = F.sctp_stream(cap, rows_all, sides, sender, path_conn=conn)
                sub_nr = nr_sack
            else:
                sub = F.tcp_stream(cap, rows_all, sides, conn, sender, flow.never_renege[1 - sender])
                sub_nr = sub.nr_seen or flow.never_renege[1 - sender]
            if (sub.kind == 0).any():
                entry.paths.append(measure(cap, sub, f"{entry_id}.{k}", path_base, sub_nr, sndbuf, end_ns))
        entries.append(entry)
    return entries


def _conn_flip(ev, rows_all, sides, conn) -> int:
    """0 when the conn's endpoint A is the flow's side 0."""
    hit = np.flatnonzero(ev["conn"][rows_all] == conn)
    return int(ev["dir"][rows_all[hit[0]]]) ^ int(sides[hit[0]]) if len(hit) else 0


def gain(throughput_a, throughput_b):
    """Gain of run A over run B in percent (metrics.md); None when B moved no data."""
    return (throughput_a - throughput_b) / throughput_b * 100 if throughput_b else None
