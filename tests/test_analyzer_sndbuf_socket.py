"""`nrsack analyze --sndbuf-socket BYTES --stack linux`: B from the socket's SO_SNDBUF by Linux's accounting
(docs/metrics.md, "B from the socket's SO_SNDBUF"); checked against the lab's truth in test_lab_linux_tcp.py."""

import json

import pytest
from click.testing import CliRunner

from nrsack.analyzer.socket_buffer import LINUX_SKB_OVERHEAD, payload_bytes
from nrsack.cli import main
from support import pcaps, tcp_scenario


def test_linux_holds_whole_segments_of_twice_the_socket_option():
    # 2 * 16384 bytes of truesize: 14 segments of 1448 + overhead leave room, so the writer adds a 15th
    assert payload_bytes(16384, "linux", 1448) == 15 * 1448
    assert payload_bytes(16384, "linux", 1448) < 2 * 16384 < 15 * (1448 + LINUX_SKB_OVERHEAD)
    # a smaller segment costs the same overhead: less payload per byte of SO_SNDBUF
    assert payload_bytes(65536, "linux", 536) < payload_bytes(65536, "linux", 1448)


def test_unknown_stack_is_refused():
    with pytest.raises(ValueError, match="unknown stack"):
        payload_bytes(16384, "freebsd")


def summary(args, path):
    result = CliRunner().invoke(main, ["analyze", str(path), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    [flow] = [f for f in json.loads(result.output)["flows"] if f["data_bytes"]]
    return flow


def test_the_socket_option_gives_the_same_figures_as_its_payload(tmp_path):
    path = pcaps.write(tmp_path / "held.pcap", tcp_scenario.window_transfer(0, 1.0, window=8))
    socket = summary(["--sndbuf-socket", "4000", "--stack", "linux", "--mss", "1000"], path)
    payload = summary(["--sndbuf", str(payload_bytes(4000, "linux", 1000))], path)
    assert socket == payload and socket["sndbuf_source"] == "given" and socket["sndbuf_bytes"] == 5000


@pytest.mark.parametrize("args, message", [
    (["--sndbuf-socket", "16384"], "--sndbuf-socket needs --stack"),
    (["--stack", "linux"], "--stack and --mss go with --sndbuf-socket"),
    (["--sndbuf", "8000", "--sndbuf-socket", "16384", "--stack", "linux"], "not both"),
])
def test_incomplete_or_conflicting_options_are_one_clear_line(tmp_path, args, message):
    path = pcaps.write(tmp_path / "held.pcap", tcp_scenario.window_transfer(0, 1.0, window=8))
    result = CliRunner().invoke(main, ["analyze", str(path), *args])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
