"""One lab run, whatever the stack: the run itself in an isolated process, then the truth files."""

import subprocess
from pathlib import Path


class LabError(Exception):
    """A run that could not be made (missing build, no root, a stack failure): one line for the user."""


def run_config(cfg, out_dir, summary_only=False):
    """Runs `cfg` into `out_dir` (the simulator's layout); returns truth.json's summary.
    summary_only (usrsctp): for a caller that keeps the summary alone (nrsack reproduce), which then
    costs a third of the CPU: no pcaps, no link log and no truth files are written."""
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise LabError(f"cannot create {out_dir}: {e.strerror}")
    if cfg.stack == "usrsctp":
        from .truth import LabTruth
        from .usrsctp import run_child

        try:
            result = run_child(cfg, out_dir, packet_files=not summary_only)
        except (RuntimeError, ImportError) as e:
            raise LabError(str(e))
        truth = LabTruth(cfg, result, out_dir)
        return truth.summary() if summary_only else truth.write()
    if cfg.stack in ("linux-tcp", "linux-mptcp", "usrsctp-udp"):
        from . import namespaces

        reason = namespaces.namespaces_unavailable(cfg.stack)
        if reason:
            raise LabError(reason)
        # after the check: as a user without root, the modules numpy needs may not even be readable
        from .truth import tcp_summary, udp_summary

        if cfg.stack == "usrsctp-udp":
            from .usrsctp_udp import ends
        else:
            from .linux_tcp import ends
        try:
            measured = namespaces.run(cfg, out_dir, ends)
        except (RuntimeError, OSError, subprocess.SubprocessError, AssertionError) as e:
            raise LabError(f"the {cfg.stack} run failed: {e}")
        return (udp_summary if cfg.stack == "usrsctp-udp" else tcp_summary)(cfg, measured, out_dir)
    raise LabError(f"stack {cfg.stack} is not available in this build")
