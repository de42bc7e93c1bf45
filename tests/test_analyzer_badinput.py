"""Unusable input ends with one clear line and exit code 2; malformed packets inside a usable capture
become GEN-01 findings with their frame number while the analysis goes on."""

import struct

import pytest
from click.testing import CliRunner
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.layers.sctp import SCTP, SCTPChunkData

from nrsack.analyzer import CaptureError, analyze
from nrsack.cli import main
from support.frames import LINKS, ip_packets, write_pcap

ETH = LINKS["ethernet"][1]


def run_cli(*args):
    result = CliRunner().invoke(main, list(map(str, args)))
    return result.exit_code, result.output, result.stderr if hasattr(result, "stderr") else ""


def good_frames():
    return [ETH(p) for p in ip_packets()]


def assert_unusable(path, words):
    with pytest.raises(CaptureError) as info:
        analyze(path)
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words), message
    code, output, _ = run_cli("analyze", path)
    assert code == 2
    assert "Traceback" not in output and output.strip().count("\n") == 0
    assert output.startswith("nrsack: error:") and all(w in output for w in words), output


def test_not_a_capture(tmp_path):
    path = tmp_path / "notes.pcap"
    path.write_text("this is a text file, not a capture\n" * 10)
    assert_unusable(path, ["not a readable capture"])


def test_missing_file(tmp_path):
    assert_unusable(tmp_path / "absent.pcap", ["no such file"])


def test_capture_cut_in_its_last_record_is_analysed_up_to_it(tmp_path):
    frames = good_frames()
    whole = analyze(write_pcap(tmp_path / "whole.pcap", frames[:-1], 1))
    path = write_pcap(tmp_path / "cut.pcap", frames, 1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 37])  # the last record loses its tail (tcpdump still writing)
    cut = analyze(path)
    assert cut.capture.frames == len(frames) - 1 and "truncated" in cut.capture.truncated
    assert cut.summary.drop(columns="id").equals(whole.summary.drop(columns="id"))
    result = CliRunner().invoke(main, ["analyze", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("nrsack: warning:") and "cut short" in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr


def test_capture_cut_in_its_first_record(tmp_path):
    path = write_pcap(tmp_path / "cut.pcap", good_frames()[:1], 1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])  # nothing whole to analyse
    assert_unusable(path, ["truncated"])


def test_truncated_file_header(tmp_path):
    path = write_pcap(tmp_path / "head.pcap", good_frames(), 1)
    path.write_bytes(path.read_bytes()[:13])
    assert_unusable(path, ["not a readable capture"])


def test_unknown_link_type(tmp_path):
    path = write_pcap(tmp_path / "user0.pcap", good_frames(), 147)  # DLT_USER0
    assert_unusable(path, ["unsupported link type 147"])


def test_no_transport_flows(tmp_path):
    frames = [bytes(Ether() / IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=53, dport=53) / b"dns?")] * 3
    assert_unusable(write_pcap(tmp_path / "udp.pcap", frames, 1), ["no SCTP or TCP flows"])


def test_empty_capture(tmp_path):
    assert_unusable(write_pcap(tmp_path / "empty.pcap", [], 1), ["no SCTP or TCP flows in 0 frames"])



def test_every_analysis_says_the_same_of_a_capture_without_flows(tmp_path):
    """The in-memory API, the streamed summary, the live table and the checker drive one Run (state/run.py):
    one error, naming the capture by its path (the live table reads a growing file through a pipe)."""
    from nrsack.analyzer.read import events as E
    from nrsack.analyzer.rules import checker as C
    from nrsack.analyzer.views import follow, stream

    frames = [bytes(Ether() / IP(src="192.0.2.1", dst="192.0.2.2") / UDP(sport=53, dport=53) / b"dns?")] * 3
    path = str(write_pcap(tmp_path / "udp.pcap", frames, 1))
    drawn = []
    runs = [lambda: analyze(path), lambda: analyze(path, chunk_frames=1), lambda: stream.analyze_to_files(path),
            lambda: stream.analyze_to_files(path, tmp_path / "out"), lambda: C.check_path(path),
            lambda: C.check_capture(E.read_capture(path)),
            lambda: follow.follow(path, None, lambda *drawing: drawn.append(drawing), idle_s=0.2)]
    for run in runs:
        with pytest.raises(CaptureError) as error:
            run()
        assert str(error.value) == f"{path}: no SCTP or TCP flows in 3 frames"
    assert drawn == []

def test_bad_sndbuf_is_a_usage_error(tmp_path):
    path = write_pcap(tmp_path / "ok.pcap", good_frames(), 1)
    code, output, _ = run_cli("analyze", path, "--sndbuf", "-5")
    assert code == 2 and "Traceback" not in output


def _with_frame(tmp_path, name, bad_frame, position=6):
    frames = good_frames()
    frames.insert(position, bad_frame)
    return write_pcap(tmp_path / name, frames, 1), position + 1


def test_malformed_sctp_chunk_is_gen01_and_analysis_continues(tmp_path):
    clean = analyze(write_pcap(tmp_path / "clean.pcap", good_frames(), 1))
    sctp = bytes(SCTP(sport=5000, dport=5001, tag=0x2222) / SCTPChunkData(tsn=77, data=b"z" * 40))
    broken = sctp[:14] + struct.pack(">H", 400) + sctp[16:]  # chunk length runs past the packet
    path, frame = _with_frame(tmp_path, "chunk.pcap", ETH(bytes(IP(src="192.0.2.1", dst="198.51.100.1", proto=132) / broken)))
    analysis = analyze(path)
    assert [(f, "SCTP chunk type 0" in reason) for f, reason in analysis.capture.findings] == [(frame, True)]
    findings = analysis.findings
    assert list(findings["rule"]) == ["GEN-01"] and list(findings["frame"]) == [frame]
    # the malformed chunk adds nothing; every figure of the clean capture stays
    assert list(analysis.summary["data_bytes"]) == list(clean.summary["data_bytes"])
    assert list(analysis.summary["max_rtxq_nr_bytes"]) == list(clean.summary["max_rtxq_nr_bytes"])
    code, output, _ = run_cli("analyze", path, "--format", "json")
    assert code == 0 and f'"frames": [\n        {frame}\n      ]' in output and '"rule": "GEN-01"' in output


@pytest.mark.parametrize("options,reason", [
    (b"\x05\x0b" + b"\0" * 9 + b"\x01", "TCP SACK option length 11"),    # SACK length not 2 + 8n
    (b"\x1e\x28" + b"\0" * 10, "overruns the header"),                  # MPTCP option longer than the header
])
def test_malformed_tcp_options_are_gen01(tmp_path, options, reason):
    tcp = bytearray(bytes(TCP(sport=40000, dport=80, flags="A", seq=1, ack=1)))
    tcp[12] = ((20 + len(options)) // 4) << 4
    segment = bytes(tcp) + options
    ip = IP(src="192.0.2.1", dst="198.51.100.1", proto=6) / segment
    path, frame = _with_frame(tmp_path, "opt.pcap", ETH(bytes(ip)), position=12)
    analysis = analyze(path)
    assert [f for f, _ in analysis.capture.findings] == [frame]
    assert reason in analysis.capture.findings[0][1]


def test_truncated_ip_header_is_gen01(tmp_path):
    ip = bytes(IP(src="192.0.2.1", dst="198.51.100.1") / TCP())[:12]
    path, frame = _with_frame(tmp_path, "ip.pcap", ETH(ip))
    analysis = analyze(path)
    assert analysis.capture.findings == [(frame, "IPv4 header truncated")]
