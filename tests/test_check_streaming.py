"""`nrsack check` in one chunked pass: the findings do not depend on the chunk size, and the rows the
checker applies at once (Checker._pick) change no finding: every capture is checked in chunks of a few
frames with the selection, and as one chunk with every row through the rules' state one by one."""

import sys

import numpy as np
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


def plain_then_nr_transfer(resent_after_ack=True):
    """A -> B, NR-SACK negotiated: ten segments each acked by a plain ack (chunks without a wire block, taken at
    once by Checker._plain_chunk), then a segment resent after its cum ack (TN-04 names the ack from the cum ack's
    steps those chunks left), a loss NR-acked by a block reaching past the data sent (the ledger clips it to what
    the plain chunks saw sent), and a SACK block over that block without it (TN-03 names what the ledger kept)."""
    from support.hostile import ACK, NR_PERM, PSH, SACK_PERM, SYN, nr_option, sack_option, tcp

    isn, size = 0xFFFFF000, 500  # the sequence numbers wrap inside the plain chunks
    base = isn + 1
    out = [(0.0, 0, tcp(40000, 80, isn, 0, SYN, SACK_PERM + NR_PERM), 6),
           (0.01, 1, tcp(80, 40000, 7, base, SYN | ACK, SACK_PERM + NR_PERM), 6),
           (0.011, 0, tcp(40000, 80, base, 8, ACK), 6)]
    t = 0.02
    for k in range(10):
        out += [(t, 0, tcp(40000, 80, base + k * size, 8, ACK | PSH, payload=b"x" * size), 6),
                (t + 0.005, 1, tcp(80, 40000, 8, base + (k + 1) * size, ACK), 6)]
        t += 0.01
    if resent_after_ack:
        out.append((t, 0, tcp(40000, 80, base + 2 * size, 8, ACK, payload=b"x" * size), 6))
    lost, got = base + 10 * size, base + 11 * size
    out += [(t + 0.01, 0, tcp(40000, 80, lost, 8, ACK | PSH, payload=b"x" * size), 6),
            (t + 0.02, 0, tcp(40000, 80, got, 8, ACK | PSH, payload=b"x" * size), 6),
            (t + 0.03, 1, tcp(80, 40000, 8, lost, ACK, nr_option([(got, got + 2 * size)])), 6),
            (t + 0.04, 1, tcp(80, 40000, 8, lost, ACK, sack_option([(got, got + 2 * size)])), 6),
            (t + 0.05, 0, tcp(40000, 80, lost, 8, ACK, payload=b"x" * size), 6),
            (t + 0.06, 1, tcp(80, 40000, 8, got + size, ACK), 6)]
    return out


@pytest.mark.parametrize("resent", [True, False])
def test_plain_tcp_chunks_taken_at_once_change_no_finding(tmp_path, monkeypatch, resent):
    """Chunks of a TCP connection whose rows carry no wire block and break nothing go the plain way
    (Checker._plain_chunk: no lanes, no NR ledger fed); the chunks after them, with NR blocks, a resent
    segment, a revocation, find what the every-row reference finds, at every chunk size."""
    from support.hostile import ip_frames, pcap_bytes, plain_records

    path = tmp_path / "plain-then-nr.pcap"
    path.write_bytes(pcap_bytes(plain_records(ip_frames(plain_then_nr_transfer(resent)))))
    reference = findings(path, chunk_frames=None, every_row=True)
    rules = {f["rule"] for f in reference}
    assert "TN-03" in rules and ("TN-04" in rules) == resent
    plain = []
    taken = C.Checker._plain_chunk

    def counted(self, *args):
        plain.append(taken(self, *args))
        return plain[-1]

    monkeypatch.setattr(C.Checker, "_plain_chunk", counted)
    for chunk_frames in (2, 3, 4, 5, 7, 64, None):
        plain.clear()
        assert findings(path, chunk_frames=chunk_frames) == reference, chunk_frames
        if chunk_frames is not None and chunk_frames < 8:
            assert any(plain)  # (the chunks with blocks never ask)


