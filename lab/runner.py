"""One lab run, whatever the stack: the run itself in an isolated process, then the truth files."""

from pathlib import Path


class LabError(Exception):
    """A run that could not be made (missing build, no root, a stack failure): one line for the user."""


def run_config(cfg, out_dir):
    """Runs `cfg` into `out_dir` (the simulator's layout); returns truth.json's summary."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if cfg.stack == "usrsctp":
        from .truth import LabTruth
        from .usrsctp import run_child

        try:
            result = run_child(cfg, out_dir)
        except (RuntimeError, ImportError) as e:
            raise LabError(str(e))
        return LabTruth(cfg, result, out_dir).write()
    raise LabError(f"stack {cfg.stack} is not available in this build")
