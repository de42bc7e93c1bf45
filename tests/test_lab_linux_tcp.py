"""`nrsack lab run --stack linux-tcp`: real Linux TCP in namespaces behind the lab's forwarder (root)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from nrsack.cli import main
from nrsack.lab.capture import analyzed_at_kernel_capacity, sender_entry
from nrsack.lab.namespaces import namespaces_unavailable
from support import tshark
from support.lab import lab_run

pytestmark = [pytest.mark.root, pytest.mark.slow]

# writes of one segment, as the analyzer's blocked test (room for less than S is "full") assumes
ARGS = ["--stack", "linux-tcp", "--message", "1448", "--sndbuf", "16384", "--loss", "0.01", "--delay", "10", "--bandwidth", "20",
        "--seed", "3", "--timeout", "60"]


@pytest.fixture(scope="module")
def tcp_run(tmp_path_factory):
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("labtcp")
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    run = out, lab_run(out, *ARGS, "--bytes", "1000000")
    # the run's raised priority (lab/namespaces.py RUN_NICENESS) ends with the run
    assert os.getpriority(os.PRIO_PROCESS, 0) == niceness
    return run


def test_the_truth_says_how_much_of_q_its_samples_cover(tcp_run):
    out, _ = tcp_run
    truth = json.loads((out / "truth.json").read_text())
    assert 0 < truth["sampler_coverage"] <= 1
    samples = pd.read_csv(out / "truth_tcp_info.csv")
    assert len(samples) > 0.5 * truth["q_s"] * truth["sampler_coverage"] / 0.001


def test_sack_run_completes_with_losses(tcp_run):
    out, truth = tcp_run
    assert truth["complete"] and truth["counters"]["bytes_sent"] == 1_000_000
    assert truth["counters"]["lost_forward"] > 0
    s = sender_entry(out / "sender.pcap").summary
    assert s["complete"] and s["data_bytes"] == 1_000_000 and not s["nr_sack"]
    assert s["q_s"] == pytest.approx(truth["q_s"], abs=0.01)


@pytest.mark.parametrize("side", ["sender", "receiver"])
def test_tshark_reads_without_malformed_or_error_marks(tcp_run, nrsack_c_plugin, side):
    out, _ = tcp_run
    proc = tshark.run_tshark(["-Y", "_ws.malformed || _ws.expert.severity >= 8388608", "-T", "fields",
                              "-e", "frame.number"], nrsack_c_plugin, pcap=out / f"{side}.pcap")
    assert proc.stdout.strip() == ""
    sacks = tshark.run_tshark(["-Y", "tcp.options.sack_le", "-T", "fields", "-e", "frame.number"],
                              nrsack_c_plugin, pcap=out / f"{side}.pcap")
    assert len(sacks.stdout.split()) > 0, "no SACK blocks under loss"


def test_whatif_shows_memory_nr_sacks_would_free(tcp_run):
    out, _ = tcp_run
    s = sender_entry(out / "sender.pcap").summary
    assert 0 < s["max_rtxq_whatif_bytes"] < s["max_rtxq_sack_bytes"]


def test_b_over_q_against_the_senders_measured_waits(tcp_run):
    """B in payload is what the capture shows when the kernel said "full" (it counts skb overhead
    against SO_SNDBUF): the median RtxQ at the EAGAIN instants. The waits while the kernel held unsent
    data (TCP_INFO notsent_bytes, e.g. cwnd below the buffer after a loss) are no capture's to see.
    Tolerance 0.1 (the issue's bar), not the 0.05 of usrsctp (whose buffer counts payload exactly): the
    kernel's capacity in payload varies by about a segment from one wait to the next (skbs differ in
    overhead), and the analyzer's single B reads some of those instants the other way; measured
    differences were 0.04 to 0.055 over five runs and 0.081 on an idle CI machine, the analyzer always
    the higher."""
    out, truth = tcp_run
    flow = analyzed_at_kernel_capacity(out).summary
    assert truth["app_blocked_over_q"] > 0.3, "the sender hardly waited"
    assert abs(flow["b_over_q"] - truth["b_over_q"]) < 0.1, (flow["b_over_q"], truth)


def test_sndbuf_socket_translates_by_the_kernels_accounting(tcp_run):
    """--sndbuf-socket 16384 --stack linux: the payload the kernel's full buffer held at the writer's waits
    (the truth's sndbuf_bytes, GSO off), and the analyzer's figures with it as with the truth's B."""
    from nrsack.analyzer.state.socket_buffer import payload_bytes

    out, truth = tcp_run
    assert payload_bytes(16384, "linux") == truth["sndbuf_bytes"]  # the default MSS: the lab's veth, MTU 1500
    result = CliRunner().invoke(main, ["analyze", str(out / "sender.pcap"), "--format", "json",
                                       "--sndbuf-socket", "16384", "--stack", "linux"])
    assert result.exit_code == 0, result.output
    [flow] = [f for f in json.loads(result.output)["flows"] if f["src"].startswith("10.0.0.1:")]
    assert (flow["sndbuf_source"], flow["sndbuf_bytes"]) == ("given", truth["sndbuf_bytes"])
    # the bar (0.1): the writer's waits are timed in real time, and on a loaded machine this
    # B (the median payload at the waits) read 0.09 below the truth where the test above read 0.05 above
    assert abs(flow["b_over_q"] - truth["b_over_q"]) < 0.1, (flow["b_over_q"], truth)


def test_same_seed_same_drops(tcp_run, tmp_path):
    out, _ = tcp_run
    lab_run(tmp_path, *ARGS, "--bytes", "1000000")
    first, again = (json.loads((d / "drops.json").read_text()) for d in (out, tmp_path))
    n = min(first["frames"][0], again["frames"][0])
    drops = [sorted(i for d, i, _ in run["drops"] if d == 0 and i < n) for run in (first, again)]
    assert drops[0] and drops[0] == drops[1]


def test_clear_error_when_not_root(tmp_path):
    """As an unprivileged user: the modules load as this user first (the Python install may be
    unreadable to nobody), then the process gives up root for good and runs the command."""
    out = tempfile.mkdtemp(prefix="nrsack-lab-")  # pytest's own folders are closed to nobody
    os.chmod(out, 0o777)
    code = ("import os, sys\n"
            "from nrsack.cli import main\n"
            "import nrsack.lab.cli, nrsack.lab.runner, nrsack.lab.linux_tcp\n"
            "if os.geteuid() == 0:\n"
            "    os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
            f"main(['lab', 'run', '--stack', 'linux-tcp', '--out', {out + '/x'!r}])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "needs root" in proc.stderr and "Traceback" not in proc.stderr
    shutil.rmtree(out)


def test_unwritable_out_is_a_clear_error():
    result = CliRunner().invoke(main, ["lab", "run", "--bytes", "1000", "--out", "/proc/nrsack-lab"])
    assert result.exit_code == 1 and "cannot create /proc/nrsack-lab" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_namespaces_of_a_killed_run_are_removed_by_the_next():
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    from pathlib import Path

    from nrsack.lab.namespaces import remove_stale_namespaces

    gone = next(p for p in range(32000, 1000, -1) if not Path(f"/proc/{p}").exists())
    alive = os.getpid()
    for name in (f"nrlabm{gone}", f"nrlabm{alive}"):
        subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        remove_stale_namespaces()
        listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert f"nrlabm{gone}" not in listed and f"nrlabm{alive}" in listed
    finally:
        for name in (f"nrlabm{gone}", f"nrlabm{alive}"):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_bbr_with_gso_and_an_autotuned_buffer(tmp_path):
    """--cc, --gso and --sndbuf 0 reach the kernel: BBR in use, no SO_SNDBUF (the kernel grows
    sk_sndbuf from tcp_wmem), and the sender's capture shows GSO segments of many MSS while the
    receiver's, behind the forwarder, shows wire-sized ones only."""
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    truth = lab_run(tmp_path, "--stack", "linux-tcp", "--cc", "bbr", "--gso", "--sndbuf", "0", "--loss", "0.01",
                    "--delay", "5", "--bandwidth", "20", "--bytes", "800000", "--message", "1448", "--seed", "2")
    assert truth["complete"] and truth["congestion_control"] == "bbr" and truth["sndbuf_socket"] == "autotuned"
    assert truth["counters"]["bytes_sent"] == 800_000
    assert 0 <= truth["p_s"] <= truth["b_s"] <= truth["app_blocked_s"] <= truth["q_s"]
    info = pd.read_csv(tmp_path / "truth_tcp_info.csv")
    assert info.sk_sndbuf.max() > info.sk_sndbuf.iloc[0]  # autotuning grew it
    lengths = {side: [int(x) for x in tshark.run_tshark(["-Y", "ip.src == 10.0.0.1 and tcp.len > 0", "-T", "fields",
                                                          "-e", "ip.len"], tshark.Plugin.none(),
                                                         pcap=tmp_path / f"{side}.pcap").stdout.split()]
               for side in ("sender", "receiver")}
    assert max(lengths["sender"]) > 1500 and max(lengths["receiver"]) <= 1500


def test_lab_run_prints_truth_and_analyzer_under_the_same_names(tmp_path):
    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    result = CliRunner().invoke(main, ["lab", "run", *ARGS, "--bytes", "300000", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(":", 1) for line in result.output.splitlines()[1:4])
    truth, analyzed, writer = (json.loads(lines[k]) for k in ("truth", "analyze", "writer"))
    shared = {"q_s", "b_s", "p_s", "b_over_q", "p_over_q"}
    assert shared <= set(truth) & set(analyzed)
    # the writer's whole wait is never printed under the analyzer's names
    assert set(writer) == {"app_blocked_s", "app_blocked_unsent_s", "app_blocked_over_q"}
    assert truth["b_s"] <= writer["app_blocked_s"]


def test_the_kernels_gap_open_is_the_captures(tcp_run):
    """p's gap signal, the kernel's SACKed segment count (TCP_INFO sacked > 0, sampled every
    millisecond), against the analyzer's gap_open from the acks in the sender's capture at the same
    instants: the same state but for an ack between the capture's timestamp and the sample (measured
    on lossy corpus runs: 100 % of the samples)."""
    out, _ = tcp_run
    info = pd.read_csv(out / "truth_tcp_info.csv")
    steps = sender_entry(out / "sender.pcap").rtxq
    at = np.searchsorted(steps.time_ns.to_numpy(), info.time_s.to_numpy() * 1e9, side="right") - 1
    inside = at >= 0
    capture = steps.gap_open.to_numpy()[at[inside]]
    kernel = (info.sacked > 0).to_numpy()[inside]
    assert kernel.any() and (capture == kernel).mean() >= 0.95, (capture == kernel).mean()
