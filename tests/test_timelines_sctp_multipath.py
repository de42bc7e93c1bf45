"""Multi-homed SCTP timelines (Fast SACK, CMT with SACK and NR-SACK) and the SCTP broken vectors, as the
real tshark 4.0 sees them: good checksums, Wireshark's own fields carrying the values the expected
files (written by hand) say, and each broken vector's defect visible in Wireshark's own fields."""

import json

import pytest

from nrsack.generator.timelines import (notation_sctp, broken as timelines_broken, cmt as timelines_cmt,
                                        fsack as timelines_fsack)
from support.tshark import Plugin, run_tshark
from support.paths import SAMPLES

TIMELINES = [factory() for module in (timelines_fsack, timelines_cmt, timelines_broken)
             for factory in module.TIMELINES]
SCTP_PCAPS = [SAMPLES / t.options.get("subdir", "") / (t.name + ".pcap")
              for t in TIMELINES if t.notation is notation_sctp]


def expected(name):
    path = next(SAMPLES.glob("**/%s.expected.json" % name))
    return json.loads(path.read_text()), path.parent / (name + ".pcap")


def tshark(pcap, *fields, display_filter=None):
    """One dict per frame (or per frame matching the filter): field -> list of values."""
    args = ["-n", "-o", "sctp.checksum:CRC-32C", "-T", "fields",
            "-E", "occurrence=a", "-E", "aggregator=|", "-e", "frame.number"]
    if display_filter:
        args += ["-Y", display_filter]
    for field in fields:
        args += ["-e", field]
    rows = []
    for line in run_tshark(args, Plugin.none(), pcap=pcap, timeout=120).stdout.splitlines():
        frame, *values = line.split("\t")
        rows.append(dict({"frame": int(frame)}, **{f: v.split("|") if v else [] for f, v in zip(fields, values)}))
    return rows


def ints(values):
    return [int(v) for v in values]


def test_every_sctp_timeline_of_these_modules_is_written():
    assert len(SCTP_PCAPS) == 9
    assert all(p.exists() and p.with_suffix("").with_suffix(".expected.json").exists() for p in SCTP_PCAPS)


@pytest.mark.tshark
@pytest.mark.parametrize("pcap", SCTP_PCAPS, ids=lambda p: p.name)
def test_sctp_checksums_are_right(pcap):
    """CRC32c verified by Wireshark on every frame (status 1 = good), broken vectors included."""
    rows = tshark(pcap, "sctp.checksum.status")
    assert rows and all(r["sctp.checksum.status"] == ["1"] for r in rows), rows


@pytest.mark.tshark
@pytest.mark.parametrize("name", ["fsack-multihomed", "cmt-sack", "cmt-nrsack"])
def test_both_endpoints_are_dual_homed_and_frames_use_the_intended_paths(name):
    spec, pcap = expected(name)
    rows = tshark(pcap, "ip.src", "ip.dst", "sctp.parameter_ipv4_address", "sctp.supported_chunk_type",
                  "sctp.chunk_type")
    assert rows[0]["sctp.parameter_ipv4_address"] == ["192.0.2.1", "192.0.2.2"]
    assert rows[1]["sctp.parameter_ipv4_address"] == ["198.51.100.1", "198.51.100.2"]
    for row, packet in zip(rows, spec["packets"], strict=True):
        assert row["ip.src"] + row["ip.dst"] == [packet["src"].split(":")[0], packet["dst"].split(":")[0]]
        if "supported_extensions" in packet:
            assert ints(row["sctp.supported_chunk_type"]) == packet["supported_extensions"]


@pytest.mark.tshark
@pytest.mark.parametrize("name", ["cmt-sack", "cmt-nrsack"])
def test_tshark_shows_the_intended_sack_and_nr_sack_blocks(name):
    spec, pcap = expected(name)
    nr = name == "cmt-nrsack"
    prefix = "sctp.nr_sack_" if nr else "sctp.sack_"
    block = "nr_gap_block" if nr else "gap_block"
    # Wireshark shows a SACK's cum ack relative to the initial TSN; its raw field is the wire value.
    cum = prefix + "cumulative_tsn_ack" + ("" if nr else "_raw")
    rows = tshark(pcap, cum, prefix + block + "_start", prefix + block + "_end",
                  display_filter="sctp.chunk_type == %d" % (16 if nr else 3))
    seen = {r["frame"]: (ints(r[cum]),
                         [list(b) for b in zip(ints(r[prefix + block + "_start"]), ints(r[prefix + block + "_end"]))])
            for r in rows}
    key = "nr_blocks" if nr else "gap_blocks"
    want = {p["frame"]: ([p["cum_ack"]], p[key]) for p in spec["packets"] if key in p}
    assert seen == want


