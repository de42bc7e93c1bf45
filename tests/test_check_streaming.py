"""`nrsack check` in one chunked pass: the findings do not depend on the chunk size, and the rows the
checker applies at once (Checker._pick) change no finding: every capture is checked in chunks of a few
frames with the selection, and as one chunk with every row through the rules' state one by one."""

import sys

import pytest

from nrsack.analyzer.rules import checker as C
from support.paths import REPO, SAMPLES

CAPTURES = sorted(p for p in SAMPLES.rglob("*") if p.suffix in (".pcap", ".pcapng"))


def findings(path, **options):
    try:
        return C.check_path(path, **options)[2]
    except Exception as error:  # unusable input must be unusable either way
        return type(error).__name__, str(error)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_chunked_and_selected_equals_every_row_in_one_chunk(path):
    reference = findings(path, chunk_frames=None, every_row=True)
    assert findings(path, chunk_frames=7) == reference
    assert findings(path, chunk_frames=None) == reference


def test_sample_captures_are_there():
    assert len(CAPTURES) >= 20


@pytest.fixture(scope="module")
def lossy_capture(tmp_path_factory):
    """The bench's capture, smaller: interleaved lossy TCP SACK and SCTP NR-SACK transfers."""
    sys.path.insert(0, str(REPO / "bench"))
    from bench_analyzer import build_capture

    path = tmp_path_factory.mktemp("lossy") / "lossy.pcap"
    build_capture(str(path), 30_000, 6)
    return path


@pytest.mark.slow  # seconds: not in the inner loop (make test-fast)
def test_long_lossy_capture_streams_to_the_same_findings(lossy_capture):
    reference = findings(lossy_capture, chunk_frames=None, every_row=True)
    assert len(reference) > 1000  # NR-SACKs without a captured handshake, malformed blocks
    assert {f["rule"] for f in reference} >= {"NR-01", "NR-05"}
    assert findings(lossy_capture, chunk_frames=4096) == reference
    assert findings(lossy_capture) == reference


def test_check_capture_of_a_whole_capture_is_the_streamed_result(lossy_capture):
    from nrsack.analyzer.read import events as E

    flows, found = C.check_capture(E.read_capture(lossy_capture))
    assert found == findings(lossy_capture)
    assert len(flows) == 6


def test_notes_kept_as_numbers_read_as_the_findings(lossy_capture):
    """The NR-01 notes on runs of acks (NoteRun) stay numbers until asked for: their dicts and JSON lines are
    those of the findings made one by one."""
    import json

    reference = findings(lossy_capture, chunk_frames=None, every_row=True)
    lazy = C.check_path(lossy_capture, lazy=True)[2]
    assert lazy.runs and len(lazy) == len(reference)
    assert list(lazy) == reference
    assert list(lazy.json_lines()) == [json.dumps(f) for f in reference]
    assert list(lazy.json_lines("x.pcap", batch=1000)) == [json.dumps(dict(f, flow=f"x.pcap:{f['flow']}"))
                                                           for f in reference]
    errors = C.at_least(lazy, "warning")
    assert list(errors) == [f for f in reference if f["severity"] != "note"]
    assert not errors.runs  # the notes' runs left out whole


def test_tcp_nr_options_without_their_handshake_stream_to_the_same_notes(tmp_path):
    """A TCP NR-SACK transfer cut after its handshake: a TN-01 note on every ack with NR blocks, judged as runs
    (NoteRun) when streamed, as on the every-row reference."""
    from click.testing import CliRunner

    from nrsack.cli import main
    from support.truth_harness import cut_pcap

    result = CliRunner().invoke(main, ["generate", "simulate", "--protocol", "tcp", "--ack", "nrsack", "--loss", "0.02",
                                       "--bytes", "3000000", "--seed", "3", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    cut = tmp_path / "cut.pcap"
    cut_pcap(tmp_path / "sender.pcap", cut, 200)
    reference = findings(cut, chunk_frames=None, every_row=True)
    assert sum(f["rule"] == "TN-01" for f in reference) > 100
    assert all(f["severity"] == "note" for f in reference if f["rule"] == "TN-01")
    assert findings(cut, chunk_frames=500) == reference
    lazy = C.check_path(cut, lazy=True)[2]
    assert lazy.runs and list(lazy) == reference
