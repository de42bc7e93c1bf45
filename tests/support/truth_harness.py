"""One truth harness (docs/scoreboard.md): long simulated captures through every consumer of a capture (the
analyzer, `nrsack check`, the C plugin, the Lua plugin), each compared row by row with the simulator's
truth (generator/sim/truth.py) or, where no truth applies (captures not taken at the sender, captures
that start mid-association), with the analyzer.

A row is the state after one scoreboard-changing frame of the data sender's direction (docs/scoreboard.md:
a first transmission or an ack): RtxQ bytes under SACK, under NR-SACK and what-if, blocked, gap_open.

    CASES                       name -> Case, every capture of the harness
    Captures(folder)            the pcaps of the cases, simulated and written once (get(name) -> Capture)
    truth_rows(capture)         the simulator's rows (sender-side captures; frames renumbered after a cut)
    analyzer_rows(capture)      the analyzer's rows of the data sender's direction at the data level
    plugin_run(capture, plugin) the rows and the nrsack findings of one tshark run with a plugin
    checker_findings(capture)   `nrsack check --format json` findings
    first_difference(want, got) None, or where two row tables first disagree and how
    record(case, consumer, n)   appends "case consumer rows" to build/truth-harness/rows.tsv (the counts
                                a closing note quotes) and prints it
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from click.testing import CliRunner

from nrsack.analyzer import analyze
from nrsack.cli import main as nrsack_main
from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate, write_pcap
from nrsack.generator.sim.model import ACK
from nrsack.generator.sim.truth import Truth, flow_id
from support import tshark
from support.paths import REPO
from support.samples import RTXQ_FIELDS

# what every consumer is compared on, as the analyzer / truth tables name the columns
COLUMNS = ["rtxq_sack_bytes", "rtxq_nr_bytes", "rtxq_whatif_bytes", "blocked", "gap_open"]
SNDBUF = 16000
PAYLOAD = 200  # small payloads: 100k frames in 20 MB of capture
MIN_FRAMES = 100_000
COUNTS_FILE = REPO / "build" / "truth-harness" / "rows.tsv"


def _path(loss, delay_s=0.01, bandwidth_bps=20e6):
    return PathConfig(bandwidth_bps=bandwidth_bps, delay_s=delay_s, loss=loss)


ONE_PATH = (_path(0.02),)
TWO_PATHS = (_path(0.01, 0.005), _path(0.03, 0.03))
# the second path is slower and longer: acks of the fast path overtake those of the slow one, so the
# sender sees cum acks go backwards (stale acks, NR-07's situation, handled as docs/scoreboard.md says)
ASYMMETRIC = (_path(0.01, 0.005, 20e6), _path(0.03, 0.03, 10e6))


@dataclass(frozen=True)
class Case:
    """One simulated capture. vantage "receiver": the receiver's capture (trace.receiver), where no
    truth of the sender applies; first_lost: the first DATA never arrives (SimConfig.drop_units=(0,));
    cut: that many frames cut from the start (no handshake: the capture starts mid-association)."""

    name: str
    protocol: str
    ack: str
    paths: tuple = ONE_PATH
    isn: int | None = None
    total_bytes: int = 14_000_000
    vantage: str = "sender"
    first_lost: bool = False
    cut: int = 0
    reorders_acks: bool = False
    seed: int = 5

    @property
    def has_truth(self) -> bool:
        return self.vantage == "sender" and not self.cut

    def config(self) -> SimConfig:
        return SimConfig(protocol=self.protocol, ack=self.ack, sndbuf=SNDBUF, total_bytes=self.total_bytes,
                         payload=PAYLOAD, seed=self.seed, isn=self.isn, paths=self.paths,
                         drop_units=(0,) if self.first_lost else ())


def _cases():
    # TSNs wrap after about a third of the transfer; TCP sequence numbers (and the first MPTCP
    # subflow's) about half-way
    sctp_wrap, tcp_wrap = 2**32 - 25_000, 2**32 - 7_000_000
    cases = []
    for ack in ("sack", "nrsack"):
        cases += [Case(f"sctp-{ack}", "sctp", ack, isn=sctp_wrap),
                  Case(f"cmt-{ack}", "cmt", ack, paths=TWO_PATHS),
                  Case(f"tcp-{ack}", "tcp", ack, isn=tcp_wrap),
                  Case(f"mptcp-{ack}", "mptcp", ack, paths=TWO_PATHS, isn=tcp_wrap)]
    cases += [
        Case("cmt-nrsack-reordered-acks", "cmt", "nrsack", paths=ASYMMETRIC, reorders_acks=True, seed=7),
        Case("sctp-nrsack-receiver", "sctp", "nrsack", isn=sctp_wrap, vantage="receiver"),
        Case("sctp-nrsack-receiver-first-lost", "sctp", "nrsack", isn=sctp_wrap, vantage="receiver",
             first_lost=True),
        Case("tcp-nrsack-receiver-first-lost", "tcp", "nrsack", isn=tcp_wrap, vantage="receiver",
             first_lost=True),
        # cut in the middle of a loss recovery: the first acks carry blocks of data sent before the cut
        Case("sctp-nrsack-mid-association", "sctp", "nrsack", isn=sctp_wrap, cut=5084),
        Case("tcp-sack-mid-association", "tcp", "sack", isn=tcp_wrap, cut=5062),
    ]
    return {c.name: c for c in cases}


CASES = _cases()


@dataclass
class Capture:
    case: Case
    pcap: Path
    truth: Truth
    frames: int
    direction: str  # the data sender's direction, "src -> dst" (decision 13)
    cache: dict = field(default_factory=dict)  # consumer -> result, computed once a session


def cut_pcap(src: Path, dst: Path, frames: int) -> None:
    """dst: the classic pcap src without its first `frames` records."""
    data = memoryview(src.read_bytes())
    pos = 24
    for _ in range(frames):
        pos += 16 + struct.unpack_from("<I", data, pos + 8)[0]
    dst.write_bytes(bytes(data[:24]) + bytes(data[pos:]))


class Captures:
    """Each case's capture, simulated and written on first use, in a folder the unprivileged tshark can
    read (tests/support/tshark.py drops to uid 65534 when run as root)."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="nrsack-truth-"))
        os.chmod(self.folder, 0o755)
        self._made = {}

    def get(self, name: str) -> Capture:
        if name not in self._made:
            self._made[name] = self._make(CASES[name])
        return self._made[name]

    def _make(self, case: Case) -> Capture:
        trace = simulate(case.config(), receiver_trace=case.vantage == "receiver")
        frames = trace.receiver if case.vantage == "receiver" else trace.sender
        pcap = self.folder / f"{case.name}.pcap"
        write_pcap(trace, frames, pcap)
        if case.cut:
            whole = pcap.with_suffix(".whole.pcap")
            pcap.rename(whole)
            cut_pcap(whole, pcap, case.cut)
            whole.unlink()
        os.chmod(pcap, 0o644)
        return Capture(case, pcap, Truth(trace), len(frames) - case.cut, flow_id(case.config()))

    def close(self):
        shutil.rmtree(self.folder, ignore_errors=True)


