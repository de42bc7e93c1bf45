"""`nrsack analyze - --follow` and `nrsack analyze FILE --follow`: a live table while the capture is read
(a file as it grows, like tail -f), redrawn every second, the final one at its end."""

import io
import signal
import struct
import subprocess
import threading
import time
import pytest

from support.hostile import ip_frames, pcap_bytes, plain_records, tcp_transfer
from support.live import tcpdump_into
from support.paths import SAMPLES

SAMPLE = SAMPLES / "sctp-nrsack-fig4.pcap"


def rows(text, entry="0a"):
    return [line for line in text.splitlines() if line.startswith(f"│ {entry} ")]


def test_the_final_table_of_follow_is_the_summary_table():
    followed = subprocess.run(["nrsack", "analyze", "-", "--follow"], input=SAMPLE.read_bytes(), capture_output=True)
    plain = subprocess.run(["nrsack", "analyze", str(SAMPLE)], capture_output=True, text=True)
    assert followed.returncode == 0 and plain.returncode == 0
    text = followed.stdout.decode()
    assert text.rstrip().endswith("final") and rows(text)[-1] == rows(plain.stdout)[0]


@pytest.mark.root
def test_a_live_tcpdump_transfer_shows_the_table_while_it_runs():
    """tcpdump -i lo -w - | nrsack analyze - --follow, with a sender pacing 3 s of data over loopback."""
    seen = []  # (time, line) of every line the live table printed

    def read_live(process):
        reading = threading.Thread(target=lambda: seen.extend((time.monotonic(), line.rstrip("\n"))
                                                               for line in process.stdout))
        reading.start()
        readers.append(reading)

    def send(client):
        for _ in range(30):  # 3 s of traffic, 64 KB every 0.1 s
            client.sendall(b"f" * 65536)
            time.sleep(0.1)

    readers = []
    process, received, sent_at = tcpdump_into(["nrsack", "analyze", "-", "--follow"], send, text=True,
                                              started=read_live)
    assert process.wait(timeout=60) == 0, process.stderr.read()
    readers[0].join(timeout=10)
    assert received == 30 * 65536
    live = [t for t, line in seen if "frames so far" in line and t < sent_at]
    assert live, "no live table while the transfer ran"
    text = "\n".join(line for _, line in seen)
    assert text.rstrip().endswith("final") and "tcp 127.0.0.1:" in text


def paced_records(interval_s):
    """(header, [record bytes]) of a small clean TCP transfer (14 frames), for writing `interval_s` apart."""
    data = pcap_bytes(plain_records(ip_frames(tcp_transfer(segments=4, loss=()))))
    records, offset = [], 24
    while offset < len(data):
        caplen = struct.unpack_from("<I", data, offset + 8)[0]
        records.append(data[offset:offset + 16 + caplen])
        offset += 16 + caplen
    return data[:24], records


def timed_lines(process, seen):
    reading = threading.Thread(target=lambda: seen.extend((time.monotonic(), line.rstrip("\n"))
                                                          for line in process.stdout))
    reading.start()
    return reading


def live_counts(seen, before=float("inf")):
    return [int(line.split("following, ")[1].split()[0]) for t, line in list(seen) if "frames so far" in line and t < before]


def test_a_growing_file_is_followed_until_its_writer_stops(tmp_path):
    """Like tail -f: frames written while `--follow` runs are shown while the writer still writes (a
    redraw a second, not every 64 frames), and the table is final once the file stops growing."""
    path = tmp_path / "growing.pcap"
    header, records = paced_records(0.2)
    path.write_bytes(header + b"".join(records[:3]))
    seen = []
    process = subprocess.Popen(["nrsack", "analyze", str(path), "--follow", "--idle-timeout", "1.5"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reading = timed_lines(process, seen)
    deadline = time.monotonic() + 60
    while not live_counts(seen) and time.monotonic() < deadline:  # started and showing the first frames
        time.sleep(0.05)
    with path.open("ab") as out:
        for record in records[3:]:
            out.write(record)
            out.flush()
            time.sleep(0.2)
    written = time.monotonic()
    assert process.wait(timeout=60) == 0, process.stderr.read()
    reading.join(timeout=10)
    assert [n for n in live_counts(seen, written) if n > 3], live_counts(seen)  # frames appended, shown live
    text = "\n".join(line for _, line in seen)
    plain = subprocess.run(["nrsack", "analyze", str(path)], capture_output=True, text=True)
    assert text.rstrip().endswith("final") and rows(text)[-1] == rows(plain.stdout)[0]


def test_a_slow_pipe_redraws_within_a_second_of_its_frames():
    """4 frames a second through standard input: the live table shows them as they come, not after
    64 frames (the whole input here is 14)."""
    header, records = paced_records(0.25)
    seen = []
    process = subprocess.Popen(["nrsack", "analyze", "-", "--follow"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=False)
    process.stdout = io.TextIOWrapper(process.stdout)
    reading = timed_lines(process, seen)
    process.stdin.write(header + b"".join(records[:2]))
    process.stdin.flush()
    # wait out the start-up (seconds on a loaded machine): the first redraw must come while the
    # rest is still to be written; one that waited for 64 frames (or the end) never comes here
    deadline = time.monotonic() + 60
    while not live_counts(seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    for record in records[2:]:
        process.stdin.write(record)
        process.stdin.flush()
        time.sleep(0.25)
    ended = time.monotonic()
    process.stdin.close()
    assert process.wait(timeout=60) == 0, process.stderr.read()
    reading.join(timeout=10)
    counts = live_counts(seen, ended)
    assert counts and counts[0] < len(records), counts  # shown before the input ended, frames still to come
    assert "\n".join(line for _, line in seen).rstrip().endswith("final")


def test_ctrl_c_ends_following_with_the_final_table_of_what_was_read(tmp_path):
    path = tmp_path / "growing.pcap"
    header, records = paced_records(0.2)
    path.write_bytes(header + b"".join(records[:6]))  # more is never written: only Ctrl-C ends this
    process = subprocess.Popen(["nrsack", "analyze", str(path), "--follow", "--idle-timeout", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0 and "Traceback" not in err, err
    assert out.rstrip().endswith("final") and rows(out)
