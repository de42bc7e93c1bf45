"""`nrsack dashboard`: serves the samples on 127.0.0.1 and says where."""

import re
import subprocess
import sys
import urllib.request

import pytest
from click.testing import CliRunner

from nrsack.cli import main


@pytest.mark.slow  # starts the dashboard's server: seconds, not in the inner loop
def test_serves_the_samples_on_localhost_and_prints_the_url():
    process = subprocess.Popen([sys.executable, "-c", "from nrsack.cli import main; main()", "dashboard", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        match = re.search(r"open (http://127\.0\.0\.1:(\d+)/)", line)
        assert match, line + process.stderr.read() if process.poll() is not None else line
        assert re.match(r"nrsack dashboard: \d+ capture\(s\)", line)
        page = urllib.request.urlopen(match.group(1), timeout=30).read().decode()
        assert "nrsack dashboard" in page
        layout = urllib.request.urlopen(match.group(1) + "_dash-layout", timeout=30).read().decode()
        assert "sctp-sack-fig2.pcap" in layout  # the bundled samples, with no argument
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_folder_without_captures_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(main, ["dashboard", str(tmp_path)])
    assert result.exit_code != 0 and f"no capture files in {tmp_path}" in result.output
