"""What the hostile classes must come to, class by class : a repaired length or a held
clock gives the clean capture's figures plus a finding that says so; pcapng with interfaces of
different link types and with several sections reads like the same packets in one pcap; standard
input, a FIFO and a live `tcpdump -w -` stream into `nrsack analyze -`."""

import json
import os
import subprocess
import threading

import pytest
from click.testing import CliRunner

from nrsack.analyzer import check
from nrsack.cli import main
from support.hostile import build_all, check_bounds
from support.live import tcpdump_into

CAPTURES = {name: data for name, data, _ in build_all()}


def summary(tmp_path, name, data=None):
    path = tmp_path / f"{name}.pcap"
    path.write_bytes(CAPTURES[name] if data is None else data)
    result = CliRunner().invoke(main, ["analyze", "--format", "json", str(path)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    return json.loads(text[text.index("{"):]), path


FIGURES = ("data_bytes", "q_ns", "p_ns", "b_ns", "acked_bytes", "max_rtxq_sack_bytes", "max_rtxq_nr_bytes", "complete")


def figures(s):
    return [{k: flow[k] for k in FIGURES} for flow in s["flows"]]


@pytest.mark.parametrize("kind", ["tcp", "sctp", "mptcp"])
@pytest.mark.parametrize("variant", ["iplen-zero", "iplen-zero-orig-short", "iplen-65535"])
def test_a_length_the_frame_contradicts_is_taken_from_the_frame_and_noted_once_per_conn(tmp_path, kind, variant):
    clean, _ = summary(tmp_path, f"{kind}-clean")
    hostile, path = summary(tmp_path, f"{kind}-{variant}")
    assert figures(hostile) == figures(clean)
    notes = [f for f in hostile["findings"] if f["rule"] == "GEN-01" and f["severity"] == "note"]
    assert len(notes) == 1 and "payload taken from the frame" in notes[0]["message"], hostile["findings"]
    assert notes[0]["frames"] == [1]
    checked = check(path)
    assert list(checked[checked["rule"] == "GEN-01"]["severity"]) == ["note"]


@pytest.mark.parametrize("kind", ["tcp", "sctp"])
def test_original_length_below_the_captured_one_changes_nothing(tmp_path, kind):
    clean, _ = summary(tmp_path, f"{kind}-clean")
    hostile, _ = summary(tmp_path, f"{kind}-orig-below-caplen")
    assert figures(hostile) == figures(clean)


@pytest.mark.parametrize("kind", ["tcp", "sctp"])
def test_pcap_seconds_past_2038_are_unsigned(tmp_path, kind):
    clean, _ = summary(tmp_path, f"{kind}-clean")
    late, path = summary(tmp_path, f"{kind}-after-2038")
    assert figures(late) == figures(clean)
    result = CliRunner().invoke(main, ["analyze", "--format", "csv", "--out", str(tmp_path / "t"), str(path)])
    assert result.exit_code == 0
    first = (tmp_path / "t" / "rtxq.csv").read_text().splitlines()[1].split(",")
    assert float(first[1]) > 2 ** 31  # time_s


@pytest.mark.parametrize("kind", ["tcp", "sctp"])
@pytest.mark.parametrize("step", ["back-1h", "back-years", "forward-years"])
def test_a_clock_step_counts_as_no_time_and_is_gen02(tmp_path, kind, step):
    clean, _ = summary(tmp_path, f"{kind}-clean")
    stepped, path = summary(tmp_path, f"{kind}-clock-{step}")
    for before, after in zip(clean["flows"], stepped["flows"]):
        assert 0 < after["q_ns"] <= before["q_ns"] and after["data_bytes"] == before["data_bytes"]
    gen02 = [f for f in stepped["findings"] if f["rule"] == "GEN-02"]
    assert len(gen02) == 1 and gen02[0]["severity"] == "warning" and "stepped" in gen02[0]["message"]
    checked = check(path)
    assert list(checked[checked["rule"] == "GEN-02"]["severity"]) == ["warning"]


def test_a_frame_a_little_older_is_held_and_counted_in_one_note(tmp_path):
    stepped, _ = summary(tmp_path, "tcp-clock-back-10ms")
    gen02 = [f for f in stepped["findings"] if f["rule"] == "GEN-02"]
    assert [f["severity"] for f in gen02] == ["note"] and "held at its time" in gen02[0]["message"]
    for flow in stepped["flows"]:
        check_bounds(flow, 1 << 32)


def test_pcapng_whole_second_resolution_with_huge_timestamps_does_not_overflow(tmp_path):
    s, _ = summary(tmp_path, "tcp-pcapng-seconds-large")
    assert [f["rule"] for f in s["findings"]] == ["GEN-02"] and "2262" in s["findings"][0]["message"]
    assert all(f["q_ns"] == 0 for f in s["flows"])  # every frame held at the clock's end: no time passes


@pytest.mark.parametrize("kind", ["tcp", "sctp"])
def test_one_ack_2pow31_away_is_ignored_not_adopted(tmp_path, kind):
    clean, _ = summary(tmp_path, f"{kind}-clean")
    far, path = summary(tmp_path, f"{kind}-ack-2pow31-away")
    assert figures(far) == figures(clean) and all(f["complete"] for f in far["flows"])
    notes = [f for f in far["findings"] if "far outside" in f["message"]]
    assert len(notes) == 1 and notes[0]["severity"] == "note"
    assert any("far outside" in m for m in check(path)["message"])


def test_mptcp_dss_whose_length_disagrees_with_its_flags_is_gen01(tmp_path):
    s, _ = summary(tmp_path, "mptcp-dss-random-0")
    assert any("does not fit its flags" in f["message"] for f in s["findings"])


@pytest.mark.parametrize("kind", ["tcp", "sctp", "mptcp"])
@pytest.mark.parametrize("resolution", ["2pow127", "10pow30"])
def test_pcapng_resolution_beyond_64_bits_is_read_as_tshark_reads_it(tmp_path, kind, resolution):
    # if_tsresol 0xFF (2^127 units a second) or 30: a 64-bit count of them is under a picosecond, so
    # every frame comes at the interface's offset, time 0 (tshark shows 0.000000000 for all of them)
    clean, _ = summary(tmp_path, f"{kind}-clean")
    s, path = summary(tmp_path, f"{kind}-pcapng-tsresol-{resolution}")
    assert s["frames"] == clean["frames"] and s["findings"] == []
    assert [f["data_bytes"] for f in s["flows"]] == [f["data_bytes"] for f in clean["flows"]]
    assert [f["acked_bytes"] for f in s["flows"]] == [f["acked_bytes"] for f in clean["flows"]]
    assert all(f["q_ns"] == 0 for f in s["flows"])


def test_pcapng_without_an_interface_it_reads_says_why(tmp_path):
    path = tmp_path / "link147.pcapng"
    path.write_bytes(CAPTURES["pcapng-unknown-linktype"])
    result = CliRunner().invoke(main, ["analyze", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"nrsack: error: {path}: no SCTP or TCP flows in 30 frames "
        "(frame 1: pcapng interface 0: link type 147 not analysed, its frames are skipped)"]


def test_pcapng_with_two_link_types_and_two_sections_reads_as_one_pcap(tmp_path):
    clean, _ = summary(tmp_path, "tcp-clean")
    for name in ("tcp-pcapng-two-linktypes", "tcp-pcapng-two-sections", "tcp-pcapng-us"):
        s, _ = summary(tmp_path, name)
        assert figures(s) == figures(clean), name
        assert s["frames"] == clean["frames"] and s["findings"] == [], name


@pytest.mark.parametrize("name", ["tcp-clean", "sctp-pcapng-us", "tcp-pcapng-two-sections"])
def test_standard_input_and_a_fifo_stream(tmp_path, name):
    expected, path = summary(tmp_path, name)
    piped = subprocess.run(["nrsack", "analyze", "--format", "json", "-"], input=CAPTURES[name], capture_output=True)
    assert piped.returncode == 0, piped.stderr
    assert figures(json.loads(piped.stdout)) == figures(expected)
    fifo = tmp_path / "live.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(CAPTURES[name]))
    writer.start()
    fed = subprocess.run(["nrsack", "analyze", "--format", "json", str(fifo)], capture_output=True, timeout=60)
    writer.join()
    assert fed.returncode == 0, fed.stderr
    assert figures(json.loads(fed.stdout)) == figures(expected)


def test_a_pipe_cut_short_is_analysed_with_a_warning(tmp_path):
    data = CAPTURES["tcp-cut-last-data"]
    piped = subprocess.run(["nrsack", "analyze", "--format", "json", "-"], input=data, capture_output=True, text=False)
    assert piped.returncode == 0 and b"cut short" in piped.stderr and b"Traceback" not in piped.stderr


@pytest.mark.root
def test_live_tcpdump_into_analyze_from_standard_input():
    """tcpdump -i lo -w - | nrsack analyze -: a real TCP transfer over loopback while it runs."""
    analyze, received, _ = tcpdump_into(["nrsack", "analyze", "--format", "json", "-"],
                                        lambda client: client.sendall(b"n" * 2_000_000))
    out, err = analyze.communicate(timeout=60)
    assert analyze.returncode == 0, err
    flows = json.loads(out)["flows"]
    sent = [f for f in flows if f["data_bytes"] >= 2_000_000]
    assert received == 2_000_000 and len(sent) == 1 and sent[0]["complete"], flows