def _rows(frame, values: dict) -> pd.DataFrame:
    table = pd.DataFrame({"frame": np.asarray(frame, dtype=np.int64)})
    for col in COLUMNS:
        table[col] = np.asarray(values[col], dtype=np.int64)
    return table


def truth_rows(capture: Capture) -> pd.DataFrame:
    t = capture.truth.rtxq_table()
    return _rows(t.frame - capture.case.cut, t)


def acks_reordered(capture: Capture) -> bool:
    """Some ack reaching the sender carries a lower cum ack than the one before it."""
    cums = [f[3][0] for f in capture.truth.trace.sender if f[1] == ACK]
    return any(b < a for a, b in zip(cums, cums[1:]))


def analyzer_rows(capture: Capture) -> pd.DataFrame:
    """The analyzer's rows of the capture's data direction: the entry that is no path or subflow of
    another (the data level), sender -> receiver."""
    if "analyzer" not in capture.cache:
        analysis = analyze(str(capture.pcap), sndbuf=SNDBUF)
        s = analysis.summary
        src, dst = capture.direction.split(" -> ")
        top = s[s.parent.isna() & (s.src == src) & (s.dst == dst)]
        assert len(top) == 1, f"expected one entry {capture.direction}, got\n{s[['id', 'src', 'dst', 'parent']]}"
        rows = analysis.rtxq[analysis.rtxq.flow == top.id.iloc[0]]
        capture.cache["analyzer"] = (_rows(rows.frame, rows), top.iloc[0])
    return capture.cache["analyzer"][0]


