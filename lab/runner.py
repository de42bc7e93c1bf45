"""One lab run, whatever the stack: the run itself in an isolated process, then the truth files."""

import json
import subprocess
from pathlib import Path

PORT_TCP = 5201


class LabError(Exception):
    """A run that could not be made (missing build, no root, a stack failure): one line for the user."""


def run_config(cfg, out_dir):
    """Runs `cfg` into `out_dir` (the simulator's layout); returns truth.json's summary."""
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LabError(f"cannot create {out_dir}: {e.strerror}")
    if cfg.stack == "usrsctp":
        from .truth import LabTruth
        from .usrsctp import run_child

        try:
            result = run_child(cfg, out_dir)
        except (RuntimeError, ImportError) as e:
            raise LabError(str(e))
        return LabTruth(cfg, result, out_dir).write()
    if cfg.stack in ("linux-tcp", "linux-mptcp", "usrsctp-udp"):
        from . import linux_tcp

        reason = linux_tcp.namespaces_unavailable(cfg.stack)
        if reason:
            raise LabError(reason)
        try:
            measured = linux_tcp.run(cfg, out_dir)
        except (RuntimeError, OSError, subprocess.SubprocessError, AssertionError) as e:
            raise LabError(f"the {cfg.stack} run failed: {e}")
        if cfg.stack == "usrsctp-udp":
            from .usrsctp_udp import summary

            return summary(cfg, measured, out_dir)
        return tcp_summary(cfg, measured, out_dir)
    raise LabError(f"stack {cfg.stack} is not available in this build")


TCP_INFO_COLUMNS = ["unacked", "sacked", "lost", "retrans", "snd_mss", "snd_cwnd", "notsent_bytes", "bytes_acked"]
BUFFER_COLUMNS = ["sk_sndbuf", "sk_wmem_queued", "outq_bytes"]  # linux_tcp.buffer_state
MPTCP_INFO_COLUMNS = ["subflows", "write_seq", "snd_una", "retransmits", "bytes_retrans", "bytes_sent",
                      "bytes_acked"]


def _connection_samples(cfg, m, out_dir):
    """The sampled view of the sender's kernel, written to the truth files; -> (time_s, bytes held
    unsent (MPTCP: in the connection's queue or a subflow's), gap open, payload bytes sent and not acked, segment size) per sample. linux-mptcp: the connection level (MPTCP_INFO, data
    sequence numbers made relative to the first byte written) in truth_mptcp_info.csv and every
    subflow's TCP_INFO (MPTCP_TCPINFO) in truth_tcp_info.csv; linux-tcp: TCP_INFO. Both with the
    socket's buffer (sk_sndbuf, sk_wmem_queued, SIOCOUTQ).

    Gap open, the kernel's view of the last ack: TCP, segments SACKed above snd_una (tcpi_sacked);
    MPTCP, a data-level gap (decisions.md 12): a subflow holds SACKed segments, or the subflows have
    acked more bytes than the data level (their cumulative acks cover DSNs above the DATA ACK; bytes
    the connection re-sent on another subflow are acked twice, so they are taken off)."""
    import numpy as np
    import pandas as pd

    if cfg.stack != "linux-mptcp":
        info = pd.DataFrame(m["samples"], columns=["time_s", *TCP_INFO_COLUMNS, *BUFFER_COLUMNS])
        info.to_csv(out_dir / "truth_tcp_info.csv", index=False, float_format="%.6f")
        return (info.time_s, info.notsent_bytes, (info.sacked > 0).to_numpy(), info.outq_bytes - info.notsent_bytes,
                info.snd_mss)
    subflows = pd.DataFrame(m["subflow_samples"], columns=["time_s", "subflow", *TCP_INFO_COLUMNS])
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
    conn.to_csv(out_dir / "truth_mptcp_info.csv", index=False, float_format="%.6f")
    mss = float(subflows.snd_mss.median()) if len(subflows) else 1448.0
    unsent = conn.notsent_bytes + conn.subflow_notsent_bytes
    return conn.time_s, unsent, conn.gap_open.to_numpy(), conn.unacked_bytes - unsent, mss


def path_counters(logs):
    """Frames and drops per direction from the forwarders' logs, summed; per path too when 2+."""
    paths = [{"packets_forward": log["frames"][0], "packets_reverse": log["frames"][1],
              "lost_forward": sum(1 for d in log["drops"] if d[0] == 0),
              "lost_reverse": sum(1 for d in log["drops"] if d[0] == 1)} for log in logs]
    counters = {key: sum(path[key] for path in paths) for key in paths[0]}
    if len(paths) > 1:
        counters["paths"] = paths
    return counters


def tcp_summary(cfg, m, out_dir):
    """truth.json of a Linux TCP / MPTCP run: q from the first write to the kernel's last ack (TCP_INFO
    unacked 0; MPTCP: the data level's snd_una at write_seq), b the sender's measured waits for buffer
    space; the sampled kernel state in truth_tcp_info.csv (and truth_mptcp_info.csv)."""
    import numpy as np
    import pandas as pd

    from .truth import blocked_keys, blocked_within, time_where

    start, done = m["start"], m["done"]
    complete = done is not None
    end = done if complete else (m["samples"][-1][0] if m["samples"] else start)
    q = end - start
    app_blocked = blocked_within(m["waits"], start, end)
    times, notsent, gap, sent_unacked, mss = _connection_samples(cfg, m, out_dir)
    # as for usrsctp: waits while the kernel held a segment or more unsent are invisible to a
    # capture (less than a segment is a write waiting to fill one, not a full buffer of sent data)
    waits = np.asarray(m["waits"], dtype=float).reshape(-1, 2)
    w_start, w_end = np.maximum(waits[:, 0], start), np.minimum(waits[:, 1], end)
    unsent = (notsent >= mss).to_numpy()
    app_unsent = time_where(times, unsent, w_start, w_end)
    p = time_where(times, ~unsent & gap, w_start, w_end)
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
    summary = {"id": f"10.0.0.1 -> 10.0.0.2:{PORT_TCP}", "protocol": "mptcp" if mptcp else "tcp",
               "src": "10.0.0.1", "dst": f"10.0.0.2:{PORT_TCP}", "nr_sack": False, "data_bytes": cfg.bytes,
               "q_s": q, **blocked_keys(q, app_blocked, app_unsent, app_blocked - app_unsent, p),
               "sndbuf_bytes": held_at_waits["median"] if held_at_waits else None,
               "sndbuf_payload_at_waits": held_at_waits, "sndbuf_socket": cfg.sndbuf or "autotuned",
               "sndbuf_estimated": False,
               "throughput_bps": m["sent"] * 8 / q if complete and q > 0 else 0.0,
               "blocking_intervals": len(m["waits"]), "vantage": "sender", "complete": complete,
               "stack": cfg.stack, "congestion_control": m.get("cc"), "gso": cfg.gso,
               "truth_source": "sender process and " + ("MPTCP_INFO, MPTCP_TCPINFO" if mptcp else "TCP_INFO")
               + ", SO_MEMINFO, SIOCOUTQ",
               "counters": {"bytes_sent": m["sent"], **counters},
               "parameters": cfg.as_dict()}
    (out_dir / "truth.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary
