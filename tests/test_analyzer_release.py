"""A flow's state is released when it ends (SCTP SHUTDOWN-COMPLETE / ABORT, TCP FINs acked or RST,
MPTCP all subflows closed) or idles past pipeline.IDLE_NS: its events after that are not analysed
and said so in one GEN-01 note, whatever the chunk size; the summary alone is finished flow by flow
and spilled, so what the pipeline holds stays bounded by the flows open at once."""

import io

import numpy as np
import pytest

from nrsack.analyzer import analyze
from nrsack.analyzer.read import events as E
from nrsack.analyzer.state import pipeline as P
from nrsack.analyzer.state.stores import DiskStore
from nrsack.analyzer.views import stream
from nrsack.analyzer.views import formats
from support import pcaps
from support.paths import SAMPLES
from support.samples import PCAPS

A, B = "10.0.0.1", "10.0.0.2"
ISN, IRS = 1000, 5000


def tcp_connection(t0, port, close="fin", segments=2, after=()):
    """A:port -> B:80: handshake, `segments` x 1000 bytes each acked, then FINs both ways and the last
    ACK ("fin"), a RST ("rst") or nothing; `after`: (seconds after the close, seq offset) data segments."""
    def seg(dt, forward, seq, ack, flags, payload=0):
        ends = (A, B, port, 80) if forward else (B, A, 80, port)
        return pcaps.tcp_packet(t0 + dt, *ends, seq, ack, flags, payload=payload)

    frames = [seg(0, True, ISN, 0, "S"), seg(.001, False, IRS, ISN + 1, "SA"), seg(.002, True, ISN + 1, IRS + 1, "A")]
    for k in range(segments):
        frames += [seg(.003 + .002 * k, True, ISN + 1 + 1000 * k, IRS + 1, "PA", 1000),
                   seg(.004 + .002 * k, False, IRS + 1, ISN + 1 + 1000 * (k + 1), "A")]
    end, t = ISN + 1 + 1000 * segments, .003 + .002 * segments
    if close == "fin":
        frames += [seg(t, True, end, IRS + 1, "FA"), seg(t + .001, False, IRS + 1, end + 1, "FA"),
                   seg(t + .002, True, end + 1, IRS + 2, "A")]
    elif close == "rst":
        frames.append(seg(t, True, end, IRS + 1, "R"))
    frames += [seg(t + .01 + dt, True, ISN + 1 + offset, IRS + 1, "PA", 1000) for dt, offset in after]
    return frames


def by_time(*groups):
    return sorted((f for g in groups for f in g), key=lambda f: float(f.time))


def late_notes(analysis):
    return [f for f in formats.summary_dict(analysis)["findings"] if "after their flow ended" in f["message"]]


def same_in_every_chunking(path):
    whole = analyze(path)
    for frames in (1, 4):
        assert formats.summary_dict(analyze(path, chunk_frames=frames)) == formats.summary_dict(whole)
    streamed = stream.analyze_to_files(path, chunk_frames=3)
    assert formats.summary_dict(streamed) == formats.summary_dict(whole)
    return whole


@pytest.mark.slow  # seconds: not in the inner loop (make test-fast)
def test_many_connections_hold_only_the_open_ones(tmp_path):
    # 60 connections, two open at a time
    frames = by_time(*(tcp_connection(0.05 * k, 20000 + k) for k in range(60)))
    path = pcaps.write(tmp_path / "many.pcap", frames)
    pipeline = P.Pipeline(DiskStore(tmp_path), finish_ended=True)
    most_open = 0
    for cap in E.read_chunks(path, 16):
        pipeline.feed(cap)
        most_open = max(most_open, len(pipeline.senders))
    assert most_open <= 4 and len(pipeline.spill.spilled()) == 60
    assert sum(f is None for f in pipeline.table.flows) == 60  # every flow object let go
    entries = list(pipeline.entries(None))
    whole = same_in_every_chunking(path)
    assert [e.summary for e in entries] == [e.summary for e in whole.entries]
    assert all(e.summary["complete"] and e.summary["data_bytes"] == 2000 for e in entries)
    assert late_notes(whole) == []


@pytest.mark.parametrize("close", ["fin", "rst"])
def test_events_after_the_end_are_not_analysed_and_noted(tmp_path, close):
    clean = pcaps.write(tmp_path / "clean.pcap", tcp_connection(0, 20000, close))
    # a data segment with new bytes after the end: analysed, it would change data_bytes and q
    late = pcaps.write(tmp_path / "late.pcap", tcp_connection(0, 20000, close, after=[(0, 2000)]))
    before, after = same_in_every_chunking(clean), same_in_every_chunking(late)
    assert formats.summary_dict(after)["flows"] == formats.summary_dict(before)["flows"]
    notes = late_notes(after)
    assert len(notes) == 1 and notes[0]["severity"] == "note" and notes[0]["frames"] == [before.capture.frames + 1]
    assert notes[0]["message"].startswith("GEN-01 1 events came after their flow ended")


def test_a_connection_idle_past_the_bound_is_released(tmp_path):
    idle_s = P.IDLE_NS / 1e9
    # the first connection's last data comes idle_s + 1 s after the rest; another one keeps the clock going
    first = tcp_connection(0, 20000, close=None, after=[(idle_s + 1, 2000)])
    other = tcp_connection(idle_s / 2, 20001, close=None, segments=1)
    analysis = same_in_every_chunking(pcaps.write(tmp_path / "idle.pcap", by_time(first, other)))
    assert [e.summary["data_bytes"] for e in analysis.entries] == [2000, 1000]
    assert len(late_notes(analysis)) == 1
    # just inside the bound: analysed
    inside = tcp_connection(0, 20000, close=None, after=[(idle_s - 1, 2000)])
    analysis = same_in_every_chunking(pcaps.write(tmp_path / "inside.pcap", inside))
    assert analysis.entries[0].summary["data_bytes"] == 3000 and late_notes(analysis) == []


def sctp_association(chunk_type):
    tag_a, tag_b = 0x1111, 0x2222
    packets = [(A, B, 0, [pcaps.init_chunk(tag_a, 100)]), (B, A, tag_a, [pcaps.init_chunk(tag_b, 900, ack=True)]),
               (A, B, tag_b, [pcaps.chunk(0x0A, b"c" * 8)]), (B, A, tag_a, [pcaps.cookie_ack_chunk()]),
               (A, B, tag_b, [pcaps.data_chunk(100), pcaps.data_chunk(101)]), (B, A, tag_a, [pcaps.sack_chunk(101)])]
    if chunk_type == 14:  # SHUTDOWN, SHUTDOWN-ACK, SHUTDOWN-COMPLETE
        packets += [(A, B, tag_b, [pcaps.chunk(7, (101).to_bytes(4, "big"))]), (B, A, tag_a, [pcaps.chunk(8, b"")]),
                    (A, B, tag_b, [pcaps.chunk(14, b"")])]
    else:  # ABORT
        packets.append((A, B, tag_b, [pcaps.chunk(6, b"")]))
    packets.append((A, B, tag_b, [pcaps.data_chunk(102)]))  # after the end
    return [pcaps.sctp_packet(0.001 * i, src, dst, tag, chunks, sport=5000 if src == A else 5001,
                              dport=5001 if src == A else 5000) for i, (src, dst, tag, chunks) in enumerate(packets)]


@pytest.mark.parametrize("chunk_type", [14, 6], ids=["shutdown-complete", "abort"])
def test_sctp_association_ends_at_shutdown_complete_or_abort(tmp_path, chunk_type):
    analysis = same_in_every_chunking(pcaps.write(tmp_path / "sctp.pcap", sctp_association(chunk_type)))
    assert analysis.entries[0].summary["data_bytes"] == 2000
    assert [n["frames"] for n in late_notes(analysis)] == [[analysis.capture.frames]]


@pytest.mark.parametrize("pcap", PCAPS, ids=lambda p: p.name)
def test_streamed_json_is_the_json_document(pcap):
    try:
        analysis = analyze(pcap)
    except E.CaptureError:
        return
    out = io.StringIO()
    formats.write_json(analysis, out)
    assert out.getvalue() == formats.dump_json(formats.summary_dict(analysis)) + "\n"


def test_streamed_json_writes_nan_and_numpy_values_as_the_document_does():
    analysis = analyze(SAMPLES / "sctp-nrsack-fig4.pcap")
    summary = analysis.entries[0].summary
    summary.update(p_over_q=float("nan"), data_bytes=np.int64(7), b_over_q=np.float64(0.25), complete=np.bool_(True))
    summary["note"] = "NaN"  # a string, not a float: stays a string
    out = io.StringIO()
    formats.write_json(analysis, out)
    assert out.getvalue() == formats.dump_json(formats.summary_dict(analysis)) + "\n"
    assert '"p_over_q": null' in out.getvalue() and '"note": "NaN"' in out.getvalue()


def mptcp_connection(late):
    """One MPTCP subflow A:30000 -> B:80: MP_CAPABLE handshake, 2 x 1000 bytes mapped by DSS and
    data-acked, FINs both ways and the last ACK; `late`: a mapped segment with new data after that."""
    key_a, key_b = 0x0102030405060708, 0x1112131415161718

    def seg(t, forward, seq, ack, flags, options=(), payload=0):
        ends = (A, B, 30000, 80) if forward else (B, A, 80, 30000)
        return pcaps.tcp_packet(t, *ends, seq, ack, flags, options=options, payload=payload)

    frames = [seg(0, True, ISN, 0, "S", [pcaps.mptcp_capable_option()]),
              seg(.001, False, IRS, ISN + 1, "SA", [pcaps.mptcp_capable_option(keys=(key_b,))]),
              seg(.002, True, ISN + 1, IRS + 1, "A", [pcaps.mptcp_capable_option(keys=(key_a, key_b))])]
    sent = [(k, 7000 + 1000 * k) for k in range(3 if late else 2)]
    for k, dsn in sent[:2]:
        frames += [seg(.003 + .002 * k, True, ISN + 1 + 1000 * k, IRS + 1, "PA",
                       [pcaps.dss_option(dsn=dsn, ssn=1 + 1000 * k, dll=1000)], 1000),
                   seg(.004 + .002 * k, False, IRS + 1, ISN + 1 + 1000 * (k + 1), "A",
                       [pcaps.dss_option(data_ack=dsn + 1000)])]
    end = ISN + 2001
    frames += [seg(.008, True, end, IRS + 1, "FA"), seg(.009, False, IRS + 1, end + 1, "FA"),
               seg(.010, True, end + 1, IRS + 2, "A")]
    if late:
        frames.append(seg(.02, True, end + 1, IRS + 2, "PA", [pcaps.dss_option(dsn=9000, ssn=2002, dll=1000)], 1000))
    return frames


def test_mptcp_connection_ends_when_its_subflows_have(tmp_path):
    before = same_in_every_chunking(pcaps.write(tmp_path / "mptcp.pcap", mptcp_connection(False)))
    after = same_in_every_chunking(pcaps.write(tmp_path / "late.pcap", mptcp_connection(True)))
    assert before.entries[0].summary["protocol"] == "mptcp" and before.entries[0].summary["data_bytes"] == 2000
    assert formats.summary_dict(after)["flows"] == formats.summary_dict(before)["flows"]
    assert [n["frames"] for n in late_notes(after)] == [[after.capture.frames]]