def analyzer_summary(capture: Capture):
    analyzer_rows(capture)
    return capture.cache["analyzer"][1]


PLUGIN_FIELDS = ["frame.number", "nrsack.direction", *RTXQ_FIELDS.values(), "_ws.expert.severity",
                 "_ws.expert.message"]
FIELD_OF = {"rtxq_sack_bytes": "nrsack.rtxq.sack_bytes", "rtxq_nr_bytes": "nrsack.rtxq.nr_bytes",
            "rtxq_whatif_bytes": "nrsack.rtxq.whatif_bytes", "blocked": "nrsack.blocked",
            "gap_open": "nrsack.gap_open"}
BOOLEAN = {"True": 1, "False": 0, "1": 1, "0": 0}


@dataclass
class PluginRun:
    rows: pd.DataFrame
    findings: list  # (frame, rule ID, severity)


def plugin_run(capture: Capture, plugin: tshark.Plugin) -> PluginRun:
    """One tshark -T fields pass: the RtxQ fields of the frames whose nrsack.direction occurrence is the
    data sender's (the occurrence at the same index in every field) and every nrsack finding."""
    key = f"plugin-{plugin.kind}"
    if key in capture.cache:
        return capture.cache[key]
    args = ["-T", "fields", "-E", "occurrence=a", "-E", f"aggregator={tshark.AGGREGATOR}", "-E", "separator=/t"]
    for f in PLUGIN_FIELDS:
        args += ["-e", f]
    out = tshark.run_tshark(args, plugin, prefs=tshark.golden_prefs(SNDBUF), pcap=capture.pcap, timeout=1800).stdout
    index = {f: i for i, f in enumerate(PLUGIN_FIELDS)}
    frames, values, findings = [], {c: [] for c in COLUMNS}, []
    for line in out.splitlines():
        cols = line.split("\t")
        if len(cols) != len(PLUGIN_FIELDS):
            continue
        frame = int(cols[0])
        for sev, msg in zip(*(c.split(tshark.AGGREGATOR) if c else [] for c in cols[-2:])):
            m = tshark.RULE_RE.match(msg)
            if m:
                findings.append((frame, m.group(1), tshark.SEVERITY.get(int(sev), sev)))
        directions = cols[1].split(tshark.AGGREGATOR) if cols[1] else []
        if capture.direction not in directions:
            continue
        i = directions.index(capture.direction)
        frames.append(frame)
        for col, name in FIELD_OF.items():
            occurrences = cols[index[name]].split(tshark.AGGREGATOR)
            text = occurrences[i] if i < len(occurrences) else ""
            # a missing occurrence reads -1: it differs from every real value
            values[col].append(BOOLEAN.get(text, -1) if col in ("blocked", "gap_open") else int(text or -1))
    capture.cache[key] = PluginRun(_rows(frames, values), findings)
    return capture.cache[key]


def checker_findings(capture: Capture) -> list:
    """(rule ID, severity, last frame) of `nrsack check --format json` on the capture."""
    if "checker" not in capture.cache:
        result = CliRunner().invoke(nrsack_main, ["check", "--format", "json", str(capture.pcap)])
        assert result.exit_code in (0, 1), result.output
        findings = json.loads(result.output)["findings"]
        capture.cache["checker"] = [(f["rule"], f["severity"], f["frames"][-1]) for f in findings]
    return capture.cache["checker"]


