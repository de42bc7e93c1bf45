"""The ladder's lost label, which reads the gap / NR blocks as the analyzer's level unwrapped them
(DirectionResult.serials), across the 32-bit serial wrap (the sample captures do not wrap): simulated
transfers with scripted losses just before, across and after the wrap (the simulator says which first
transmissions were lost); every sample and conformance timeline replayed across the wrap; the vectors
where a block decides that data sent again was not lost."""

import re

import numpy as np
import pytest

from nrsack.analyzer import analyze
from nrsack.dashboard.ladder import ladder_rows
from nrsack.generator.timelines import all_timelines, conformance, notation_sctp
from nrsack.generator.timelines.timeline import Step, Timeline, write_pcap as write_timeline
from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate, write_pcap
from nrsack.generator.sim.model import DATA, RTX
from support.hostile import build_all
from support.paths import SAMPLES

PAYLOAD = 1000  # the simulator's default unit size in bytes
# SCTP and CMT: TSN 2^32 - 40 + unit, so units 37 .. 41 sit at the wrap; TCP and MPTCP: the sequence
# number of byte 0 is ISN + 1 (wire.py), so unit 40 ([-500, 500) from the wrap) straddles it
DROPPED = (37, 40, 41, 75)


def lost_frames(analysis, entry):
    rows, total = ladder_rows(analysis, entry, 0, 4e9, limit=10**6)
    assert len(rows) == total
    return set(rows.loc[rows["style"] == "lost", "frame"].tolist())


@pytest.mark.parametrize("ack", ["sack", "nrsack"])
@pytest.mark.parametrize("protocol,paths", [("sctp", 1), ("tcp", 1), ("cmt", 2), ("mptcp", 2)])
def test_lost_data_at_the_serial_wrap_is_labelled_lost(tmp_path, protocol, paths, ack):
    units = protocol in ("sctp", "cmt")
    isn = 2**32 - 40 if units else 2**32 - 40 * PAYLOAD - PAYLOAD // 2 - 1
    cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=32000, total_bytes=120 * PAYLOAD, seed=3, isn=isn,
                    drop_units=DROPPED, paths=tuple(PathConfig(bandwidth_bps=20e6, delay_s=0.01, loss=0.0)
                                                    for _ in range(paths)))
    trace = simulate(cfg)
    pcap = tmp_path / "wrap.pcap"
    write_pcap(trace, trace.sender, pcap)
    first_sent = {}  # dropped unit -> the frame (from 1) of its first transmission
    for index, (_, kind, _, unit, _) in enumerate(trace.sender):
        if kind in (DATA, RTX) and unit in DROPPED:
            first_sent.setdefault(unit, index + 1)
    assert sorted(first_sent) == sorted({f[3] for f in trace.sender if f[1] == RTX}) == list(DROPPED)

    analysis = analyze(pcap)
    entry = analysis.entries[0]
    # the transfer wraps the 32-bit space of the level (MPTCP: of its first subflow)
    wrapping = entry.paths[0] if protocol == "mptcp" else entry
    serials = wrapping.serials
    assert serials.serial.min() >> 32 != (serials.end.max() - 1) >> 32
    assert lost_frames(analysis, entry) == set(first_sent.values())
    by_path = [lost_frames(analysis, path) for path in entry.paths]
    if protocol == "mptcp":  # a subflow retransmits its own segments: each loss is one subflow's
        assert set().union(*by_path) == set(first_sent.values()) and not set.intersection(*by_path)
    for lost in by_path:  # (a CMT path sees a retransmission sent on another path not at all)
        assert lost <= set(first_sent.values())


def test_acks_keep_the_blocks_the_board_was_fed():
    """Per ack, its gap / NR blocks in the level's units: SCTP's offsets from the cum TSN, End inclusive."""
    analysis = analyze(SAMPLES / "sctp-nrsack-fig4.pcap")
    serials = analysis.entries[0].serials
    blocks = analysis.blocks
    wire = blocks[blocks["kind"].isin(["r", "nr"])]
    assert np.array_equal(serials.block_rows, wire["event"].to_numpy())
    cum = dict(zip(serials.rows[~serials.is_data].tolist(), serials.serial[~serials.is_data].tolist()))
    base = np.array([cum[e] for e in wire["event"]])
    assert np.array_equal(serials.block_lo, base + wire["lo"].to_numpy(np.int64))
    assert np.array_equal(serials.block_hi, base + wire["hi"].to_numpy(np.int64) + 1)
    # a DATA is one TSN; an ack's cum covers up to its cum TSN + 1
    assert np.array_equal(serials.end - serials.serial, np.ones(len(serials.rows), np.int64))


# ---- every sample and conformance timeline again with its serials wrapping inside the transfer ----

TIMELINES = {t.name: t for t in all_timelines() if t.options.get("subdir", "") in ("", "conformance")
             and any("DATA" in s.label or "DSN:" in s.label for s in t.steps)}  # (those that carry data)


