"""`--jobs N` (state/workers.py): the capture read a chunk ahead in a thread, each chunk's flows fed on N
threads. The figures must be those of one job, byte for byte: the JSON, the streamed tables and the
in-memory API, on the sample captures, the hostile suite and captures of many flows, in chunks small
enough that every chunk holds several flows and every flow several chunks. Correctness only: the
speed is bench_analyzer's (--stream-packets)."""

import random
import sys
import threading

import pandas as pd
import pytest
from support import pcaps, tcp_scenario
from support.cli import invoke as run
from support.hostile import build_all
from support.paths import REPO
from support.samples import PCAPS

from nrsack.analyzer import analyze
from nrsack.analyzer.state import workers as W
from nrsack.analyzer.views import formats, stream

JOBS = (2, 3)
HOSTILE = {name: data for name, data, _ in build_all()}


def analyze_json(path, *options):
    """(exit code, everything the command wrote) of `nrsack analyze PATH --format json`."""
    result = run("analyze", "--format", "json", *options, path)
    return result.exit_code, result.output


def table_files(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def many_flows(tmp_path_factory):
    """Interleaved long transfers (TCP with SACK, SCTP with NR-SACK: bench_analyzer's capture, 40 flows)
    and short TCP connections that end within a chunk or across two (the one-pass and held-back ways)."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_analyzer import build_capture
    from test_analyzer_short_flows import connection

    folder = tmp_path_factory.mktemp("jobs")
    long_path = folder / "long.pcap"
    build_capture(str(long_path), 12_000, 40, seed=5)
    rng = random.Random(28)
    frames = [f for k in range(80) for f in connection(rng, k, rng.uniform(0, 1.0))]
    frames += [f for k in range(3) for f in tcp_scenario.window_transfer(k, rng.uniform(0, 1.0), window=6 + 2 * k)]
    short_path = pcaps.write(folder / "short.pcap", sorted(frames, key=lambda f: float(f.time)))
    return {"long": long_path, "short": short_path}


@pytest.fixture
def feeding_threads(monkeypatch):
    """The names of the threads that fed flows (Workers.feed's shares)."""
    names = set()
    share = W.feed_share

    def recorded(work):
        names.add(threading.current_thread().name)
        share(work)

    monkeypatch.setattr(W, "feed_share", recorded)
    return names


@pytest.mark.parametrize("pcap", PCAPS, ids=lambda p: p.name)
def test_samples_json_is_the_same_for_any_jobs(pcap):
    one = analyze_json(pcap)
    assert one[0] == 0
    for jobs in JOBS:
        assert analyze_json(pcap, "--jobs", jobs) == one


@pytest.mark.parametrize("pcap", PCAPS, ids=lambda p: p.name)
def test_samples_in_small_chunks_same_summary_and_tables(pcap, tmp_path):
    # chunks of 5 frames: every flow spans many chunks, read ahead and fed from several threads
    folders = {}
    for jobs in (1, *JOBS):
        folders[jobs] = tmp_path / f"jobs{jobs}"
        result = stream.analyze_to_files(pcap, folders[jobs], "csv", chunk_frames=5, jobs=jobs)
        folders[jobs] = (formats.summary_dict(result), table_files(folders[jobs]))
    for jobs in JOBS:
        assert folders[jobs] == folders[1]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_captures_same_output_and_exit(name, tmp_path):
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(HOSTILE[name])
    one = analyze_json(path)
    assert analyze_json(path, "--jobs", 3) == one
    if one[0] == 0:  # the streamed tables too
        a, b = tmp_path / "a", tmp_path / "b"
        assert (run("analyze", "--format", "csv", "--out", a, path).exit_code
                == run("analyze", "--format", "csv", "--out", b, "--jobs", 2, path).exit_code == 0)
        assert table_files(b) == table_files(a)


@pytest.mark.parametrize("kind", ["long", "short"])
def test_many_flows_json_and_parquet_are_the_same(many_flows, kind, tmp_path, feeding_threads):
    path = many_flows[kind]
    one = analyze_json(path)
    assert one[0] == 0
    one_tables = tmp_path / "one"
    stream.analyze_to_files(path, one_tables, "parquet", chunk_frames=2000)
    feeding_threads.clear()
    for jobs in JOBS:
        assert analyze_json(path, "--jobs", jobs) == one
        tables = tmp_path / f"jobs{jobs}"
        stream.analyze_to_files(path, tables, "parquet", chunk_frames=2000, jobs=jobs)
        for name in ("summary", "rtxq", "blocking"):
            pd.testing.assert_frame_equal(pd.read_parquet(tables / f"{name}.parquet"),
                                          pd.read_parquet(one_tables / f"{name}.parquet"))
    # the long flows' work was shared: fed from the caller's thread and from the pool's (short TCP flows are
    # fed together in one compiled call in the caller's thread, DirectionAccumulator.feed_fused)
    if kind == "long":
        assert "MainThread" in feeding_threads and any(name.startswith("nrsack-flows") for name in feeding_threads)


@pytest.mark.parametrize("kind", ["long", "short"])
@pytest.mark.parametrize("chunk_frames", [97, 1000])
def test_summary_alone_in_chunks_is_the_same(many_flows, kind, chunk_frames):
    # the summary's store (SummaryStore) written in a thread while the next chunk is assigned, flows
    # finished as they end (read back from it mid-capture), short connections held back and finished in one pass
    path = many_flows[kind]
    one = formats.summary_dict(stream.analyze_to_files(path, chunk_frames=chunk_frames))
    for jobs in JOBS:
        assert formats.summary_dict(stream.analyze_to_files(path, chunk_frames=chunk_frames, jobs=jobs)) == one


@pytest.mark.parametrize("chunk_frames", [None, 300])
def test_in_memory_api_is_the_same(many_flows, chunk_frames):
    one = analyze(many_flows["long"], chunk_frames=chunk_frames)
    three = analyze(many_flows["long"], chunk_frames=chunk_frames, jobs=3)
    for table in ("summary", "rtxq", "blocking"):
        pd.testing.assert_frame_equal(getattr(three, table), getattr(one, table))
    assert formats.summary_dict(three) == formats.summary_dict(one)


def test_check_rides_along_with_jobs(many_flows):
    # the checker reads each flow as it is fed: its flows stay on one thread, the capture is still read ahead
    one = run("analyze", "--format", "json", "--check", many_flows["short"])
    two = run("analyze", "--format", "json", "--check", "--jobs", 2, many_flows["short"])
    assert (two.exit_code, two.output) == (one.exit_code, one.output)


def test_a_reader_error_comes_out_of_the_reading_thread(tmp_path):
    # cut inside its first record: unusable, one line and exit 2 as without threads
    path = tmp_path / "cut.pcap"
    whole = (pcaps.write(tmp_path / "whole.pcap", tcp_scenario.window_transfer(0, 0.0, window=4)))
    path.write_bytes(open(whole, "rb").read()[:24 + 10])
    code, text = analyze_json(path, "--jobs", 2)
    assert code == 2 and text.startswith("nrsack: error:") and len(text.strip().splitlines()) == 1
    assert analyze_json(path) == (code, text)


def test_read_ahead_stops_a_reader_left_behind():
    # the caller stops early: the reading thread is let go (not left blocked on its queue)
    before = threading.active_count()
    chunks = W.read_ahead(iter(range(100)))
    assert [next(chunks) for _ in range(3)] == [0, 1, 2]
    chunks.close()
    assert threading.active_count() == before


def test_several_captures_take_jobs_each(many_flows):
    # independent captures, one by one: each with the threads asked for, the same document
    paths = [many_flows["long"], many_flows["short"]]
    one = run("analyze", "--format", "json", "--separate", *paths)
    two = run("analyze", "--format", "json", "--separate", "--jobs", 2, *paths)
    assert one.exit_code == two.exit_code == 0, one.output[-300:]
    assert two.output == one.output and one.output.startswith('{"captures"')