@pytest.mark.tshark
def test_fsack_procedure_as_wireshark_sees_it():
    """FSACK-INIT on the primary path; FSACK-ACKs with its timestamp on both return paths, the first
    65 ms after it (the FSACK-RTT-threshold); FSACK-COMPLETE names that path; every SACK uses it."""
    spec, pcap = expected("fsack-multihomed")
    rows = tshark(pcap, "frame.time_epoch", "ip.src", "ip.dst", "sctp.chunk_type", "sctp.chunk_value")
    by_type = {}
    for row in rows:
        for chunk_type, value in zip(row["sctp.chunk_type"], row["sctp.chunk_value"] or [""]):
            by_type.setdefault(int(chunk_type), []).append((row, value))
    (init_row, init_value), = by_type[0xA0]
    timestamp = int(init_value.replace(":", ""), 16)
    assert timestamp == spec["fsack"]["timestamp"]
    assert init_row["ip.src"] + init_row["ip.dst"] == ["192.0.2.1", "198.51.100.1"]
    answers = by_type[0xA1]
    assert {int(v.replace(":", ""), 16) for _, v in answers} == {timestamp}
    assert {r["ip.src"][0] for r, _ in answers} == {"198.51.100.1", "198.51.100.2"}
    first = min(answers, key=lambda a: float(a[0]["frame.time_epoch"][0]))[0]
    arrival_ms = round(float(first["frame.time_epoch"][0]) * 1000)
    assert (arrival_ms - timestamp) % 2**32 == spec["fsack"]["rtt_threshold_ms"]
    (complete_row, complete_value), = by_type[0xA2]
    # The address parameter: type 5, length 8, the IPv4 address of the first FSACK-ACK's sender.
    raw = bytes.fromhex(complete_value.replace(":", ""))
    assert raw[:4] == b"\x00\x05\x00\x08" and ".".join(map(str, raw[4:8])) == first["ip.src"][0]
    sacks = [r for r in rows if "3" in r["sctp.chunk_type"]]
    assert sacks and all(r["frame"] > complete_row["frame"] and r["ip.src"] == first["ip.src"] for r in sacks)


# --- broken vectors: the defect each is for, in Wireshark's own fields ------------------------

def _finding_frames(name):
    spec, pcap = expected(name)
    return [f["frames"][-1] for f in spec["findings"]], pcap


@pytest.mark.tshark
def test_nr01_nr_sack_although_init_ack_lists_no_0x10():
    frames, pcap = _finding_frames("nr01-nrsack-without-negotiation")
    rows = tshark(pcap, "sctp.supported_chunk_type", "sctp.chunk_type")
    assert ints(rows[0]["sctp.supported_chunk_type"]) == [16] and rows[1]["sctp.supported_chunk_type"] == []
    assert [r["frame"] for r in rows if "16" in r["sctp.chunk_type"]] == frames


def _nr_sack_tsns(pcap):
    """frame -> (set of TSNs in R blocks, set in NR blocks), from Wireshark's absolute block TSNs."""
    rows = tshark(pcap, "sctp.nr_sack_gap_block_start_tsn", "sctp.nr_sack_gap_block_end_tsn",
                  "sctp.nr_sack_nr_gap_block_start_tsn", "sctp.nr_sack_nr_gap_block_end_tsn",
                  display_filter="sctp.chunk_type == 16")
    tsns = lambda r, kind: {t for s, e in zip(ints(r[kind + "_start_tsn"]), ints(r[kind + "_end_tsn"]))
                            for t in range(s, e + 1)}
    return {r["frame"]: (tsns(r, "sctp.nr_sack_gap_block"), tsns(r, "sctp.nr_sack_nr_gap_block")) for r in rows}


@pytest.mark.tshark
def test_nr02_a_tsn_in_an_r_and_an_nr_block():
    frames, pcap = _finding_frames("nr02-overlapping-r-nr")
    overlapping = [f for f, (r, nr) in _nr_sack_tsns(pcap).items() if r & nr]
    assert overlapping == frames


@pytest.mark.tshark
def test_nr03_an_nr_acked_tsn_is_later_only_r_acked():
    spec, pcap = expected("nr03-revocation")
    (earlier, later), = [f["frames"] for f in spec["findings"]]
    blocks = _nr_sack_tsns(pcap)
    revoked = blocks[earlier][1] - blocks[later][1]
    assert revoked == {13} and revoked <= blocks[later][0]


@pytest.mark.tshark
def test_nr05_start_after_end_and_a_count_the_length_cannot_hold():
    frames, pcap = _finding_frames("nr05-malformed-blocks")
    rows = {r["frame"]: r for r in tshark(pcap, "sctp.chunk_length", "sctp.nr_sack_number_of_gap_blocks",
                                           "sctp.nr_sack_number_of_nr_gap_blocks", "sctp.nr_sack_nr_gap_block_start",
                                           "sctp.nr_sack_nr_gap_block_end", display_filter="sctp.chunk_type == 16")}
    start_after_end, bad_count = frames
    assert ints(rows[start_after_end]["sctp.nr_sack_nr_gap_block_start"]) == [3]
    assert ints(rows[start_after_end]["sctp.nr_sack_nr_gap_block_end"]) == [2]
    row = rows[bad_count]
    n_r, n_nr = ints(row["sctp.nr_sack_number_of_gap_blocks"]), ints(row["sctp.nr_sack_number_of_nr_gap_blocks"])
    assert 20 + 4 * (n_r[0] + n_nr[0]) != ints(row["sctp.chunk_length"])[0] == 24


@pytest.mark.tshark
def test_gen01_truncated_chunk_is_malformed_and_the_next_nr_sack_is_not():
    frames, pcap = _finding_frames("gen01-truncated-chunk")
    malformed = [r["frame"] for r in tshark(pcap, display_filter="_ws.malformed")]
    assert malformed == frames
    after = tshark(pcap, "sctp.nr_sack_cumulative_tsn_ack", display_filter="frame.number == %d" % (frames[0] + 1))
    assert ints(after[0]["sctp.nr_sack_cumulative_tsn_ack"]) == [13]


@pytest.mark.tshark
def test_fs01_fsack_ack_timestamp_no_fsack_init_carried():
    frames, pcap = _finding_frames("fs01-unknown-timestamp")
    rows = tshark(pcap, "sctp.chunk_type", "sctp.chunk_value")
    sent = {r["sctp.chunk_value"][0] for r in rows if r["sctp.chunk_type"] == ["160"]}
    unknown = [r["frame"] for r in rows if r["sctp.chunk_type"] == ["161"] and r["sctp.chunk_value"][0] not in sent]
    assert unknown == frames