def wrapped(timeline: Timeline) -> Timeline:
    """The same exchange with the sender's first DATA a unit (SCTP: one TSN; TCP, MPTCP: half a payload)
    below the 32-bit wrap, so it and the next are on either side of it."""
    options = dict(timeline.options)
    if timeline.notation is notation_sctp:
        first = min(int(m) for s in timeline.steps for m in re.findall(r"(?:^|\+ )DATA (\d+)", s.label))
        shift = 2**32 - 1 - first
        options["initial_tsn"] = {port: (tsn + shift) % 2**32 for port, tsn in options["initial_tsn"].items()}
        steps = [Step(s.t_ms, s.src, s.dst, " + ".join(_shift_tsns(c, shift) for c in s.label.split(" + ")))
                 for s in timeline.steps]
    else:  # TCP labels are relative to the ISNs: byte 1 of each direction lands 1.5 payloads below the wrap
        options["isn"] = {conn: 2**32 - options["payload"] * 3 // 2 - 1 for conn in options["isn"]}
        steps = timeline.steps
    return Timeline(timeline.name, timeline.source, timeline.notation, steps, timeline.epoch_s, options)


def _shift_tsns(chunk, shift):
    def tsn(match):
        return str((int(match.group(0)) + shift) % 2**32)

    if chunk.startswith("DATA "):
        return re.sub(r"(?<=^DATA )\d+", tsn, chunk)
    chunk = re.sub(r"(?<=^[SN]:)\d+", tsn, chunk)  # the cum TSN (gap blocks are offsets from it)
    return re.sub(r"(?<=D:)[\d,]+", lambda m: ",".join(str((int(t) + shift) % 2**32) for t in m.group(0).split(",")),
                  chunk)


def styles(pcap):
    analysis = analyze(pcap)
    out = {}
    for entry in analysis.all_entries():
        rows, _ = ladder_rows(analysis, entry, 0, 4e9, limit=10**6)
        out[entry.summary["id"]] = (dict(zip(rows["frame"], rows["style"])), entry.serials)
    return out


@pytest.mark.parametrize("name", sorted(TIMELINES))
def test_wrapping_the_serials_changes_no_ladder_style(tmp_path, name):
    timeline = TIMELINES[name]
    plain = styles(write_timeline(timeline, tmp_path / "plain.pcap"))
    wrap = styles(write_timeline(wrapped(timeline), tmp_path / "wrap.pcap"))
    assert plain.keys() == wrap.keys() and plain
    for entry_id, (frames, _) in plain.items():
        assert wrap[entry_id][0] == frames, entry_id
    # some level's serials reach across the wrap (MPTCP's data level, numbered from the keys, does not;
    # a vector of one DATA chunk reaches it with its cum ack)
    assert any(s.serial.min() >> 32 != s.end.max() >> 32 for _, s in wrap.values())


@pytest.mark.parametrize("name,lost,covered", [
    ("tn04-legal-sacked-retransmitted", "DATA 2", "DATA 3"),   # PDU 3 in a SACK block, PDU 2 behind the ack
    ("nr04-legal-renegable-retransmitted", "DATA 11", "DATA 12"),  # TSN 12 in an R block
    ("nr04-retransmission-after-nr-ack", None, "DATA 12"),      # TSN 12 in an NR block
])
def test_data_a_block_covered_is_not_lost_across_the_wrap(tmp_path, name, lost, covered):
    """The vectors where a block decides: data sent again although an ack between covered it."""
    timeline = TIMELINES[name]
    first = {label: min(i + 1 for i, s in enumerate(timeline.steps) if s.label == label) for label in (lost, covered) if label}
    for made in (timeline, wrapped(timeline)):
        frames = styles(write_timeline(made, tmp_path / f"{made is timeline}.pcap"))["0a"][0]
        assert frames[first[covered]] == "data"
        if lost:
            assert frames[first[lost]] == "lost"


def test_mptcp_data_a_subflow_sack_covered_is_not_lost(tmp_path, monkeypatch):
    """The data level counts the DSNs a subflow SACK covers as received (decision 12): a DSN reinjected
    after its subflow SACKed it was not lost (the ladder's own arithmetic, before, read only the DATA
    ACK's NR blocks and marked it lost); on its subflow the reinjection is new data."""
    rows = conformance.mptcp_handshake() + conformance.mptcp_data(0, 1, 2) + [
        ("R", "A:1 DA:1 SACK:1401-2801"), ("S", "S:4201 DSN:1401"), ("S", "S:1 DSN:1")]
    monkeypatch.setitem(conformance.VECTORS, "reinjected-after-subflow-sack", ("mptcp", rows, []))
    analysis = analyze(write_timeline(conformance.build("reinjected-after-subflow-sack"), tmp_path / "m.pcap"))
    data_level, subflow = analysis.entries[0], analysis.entries[0].paths[0]
    for entry, styles_of in ((data_level, ["lost", "data", "data", "ack", "rtx", "rtx"]),
                             (subflow, ["lost", "data", "data", "ack", "data", "rtx"])):
        rows, _ = ladder_rows(analysis, entry, 0, 4e9)
        assert rows["style"].tolist()[3:] == styles_of, entry.summary["id"]


HOSTILE_USABLE = {name: data for name, data, expectation in build_all() if expectation == "usable"}


@pytest.mark.parametrize("name", sorted(HOSTILE_USABLE))
def test_the_ladder_of_a_hostile_capture_labels_every_frame_without_failing(tmp_path, name):
    # cut, clock-stepped, far-acked, DSS-garbled captures: the kept blocks and serials still make a ladder
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(HOSTILE_USABLE[name])
    analysis = analyze(path)
    for entry in [e for top in analysis.entries for e in (top, *top.paths)]:
        rows, total = ladder_rows(analysis, entry, 0, 2**40, limit=10**6)
        assert len(rows) == total
        assert set(rows["style"]) <= {"lost", "rtx", "data", "ack", "control"}
        lost = rows[rows["style"] == "lost"]
        assert lost["from_sender"].all()  # only the sender's data can be lost