def first_difference(want: pd.DataFrame, got: pd.DataFrame, want_name="truth", got_name="got") -> str | None:
    """None when both tables have the same frames and values; else the first frame where they differ,
    with both rows."""
    merged = want.merge(got, on="frame", how="outer", suffixes=("_want", "_got"), indicator=True).sort_values("frame")
    differs = merged["_merge"] != "both"
    for col in COLUMNS:
        differs |= merged[f"{col}_want"] != merged[f"{col}_got"]
    if not differs.any():
        return None
    row = merged[differs].iloc[0]
    where = {"left_only": f"only {want_name} has a row", "right_only": f"only {got_name} has a row",
             "both": "values differ"}[row["_merge"]]
    show = lambda side: {c: (None if pd.isna(row[f"{c}_{side}"]) else int(row[f"{c}_{side}"])) for c in COLUMNS}
    return (f"frame {int(row.frame)}: {where} ({int(differs.sum())} rows differ of {len(merged)}); "
            f"{want_name} {show('want')}, {got_name} {show('got')}")


def record(case: str, consumer: str, rows: int) -> None:
    """One line of the rows-compared table: printed, and appended to COUNTS_FILE."""
    line = f"{case}\t{consumer}\t{rows}"
    print(f"truth harness: {line}")
    COUNTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(COUNTS_FILE, "a") as f:
        f.write(line + "\n")


def _frames(capture: Capture):
    trace = capture.truth.trace
    return trace.receiver if capture.case.vantage == "receiver" else trace.sender


def ack_frames(capture: Capture) -> list:
    """Capture frame numbers of the acks."""
    cut = capture.case.cut
    return [i + 1 - cut for i, f in enumerate(_frames(capture)) if i >= cut and f[1] == ACK]


def stale_ack_frames(capture: Capture) -> list:
    """Capture frame numbers of the acks whose cum ack is below a cum ack captured before them."""
    cut, highest, stale = capture.case.cut, None, []
    for i, f in enumerate(_frames(capture)):
        if i < cut or f[1] != ACK:
            continue
        if highest is not None and f[3][0] < highest:
            stale.append(i + 1 - cut)
        highest = f[3][0] if highest is None else max(highest, f[3][0])
    return stale


def convergence_frame(capture: Capture) -> int:
    """In a capture cut mid-association: the first ack that cum-acks everything sent before the cut.
    From there on no unit the consumers never saw is outstanding, so their rows must equal the truth."""
    cut, trace = capture.case.cut, capture.truth.trace
    sent_before = max(f[3] for f in trace.sender[:cut] if f[1] != ACK and isinstance(f[3], int))
    return next(i + 1 - cut for i, f in enumerate(trace.sender)
                if i >= cut and f[1] == ACK and f[3][0] > sent_before)


def acks_beyond_captured_data(capture: Capture) -> list:
    """Capture frame numbers of the acks that cover a unit above every DATA captured before them (a
    capture cut mid-association: the acks before its first DATA, or blocks of data sent before the cut)."""
    cut, top, beyond = capture.case.cut, None, []
    for i, f in enumerate(_frames(capture)):
        if i < cut:
            continue
        if f[1] != ACK:
            if isinstance(f[3], int):
                top = f[3] + 1 if top is None else max(top, f[3] + 1)
            continue
        cum, blocks = f[3][0], f[3][1]
        if top is None or max([cum] + [hi for _, hi in blocks]) > top:
            beyond.append(i + 1 - cut)
    return beyond


def expected_findings(capture: Capture) -> list:
    """(frame, rule, severity) a conforming simulated transfer must raise, sorted: a note on every SCTP
    ack whose cum ack moved backwards (NR-07: the paths reorder acks) and, without the handshake, on
    every NR-SACK (NR-01's note, a finding again on each one: decisions.md 18) and on every ack that
    covers a TSN above all DATA captured so far (NR-09's note: the capture may have missed that data,
    decisions.md 42); nothing else."""
    case = capture.case
    found = []
    if case.protocol in ("sctp", "cmt"):
        found += [(f, "NR-07", "note") for f in stale_ack_frames(capture)]
        if case.cut:
            found += [(f, "NR-09", "note") for f in acks_beyond_captured_data(capture)]
        if case.cut and case.ack == "nrsack":
            found += [(f, "NR-01", "note") for f in ack_frames(capture)]
    return sorted(found)
