"""`nrsack lab run --clock virtual|real` on the usrsctp lab: a virtual run is a function of its
parameters (same seed, same bytes, whatever else the machine does); a real one still runs; and the
command says what NR-SACKs will free under the stack's default drain."""

import filecmp
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from nrsack.cli import main
from support.lab import lab_run

pytestmark = pytest.mark.slow

SMALL = ["--ack", "nrsack", "--sndbuf", "8192", "--loss", "0.03", "--ack-loss", "0.01", "--delay", "5",
         "--bytes", "150000", "--rto-min", "100"]
OUTPUTS = ["sender.pcap", "receiver.pcap", "truth.json", "truth_blocking.csv", "truth_stack.csv",
           "truth_link.csv", "truth_acks.csv"]


def busy_cores(n):
    """n processes spinning on the CPU: load on the 2-core machine while a run goes on."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def test_same_seed_same_bytes_under_load_and_another_seed_differs(tmp_path):
    first = lab_run(tmp_path / "a", "--seed", "5", *SMALL)
    spinners = busy_cores(2)
    try:
        again = lab_run(tmp_path / "b", "--seed", "5", *SMALL)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert first["complete"] and first["counters"]["lost_forward"] > 0 and first["parameters"]["clock"] == "virtual"
    # byte for byte: timestamps, TSNs, verification tags, the cookie's signature, every truth file;
    # so the run's q (and all else) does not depend on the load the second run had beside it
    for name in OUTPUTS:
        assert filecmp.cmp(tmp_path / "a" / name, tmp_path / "b" / name, shallow=False), name
    assert again["q_s"] == first["q_s"]
    other = lab_run(tmp_path / "c", "--seed", "6", *SMALL)
    assert not filecmp.cmp(tmp_path / "a" / "sender.pcap", tmp_path / "c" / "sender.pcap", shallow=False)
    assert other["q_s"] != first["q_s"]


def test_the_stack_reads_the_virtual_clock(tmp_path):
    """The stack's RTT samples come from its gettimeofday: answered by the virtual clock they are the
    path's round trip exactly (45 ms each way; no processing time), where the machine's clock would
    see the microseconds the loop took. (Speed against q: bench/bench_lab.py.)"""
    import pandas as pd

    truth = lab_run(tmp_path, "--sndbuf", "8192", "--loss", "0", "--delay", "45", "--bytes", "100000")
    stack = pd.read_csv(tmp_path / "truth_stack.csv")
    established = stack[stack.state == 8]
    assert truth["complete"] and len(established) > 500
    assert set(established.srtt_ms) <= {90, 91}, established.srtt_ms.value_counts()
    assert truth["app_blocked_wakeup_s"] == 0.0


def test_real_clock_still_runs(tmp_path):
    truth = lab_run(tmp_path, "--clock", "real", *SMALL)
    assert truth["complete"] and truth["parameters"]["clock"] == "real"
    assert truth["counters"]["bytes_received"] == 150000


def test_virtual_clock_is_the_usrsctp_labs_only(tmp_path):
    result = CliRunner().invoke(main, ["lab", "run", "--stack", "linux-tcp", "--clock", "virtual",
                                       "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "real time only" in result.output, result.output
    assert not (tmp_path / "x").exists()


def run_output(out, *args):
    result = CliRunner().invoke(main, ["lab", "run", "--sndbuf", "8192", "--loss", "0.02", "--delay", "5",
                                       "--bytes", "50000", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize("args, noted", [
    (["--ack", "nrsack"], True),
    (["--ack", "nrsack", "--no-drain"], False),
    (["--ack", "nrsack", "--unordered"], False),
    (["--ack", "sack"], False),
])
def test_nrsack_with_drain_says_nr_sacks_free_only_unordered_data(tmp_path, args, noted):
    result = run_output(tmp_path, *args)
    notes = [line for line in result.stderr.splitlines() if "renegable" in line]
    assert len(notes) == (1 if noted else 0), result.stderr
    if noted:
        assert "only unordered data" in notes[0] and "--no-drain" in notes[0]
    label, _, summary = result.stdout.splitlines()[-1].partition(" ")
    assert label == "writer:" and json.loads(summary)  # the note goes to stderr, the summary lines stay on stdout


def test_drain_help_says_which_does_what():
    for command in (["lab", "run"], ["lab", "sweep"]):
        text = " ".join(CliRunner().invoke(main, [*command, "--help"]).output.split())
        assert "--drain / --no-drain" in text
        assert "ordered data held behind a gap renegable" in text and "NR-acks all it holds" in text
        assert "--clock [virtual|real]" in text


def test_a_library_loaded_without_deepbind_cannot_pass_for_a_virtual_run(tmp_path):
    """Loaded RTLD_LOCAL (ctypes' default), libusrsctp binds libc's gettimeofday: the run says so in one
    line instead of mixing the machine's clock into a virtual run."""
    script = f"""
import ctypes, sys
from pathlib import Path
from nrsack.lab import usrsctp
from nrsack.lab.config import LabConfig
path = next(p for p in Path(usrsctp.__file__).parent.glob("_usrsctp_lab*.so"))
lib = ctypes.CDLL(str(path))
params = usrsctp.params_of(LabConfig(sndbuf=8192, loss=0, delay_ms=1, bytes=20000))
result, err = usrsctp.Result(), ctypes.create_string_buffer(512)
rc = lib.lab_usrsctp_run(ctypes.byref(params), {str(tmp_path)!r}.encode(), ctypes.byref(result), err, len(err))
print(rc, err.value.decode())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rc, message = out.stdout.strip().split(" ", 1)
    assert rc == "-1" and "not answered by the lab" in message and "RTLD_DEEPBIND" in message, out.stdout


def test_a_summary_only_run_writes_no_packets_and_the_same_summary(tmp_path):
    """`nrsack reproduce` keeps a run's summary alone: asked for only that, the lab writes no pcaps, no
    link log and no truth tables, and the summary is the full run's truth.json (same seed, same run)."""
    from nrsack.lab.config import LabConfig
    from nrsack.lab.runner import run_config

    cfg = LabConfig(ack="nrsack", sndbuf=8192, loss=0.03, ack_loss=0.01, delay_ms=5, bytes=150000, rto_min_ms=100,
                    drain=False, seed=5)
    full = run_config(cfg, tmp_path / "full")
    summary = run_config(cfg, tmp_path / "summary", summary_only=True)
    assert full["complete"] and full["p_s"] > 0 and full["counters"]["lost_forward"] > 0
    assert json.loads(json.dumps(summary)) == json.loads((tmp_path / "full" / "truth.json").read_text())
    written = {p.name for p in (tmp_path / "summary").iterdir()}
    assert not written & {*OUTPUTS, "link.csv"}, written
    assert set(OUTPUTS) <= {p.name for p in (tmp_path / "full").iterdir()}
