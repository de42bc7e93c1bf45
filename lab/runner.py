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
    if cfg.stack == "linux-tcp":
        from . import linux_tcp

        reason = linux_tcp.namespaces_unavailable()
        if reason:
            raise LabError(reason)
        try:
            measured = linux_tcp.run(cfg, out_dir)
        except (RuntimeError, OSError, subprocess.SubprocessError, AssertionError) as e:
            raise LabError(f"the linux-tcp run failed: {e}")
        return tcp_summary(cfg, measured, out_dir)
    raise LabError(f"stack {cfg.stack} is not available in this build")


def tcp_summary(cfg, m, out_dir):
    """truth.json of a Linux TCP run: q from the first write to the kernel's last ack (TCP_INFO
    unacked 0), b the sender's measured waits for buffer space; samples in truth_tcp_info.csv."""
    import numpy as np
    import pandas as pd

    from .truth import blocked_within, time_where

    start, done = m["start"], m["done"]
    complete = done is not None
    end = done if complete else (m["samples"][-1][0] if m["samples"] else start)
    q = end - start
    b = blocked_within(m["waits"], start, end)
    info = pd.DataFrame(m["samples"], columns=["time_s", "unacked", "sacked", "lost", "retrans", "snd_mss",
                                               "snd_cwnd", "notsent_bytes"])
    info.to_csv(out_dir / "truth_tcp_info.csv", index=False, float_format="%.6f")
    # as for usrsctp: waits while the kernel held a segment or more unsent are invisible to a
    # capture (less than a segment is a write waiting to fill one, not a full buffer of sent data)
    waits = np.asarray(m["waits"], dtype=float).reshape(-1, 2)
    b_unsent = time_where(info.time_s, info.notsent_bytes >= info.snd_mss, np.maximum(waits[:, 0], start),
                          np.minimum(waits[:, 1], end))
    pd.DataFrame(m["waits"], columns=["start_s", "end_s"]).to_csv(out_dir / "truth_blocking.csv", index=False,
                                                                  float_format="%.6f")
    summary = {"id": f"10.0.0.1 -> 10.0.0.2:{PORT_TCP}", "protocol": "tcp", "src": "10.0.0.1",
               "dst": f"10.0.0.2:{PORT_TCP}", "nr_sack": False, "data_bytes": cfg.bytes, "q_s": q, "b_s": b,
               "b_unsent_s": b_unsent, "b_sent_full_s": b - b_unsent,
               "b_over_q": b / q if q > 0 else 0.0, "sndbuf_bytes": cfg.sndbuf, "sndbuf_estimated": False,
               "throughput_bps": m["sent"] * 8 / q if complete and q > 0 else 0.0,
               "blocking_intervals": len(m["waits"]), "vantage": "sender", "complete": complete,
               "stack": "linux-tcp", "truth_source": "sender process and TCP_INFO",
               "counters": {"bytes_sent": m["sent"], "packets_forward": m["link"]["frames"][0],
                            "packets_reverse": m["link"]["frames"][1],
                            "lost_forward": sum(1 for d in m["link"]["drops"] if d[0] == 0),
                            "lost_reverse": sum(1 for d in m["link"]["drops"] if d[0] == 1)},
               "parameters": cfg.as_dict()}
    (out_dir / "truth.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary
