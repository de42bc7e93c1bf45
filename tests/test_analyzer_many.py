"""Many captures (issue 28): files that continue each other are one capture in time order (a flow
crossing a file boundary is one flow, frames numbered on as mergecap -a numbers them); other files are
independent captures, analysed one by one or on a Dask cluster, with the same summaries either way."""

import json
import os
import random
import struct
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from nrsack.analyzer.read import events as E
from nrsack.analyzer.read import inputs
from nrsack.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample-pcaps"


def build(path, packets, flows, seed=1):
    """The bench's capture: interleaved lossy TCP SACK and SCTP NR-SACK transfers, every flow from the
    first frames to the last."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_analyzer import build_capture

    build_capture(str(path), packets, flows, seed)
    return path


def split_pcap(path, folder, pieces):
    """`editcap -c`: the pcap at `path` cut into `pieces` files of consecutive records, each with the header."""
    data = Path(path).read_bytes()
    header, at, records = data[:24], 24, []
    little = header[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1")
    while at < len(data):
        caplen = struct.unpack("<I" if little else ">I", data[at + 8:at + 12])[0]
        records.append(data[at:at + 16 + caplen])
        at += 16 + caplen
    folder.mkdir(exist_ok=True)
    per = -(-len(records) // pieces)
    paths = []
    for i in range(pieces):
        piece = folder / f"ring_{i:05d}.pcap"
        piece.write_bytes(header + b"".join(records[i * per:(i + 1) * per]))
        paths.append(piece)
    return paths


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def document(*args):
    result = run(*args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def ring(tmp_path_factory):
    """(the whole capture, the 10 files of it as a tcpdump -C ring would hold them)."""
    folder = tmp_path_factory.mktemp("ring")
    whole = build(folder / "whole.pcap", 18_000, 6)
    return whole, split_pcap(whole, folder / "ring", 10)


def without_name(doc):
    return {key: value for key, value in doc.items() if key != "capture"}


def test_a_ring_of_ten_files_gives_the_figures_of_the_whole_capture(ring):
    whole, pieces = ring
    merged = document("analyze", whole)
    assert len(merged["flows"]) == 6 and merged["frames"] == 18_000
    shuffled = random.Random(1).sample(pieces, len(pieces))  # the order given does not matter: time does
    for args in ([pieces[0].parent], shuffled):
        as_ring = document("analyze", *args)
        assert without_name(as_ring) == without_name(merged)
    assert document("analyze", pieces[0].parent)["capture"] == str(pieces[0].parent)
    assert document("analyze", *shuffled)["capture"] == " + ".join(map(str, pieces))  # in time order


def test_a_ring_whose_newest_file_is_still_empty_is_the_ring(ring, tmp_path):
    whole, pieces = ring
    newest = tmp_path / "ring_99999.pcap"
    newest.write_bytes(pieces[0].read_bytes()[:24])  # just rotated: its header, no frame yet
    [capture] = inputs.captures([newest, *pieces])
    assert capture.paths[-1] == str(newest)
    assert without_name(document("analyze", newest, *pieces)) == without_name(document("analyze", whole))


def test_a_ring_gives_the_tables_and_the_check_of_the_whole_capture(ring, tmp_path):
    whole, pieces = ring
    for name, capture in (("whole", whole), ("ring", pieces[0].parent)):
        assert run("analyze", capture, "--format", "parquet", "--out", tmp_path / name).exit_code == 0
    for table in ("summary", "rtxq", "blocking"):
        assert pd.read_parquet(tmp_path / "whole" / f"{table}.parquet").equals(
            pd.read_parquet(tmp_path / "ring" / f"{table}.parquet"))
    # the checker's findings cite the same frames: the ring's frames are numbered on across its files
    checked = [run("check", "--format", "json", capture) for capture in (whole, pieces[0].parent)]
    assert checked[0].exit_code == checked[1].exit_code
    found = [json.loads(c.stdout)["findings"] for c in checked]
    assert found[0] and found[0] == found[1]


def test_a_ring_is_read_once_in_time_order(ring):
    _, pieces = ring
    [capture] = inputs.captures(list(reversed(pieces)))
    assert isinstance(capture, E.Ring) and capture.paths == tuple(map(str, pieces))
    header = E.read_capture(capture)
    assert header.frames == 18_000 and len(header.conns) == 6 and header.truncated is None


def test_captures_side_by_side_are_independent(tmp_path):
    one, two = build(tmp_path / "a.pcap", 4_000, 2, seed=1), build(tmp_path / "b.pcap", 4_000, 2, seed=2)
    assert inputs.captures([one, two]) == [str(one), str(two)]
    both = document("analyze", one, two)
    assert [c["capture"] for c in both["captures"]] == [str(one), str(two)]
    for alone, doc in zip((one, two), both["captures"]):
        assert doc == document("analyze", alone)


def test_separate_reads_a_ring_as_its_files(ring):
    _, pieces = ring
    docs = document("analyze", "--separate", *pieces[:3])["captures"]
    assert [d["capture"] for d in docs] == list(map(str, pieces[:3]))
    assert sum(d["frames"] for d in docs) == 5_400


def test_several_captures_write_one_summary_and_tables_partitioned_by_capture(tmp_path):
    captures = [SAMPLES / "tcp-nrsack-fig2.pcap", SAMPLES / "sctp-nrsack-fig4.pcap", SAMPLES / "cmt-nrsack.pcap"]
    result = run("analyze", *captures, "--format", "parquet", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    summary = pd.read_parquet(tmp_path / "out" / "summary.parquet")
    assert list(summary["capture"].unique()) == [c.name for c in captures] and summary.columns[0] == "capture"
    rtxq = pd.read_parquet(tmp_path / "out" / "rtxq")
    for capture in captures:
        assert run("analyze", capture, "--format", "parquet", "--out", tmp_path / capture.stem).exit_code == 0
        alone = pd.read_parquet(tmp_path / capture.stem / "summary.parquet")
        mine = summary[summary["capture"] == capture.name].drop(columns="capture")
        assert values(mine) == values(alone)
        alone_rtxq = pd.read_parquet(tmp_path / capture.stem / "rtxq.parquet")
        part = rtxq[rtxq["capture"] == capture.name].drop(columns="capture").reset_index(drop=True)
        assert len(part) == len(alone_rtxq) > 0
        assert part["time_s"].equals(alone_rtxq["time_s"]) and part["flow"].astype(str).equals(alone_rtxq["flow"].astype(str))


def values(frame):
    """A table's rows as plain values (a merged table's column may be wider than one capture's: object
    where that capture's was float)."""
    return [[None if pd.isna(v) else v for v in row] for row in frame.astype(object).itertuples(index=False)]


@pytest.mark.parametrize("setup,words", [
    (lambda tmp: [tmp / "absent.pcap"], ["absent.pcap: no such file"]),
    (lambda tmp: [tmp], ["a folder without a capture file"]),
])
def test_unusable_sets_end_with_one_line(tmp_path, setup, words):
    (tmp_path / "notes.txt").write_text("not a capture\n")
    result = run("analyze", *setup(tmp_path))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.startswith("nrsack: error:") and result.output.strip().count("\n") == 0
    assert all(w in result.output for w in words), result.output


def test_files_following_each_other_with_different_link_types_are_refused(tmp_path, ring):
    _, pieces = ring
    raw = bytearray(pieces[1].read_bytes())
    raw[20:24] = struct.pack("<I", 101)  # raw IP instead of Ethernet
    (tmp_path / "b.pcap").write_bytes(bytes(raw))
    result = run("analyze", pieces[0], tmp_path / "b.pcap")
    assert result.exit_code == 2 and result.output.count("\n") == 1 and "link type" in result.output
    assert "--separate" in result.output


@pytest.mark.parametrize("header_only", [True, False])
def test_an_unusable_capture_among_several_is_said_and_the_others_analysed(tmp_path, header_only):
    bad = tmp_path / "bad.pcap"
    if header_only:
        bad.write_bytes((SAMPLES / "cmt-sack.pcap").read_bytes()[:24])  # a header, no frame: no flows
    for command in ("analyze", "check"):
        result = run(command, "--format", "json", SAMPLES / "cmt-sack.pcap", bad)
        assert result.exit_code == 2
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert ("no SCTP or TCP flows" if header_only else "bad.pcap: no such file") in result.stderr
    analysed = json.loads(run("analyze", "--format", "json", SAMPLES / "cmt-sack.pcap", bad).stdout)
    assert [c["capture"] for c in analysed["captures"]] == [str(SAMPLES / "cmt-sack.pcap")]


def test_several_captures_to_files_say_what_their_figures_leave_out(tmp_path):
    sys.path.insert(0, str(REPO / "tests"))
    from support.hostile import write_flood

    flood = tmp_path / "flood.pcap"
    write_flood(flood, 300, "unacked")
    result = run("analyze", SAMPLES / "cmt-sack.pcap", flood, "--separate", "--format", "parquet", "--out",
                 tmp_path / "out", "--max-open-flows", 50)
    assert result.exit_code == 0, result.output
    # the files carry no findings: the budget's cut is said on the terminal, under its capture's name
    notes = [line for line in result.stderr.splitlines() if "--max-open-flows" in line]
    assert len(notes) == 1 and notes[0].startswith(f"{flood}: GEN-01 note frame "), result.stderr
    assert "cmt-sack.pcap:" not in result.stderr


@pytest.fixture
def dask_cluster(tmp_path):
    """A `dask scheduler` and two `dask worker` processes, as a cluster is run by hand; -> its address."""
    pytest.importorskip("distributed")
    scheduler_file = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "dask"]
    home = tmp_path / "cluster"  # not where the command runs: paths must reach the workers whole
    home.mkdir()
    started = [subprocess.Popen([*dask, "scheduler", "--scheduler-file", scheduler_file, "--port", "0",
                                 "--no-dashboard"], cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)]
    try:
        deadline = time.monotonic() + 120
        while not scheduler_file.exists():
            assert time.monotonic() < deadline and started[0].poll() is None, "the scheduler did not start"
            time.sleep(0.2)
        for _ in range(2):
            started.append(subprocess.Popen([*dask, "worker", "--scheduler-file", scheduler_file, "--nthreads", "1",
                                             "--no-dashboard"], cwd=home, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True))
        from dask.distributed import Client

        address = json.loads(scheduler_file.read_text())["address"]
        with Client(address, timeout=120) as client:
            client.wait_for_workers(2, timeout=120)
            assert len(client.scheduler_info()["workers"]) == 2
        yield address
    finally:
        for process in reversed(started):
            os.killpg(process.pid, 15)
            process.wait(timeout=60)


@pytest.mark.slow  # a cluster's start-up: seconds
def test_captures_on_a_scheduler_with_two_workers_give_the_summaries_of_one_by_one(tmp_path, dask_cluster,
                                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)  # the captures and the output named as a user would, from here
    captures = [build(Path(f"host{i}.pcap"), 5_000, 2 + i % 3, seed=i) for i in range(6)]
    spread = run("analyze", *captures, "--scheduler", dask_cluster, "--format", "parquet", "--out", "spread")
    assert spread.exit_code == 0, spread.output
    serial = run("analyze", *captures, "--format", "parquet", "--out", "serial")
    assert serial.exit_code == 0, serial.output
    merged = pd.read_parquet(tmp_path / "spread" / "summary.parquet")
    assert merged.equals(pd.read_parquet(tmp_path / "serial" / "summary.parquet"))
    assert list(merged["capture"].unique()) == [c.name for c in captures]
    for table in ("rtxq", "blocking"):
        spread_rows = pd.read_parquet(tmp_path / "spread" / table).sort_values(["capture", "flow"], kind="stable")
        serial_rows = pd.read_parquet(tmp_path / "serial" / table).sort_values(["capture", "flow"], kind="stable")
        assert len(spread_rows) > 0 and spread_rows.reset_index(drop=True).equals(serial_rows.reset_index(drop=True))
    assert document("analyze", *captures, "--scheduler", dask_cluster) == document("analyze", *captures)


def test_a_ring_of_pcapng_and_compressed_pieces_is_the_whole_capture(ring, tmp_path):
    whole, pieces = ring
    folder = tmp_path / "mixed"
    folder.mkdir()
    for i, piece in enumerate(pieces):
        target = folder / f"part{i}.pcapng"
        subprocess.run(["editcap", "-F", "pcapng", str(piece), str(target)], check=True)
        if i % 3 == 1:  # tcpdump -C -z gzip compresses the files it is done with
            subprocess.run(["gzip", str(target)], check=True)
    assert len(inputs.captures([folder])) == 1
    assert without_name(document("analyze", folder)) == without_name(document("analyze", whole))


def test_a_ring_file_cut_short_is_read_up_to_its_last_record_and_the_next_read_on(ring, tmp_path):
    _, pieces = ring
    folder = tmp_path / "cut"
    folder.mkdir()
    for piece in pieces:
        (folder / piece.name).write_bytes(piece.read_bytes())
    cut = folder / pieces[3].name
    cut.write_bytes(cut.read_bytes()[:-20])  # its last record loses its tail
    result = run("analyze", "--format", "json", folder)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["frames"] == 18_000 - 1
    assert result.stderr.startswith("nrsack: warning:") and pieces[3].name in result.stderr
    assert result.stderr.count("\n") == 1


def test_follow_takes_one_file_not_a_ring(ring):
    _, pieces = ring
    result = run("analyze", "--follow", pieces[0].parent)
    assert result.exit_code == 2 and result.output == "nrsack: error: --follow reads one file as it grows, not several\n"


@pytest.mark.parametrize("command", ["analyze", "check"])
def test_a_file_the_kernel_will_not_read_is_one_line_alone_or_in_a_folder(tmp_path, command):
    """/proc/self/mem is a regular file whose read fails (EIO) even for root: the read errors a user
    without permission meets. Named or found in a folder, it is said in one line; the rest is analysed."""
    folder = tmp_path / "captures"
    folder.mkdir()
    (folder / "cmt-sack.pcap").write_bytes((SAMPLES / "cmt-sack.pcap").read_bytes())
    (folder / "unreadable.pcap").symlink_to("/proc/self/mem")
    alone = run(command, "--format", "json", folder / "unreadable.pcap")
    assert alone.exit_code == 2 and "Traceback" not in alone.stderr
    assert alone.stderr.strip().endswith("unreadable.pcap: cannot be read (Input/output error)")
    together = run(command, "--format", "json", folder)
    assert together.exit_code == 2
    assert together.stderr.count("\n") == 1 and "unreadable.pcap: cannot be read" in together.stderr
    if command == "analyze":
        assert [c["capture"] for c in json.loads(together.stdout)["captures"]] == [str(folder / "cmt-sack.pcap")]