def test_a_plain_chunk_read_long_after_changes_no_finding(tmp_path, monkeypatch):
    """A connection whose rows of a chunk are all quiet keeps that chunk's reading unapplied (Checker._plain_chunk's
    PlainChunk: a flood's connections are released before anything reads it); one that stays quiet while another
    connection fills more than PLAN_CHUNKS chunks has it applied when its chunk leaves the window, and a segment it
    resends long after its cum ack is judged (TN-04 names the ack of its first chunk) as the every-row reference
    judges it. (Its first chunk, quiet, is parked: Pipeline._checker_parks; its second exchange brings it back, and
    that chunk is the plan.)"""
    from support.hostile import ACK, NR_PERM, PSH, SACK_PERM, SYN, ip_frames, pcap_bytes, plain_records, tcp

    isn = 1000
    quiet = [(0.0, 0, tcp(40000, 80, isn, 0, SYN, SACK_PERM + NR_PERM), 6),
             (0.001, 1, tcp(80, 40000, 7, isn + 1, SYN | ACK, SACK_PERM + NR_PERM), 6),
             (0.002, 0, tcp(40000, 80, isn + 1, 8, ACK | PSH, payload=b"x" * 100), 6),
             (0.003, 1, tcp(80, 40000, 8, isn + 101, ACK), 6),
             (0.004, 0, tcp(40000, 80, isn + 101, 8, ACK | PSH, payload=b"x" * 100), 6),
             (0.005, 1, tcp(80, 40000, 8, isn + 201, ACK), 6),
             (1.0, 0, tcp(40000, 80, isn + 1, 8, ACK | PSH, payload=b"x" * 100), 6)]
    busy = [(0.01, 0, tcp(40001, 80, isn, 0, SYN), 6), (0.011, 1, tcp(80, 40001, 7, isn + 1, SYN | ACK), 6)]
    for k in range(60):
        busy += [(0.02 + k * 0.01, 0, tcp(40001, 80, isn + 1 + k * 100, 8, ACK | PSH, payload=b"x" * 100), 6),
                 (0.025 + k * 0.01, 1, tcp(80, 40001, 8, isn + 101 + k * 100, ACK), 6)]
    path = tmp_path / "quiet-then-resent.pcap"
    path.write_bytes(pcap_bytes(plain_records(ip_frames(quiet + busy))))
    reference = findings(path, chunk_frames=None, every_row=True)
    assert [f["rule"] for f in reference] == ["TN-04"] and reference[0]["frames"] == [4, len(quiet) + len(busy)]
    ages = []
    applied = C.Checker._applied

    def aged(self, plan, run):
        ages.append(self.chunks - plan.chunk)
        return applied(self, plan, run)

    monkeypatch.setattr(C.Checker, "_applied", aged)
    for chunk_frames in (4, 5, 16, None):
        ages.clear()
        assert findings(path, chunk_frames=chunk_frames) == reference, chunk_frames
        if chunk_frames == 4:  # the quiet connection's first chunk read when it left the window
            assert max(ages) == C.PLAN_CHUNKS - 1


def test_a_parked_connection_is_judged_where_it_shows_again(tmp_path, monkeypatch):
    """`check` alone parks a new TCP connection whose chunk is quiet (Pipeline._checker_parks: no block, no far
    serial, nothing below a cum ack) instead of feeding its levels: nothing reads it unless it shows again, and
    then its parked events are replayed at the head of that chunk. The findings are the every-row reference's at
    every chunk size, whether a connection never shows again, comes back to resend below its cum ack (TN-04), with
    NR blocks its handshake did not permit (TN-01), with a serial far outside its window (the GEN-01 note), after a
    chunk of its SYN alone, or was never quiet (a SACK block in its first chunk); and under a budget of open flows
    that releases parked and fed connections alike, the same flows go, with the same note."""
    from nrsack.analyzer.state import pipeline as P
    from support.hostile import ACK, NR_PERM, PSH, SACK_PERM, SYN, ip_frames, nr_option, pcap_bytes, plain_records, \
        sack_option, tcp

    isn, peer = 1000, 7

    def opening(port, t, options=SACK_PERM + NR_PERM):
        return [(t, 0, tcp(port, 80, isn, 0, SYN, options), 6),
                (t + 0.001, 1, tcp(80, port, peer, isn + 1, SYN | ACK, options), 6)]

    def exchange(port, t, k=0, ack_options=b""):
        return [(t, 0, tcp(port, 80, isn + 1 + 100 * k, peer + 1, ACK | PSH, payload=b"x" * 100), 6),
                (t + 0.001, 1, tcp(80, port, peer + 1, isn + 101 + 100 * k, ACK, ack_options), 6)]

    def data(port, t, seq):
        return [(t, 0, tcp(port, 80, seq, peer + 1, ACK | PSH, payload=b"x" * 100), 6)]

    packets = []
    for k in range(30):  # connections before (the budget's oldest) and between, so the ones below span many chunks
        packets += opening(41000 + k, 0.01 * k) + exchange(41000 + k, 0.002 + 0.01 * k)
    first, later = 0.3, 0.5
    packets += (opening(40000, first) + exchange(40000, first + 0.002)  # never shows again
                + opening(40001, first + 0.01) + exchange(40001, first + 0.012)  # resends below its cum ack
                + data(40001, later, isn + 1)
                + opening(40002, first + 0.02, SACK_PERM) + exchange(40002, first + 0.022)  # NR blocks not permitted
                + exchange(40002, later + 0.01, 1, nr_option([(isn + 301, isn + 401)]))
                + opening(40003, first + 0.03) + exchange(40003, first + 0.032)  # a far serial
                + data(40003, later + 0.02, isn + 1 + 2 ** 31)
                + [(first + 0.04, 0, tcp(40004, 80, isn, 0, SYN, SACK_PERM + NR_PERM), 6),  # its SYN alone, then the rest
                   (later + 0.03, 1, tcp(80, 40004, peer, isn + 1, SYN | ACK, SACK_PERM + NR_PERM), 6)]
                + exchange(40004, later + 0.032) + data(40004, later + 0.04, isn + 1)
                + opening(40005, first + 0.05) + exchange(40005, first + 0.052, ack_options=sack_option([(isn + 201, isn + 301)]))
                + data(40005, later + 0.05, isn + 1))
    path = tmp_path / "parked.pcap"
    path.write_bytes(pcap_bytes(plain_records(ip_frames(packets))))
    reference = findings(path, chunk_frames=None, every_row=True)
    assert sorted(f["rule"] for f in reference) == ["GEN-01", "TN-01", "TN-04", "TN-04", "TN-04"]
    parked = []
    park = P.ParkedFlows.park

    def counted(self, ev, blocks, side, flow_of, *args):
        parked.extend(np.unique(flow_of).tolist())
        return park(self, ev, blocks, side, flow_of, *args)

    monkeypatch.setattr(P.ParkedFlows, "park", counted)
    for chunk_frames in (2, 3, 4, 5, 7, 16, None):
        parked.clear()
        assert findings(path, chunk_frames=chunk_frames) == reference, chunk_frames
        if chunk_frames is not None and chunk_frames <= 5:
            assert len(parked) >= 30
    for chunk_frames in (4, 7):
        for budget in (3, 10):
            budgeted = findings(path, chunk_frames=chunk_frames, max_open_flows=budget)
            assert budgeted == findings(path, chunk_frames=chunk_frames, max_open_flows=budget, every_row=True)
            assert "--max-open-flows" in budgeted[0]["message"]
            if budget == 10:  # the connections before went first: those above came back and were judged
                assert {f["rule"] for f in budgeted} == {"GEN-01", "TN-01", "TN-04"}
