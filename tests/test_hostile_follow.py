"""`nrsack analyze - --follow`: a live table while the capture is read, the final one at its end."""

import subprocess
import threading
import time
import pytest

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
