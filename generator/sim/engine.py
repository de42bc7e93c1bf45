"""The one way to run the simulator and write its captures.

simulate() picks the engine for a run: the compiled event loop (fast.py, single-path SCTP and TCP,
MPTCP) when it applies, else the Python reference (model.py). write_pcap() picks the writer for a
run's frames: the compiled one for a compiled SCTP or TCP run, else wire.py's frames through the
Python pcap writer.
The choice lives here so that fast.py builds on model.py and wire.py and neither of them knows
fast.py exists (tests/test_simulator_fast.py holds the two paths byte-identical).
"""

from . import fast
from .model import PathConfig, SimConfig, Simulation, Trace
from .wire import WIRES, write_frames

__all__ = ["PathConfig", "SimConfig", "simulate", "write_pcap"]

ENGINES = ("auto", "python", "c")


def simulate(config: SimConfig, receiver_trace=False, engine="auto") -> Trace:
    """Run one transfer. engine: "python" (model.py), "c" (the compiled loop of fast.py,
    single-path SCTP/TCP, MPTCP; not CMT nor the linux profiles) or "auto" (C when it applies)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be auto, python or c, not {engine!r}")
    sim = Simulation(config, receiver_trace)
    if engine != "python":
        trace = fast.run(sim) if fast.eligible(config, receiver_trace) else None
        if trace is not None:
            return trace
        if engine == "c":
            raise RuntimeError("the compiled event loop does not apply to this run")
    return sim.run()


def write_pcap(trace, frames, path):
    """Write `frames` (trace.sender or trace.receiver) as a classic microsecond pcap, Ethernet;
    return the number of frames written."""
    wire = WIRES[trace.config.protocol](trace)
    if fast.write_pcap(trace, frames, path, wire):
        return len(frames)
    return write_frames(wire, frames, path)
