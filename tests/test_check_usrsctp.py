"""A real peer: FreeBSD's SCTP stack (usrsctp, Debian's libusrsctp) with NR-SACK on, a client and a
server (tests/peers/nrsack_peer.c) in two network namespaces joined by a veth pair, SCTP over UDP 9899,
nftables dropping 1 in 20 packets on the way to the receiver, a 16 KiB send buffer, ordered and
unordered messages on one stream; tcpdump captures at the sender. The capture must show NR-SACKs with
both R blocks (ordered data held behind a gap, renegable) and NR blocks (unordered data delivered), and
`nrsack check` must find no error."""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from nrsack.analyzer import check
from nrsack.analyzer.read import events as E
from nrsack.cli import main
from nrsack.lab.namespaces import namespace_problem

pytestmark = [pytest.mark.root, pytest.mark.slow]

PEER_SOURCE = Path(__file__).resolve().parent / "peers" / "nrsack_peer.c"
MESSAGES, SIZE, SNDBUF, PORT = 400, 1000, 16384, 5001
DROP_ONE_IN = 20


def namespaces_available():
    """None when network namespaces and raw sockets can be used, else why not."""
    problem = namespace_problem(("ip", "nft", "tcpdump"))
    if problem:
        return problem
    try:
        socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP).close()
    except OSError as error:
        return f"raw sockets unavailable ({error})"
    return None


def sh(*args, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=20)


def wait_for(stream_path, text, timeout=10.0, abort_text=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = Path(stream_path).read_text(errors="replace")
        if text in seen:
            return
        if abort_text and abort_text in seen:
            raise StackAborted(seen.strip())
        time.sleep(0.02)
    raise AssertionError(f"{text!r} never appeared in {stream_path}: {Path(stream_path).read_text()!r}")


# usrsctp 0.9.5 now and then aborts the association itself while the lossy path drops packets (the
# server's read fails with ECONNABORTED; CI saw it once in many runs, never reproduced idle or loaded).
# The stack's own abort is not what these tests judge, so such a run is made again, a bounded number of
# times; any other failure fails at once.
ATTEMPTS = 3
STACK_ABORT = "usrsctp_recvv: Software caused connection abort"


class StackAborted(Exception):
    pass


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    reason = namespaces_available()
    if reason:
        pytest.skip(reason)
    work = tmp_path_factory.mktemp("usrsctp")
    os.chmod(work, 0o777)  # tcpdump drops to its own user before writing
    peer = work / "nrsack_peer"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-o", str(peer), str(PEER_SOURCE), "-lusrsctp", "-lpthread"],
                   check=True, capture_output=True, text=True)
    aborted = []
    for attempt in range(ATTEMPTS):
        run_dir = work / f"attempt{attempt}"
        run_dir.mkdir()
        os.chmod(run_dir, 0o777)
        try:
            return run_transfer(peer, run_dir)
        except StackAborted as error:
            aborted.append(str(error))
    raise AssertionError(f"usrsctp aborted the association in all {ATTEMPTS} runs: {aborted}")


def run_transfer(peer, work):
    a, b = f"nrskA{os.getpid()}", f"nrskB{os.getpid()}"
    veth_a, veth_b = f"nva{os.getpid()}", f"nvb{os.getpid()}"
    pcap = work / "usrsctp-nrsack.pcap"
    procs = []
    try:
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh("ip", "link", "add", veth_a, "netns", a, "type", "veth", "peer", "name", veth_b, "netns", b)
        for ns, dev, address in ((a, veth_a, "10.99.0.1/24"), (b, veth_b, "10.99.0.2/24")):
            sh("ip", "addr", "add", address, "dev", dev, ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("nft", "add", "table", "inet", "lossy", ns=b)
        sh("nft", "add", "chain", "inet", "lossy", "input", "{ type filter hook input priority 0; }", ns=b)
        sh("nft", "add", "rule", "inet", "lossy", "input", "udp", "dport", "9899", "numgen", "random", "mod",
           str(DROP_ONE_IN), "==", "0", "drop", ns=b)
        tcpdump_err = work / "tcpdump.err"
        with open(tcpdump_err, "w") as err:
            procs.append(subprocess.Popen(["ip", "netns", "exec", a, "tcpdump", "-i", veth_a, "--immediate-mode", "-B", "65536",
                                           "-U", "-w", str(pcap), "udp", "port", "9899"], stderr=err))
        wait_for(tcpdump_err, "listening on")
        server_out = work / "server.out"
        with open(server_out, "w") as out:
            procs.append(subprocess.Popen(["ip", "netns", "exec", b, str(peer), "server", str(PORT)], stdout=out,
                                          stderr=subprocess.STDOUT))
        wait_for(server_out, "listening")
        client = subprocess.run(["ip", "netns", "exec", a, str(peer), "client", "10.99.0.2", str(PORT), str(MESSAGES),
                                 str(SIZE), str(SNDBUF)], capture_output=True, text=True, timeout=25)
        assert client.returncode == 0, client.stdout + client.stderr
        # not the server's exit: when the lossy path drops the client's SHUTDOWN-COMPLETE (1 in
        # DROP_ONE_IN), the server's stack retransmits its SHUTDOWN-ACK to a client that has gone, and
        # usrsctp_finish() waits for that association to time out, far beyond any test timeout
        wait_for(server_out, "received", abort_text=STACK_ABORT)
        time.sleep(0.2)  # the last SHUTDOWN-COMPLETE reaches the capture
        procs[0].send_signal(signal.SIGINT)
        procs[0].wait(timeout=10)
        return {"pcap": pcap, "client": client.stdout, "server": server_out.read_text(),
                "tcpdump": tcpdump_err.read_text()}
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_transfer_completed_and_captured_whole(capture):
    assert f"sent {MESSAGES * SIZE}" in capture["client"]
    assert f"received {MESSAGES * SIZE}" in capture["server"]
    assert "0 packets dropped by kernel" in capture["tcpdump"]


def test_nr_sacks_carry_both_r_and_nr_blocks(capture):
    cap = E.read_capture(capture["pcap"])
    ev, blocks = cap.ev, cap.blocks
    assert (ev["flags"] & E.SCTP_UDP).all()
    # The lossy path may drop an INIT or INIT-ACK, so either can appear again (retransmitted).
    inits = ev[(ev["chunk"] == 1) | (ev["chunk"] == 2)]
    assert set(inits["chunk"].tolist()) == {1, 2}, "INIT or INIT-ACK missing"
    assert (inits["flags"] & E.EXT_NRSACK).all(), "NR-SACK not negotiated"
    data = ev[ev["chunk"] == 0]
    assert len(data) > MESSAGES, "no retransmission: the path was not lossy"
    assert (data["flags"] & E.UNORDERED).any() and (~data["flags"] & E.UNORDERED).any()
    nr_sacks = np.flatnonzero(ev["chunk"] == 16)
    kinds = [set(blocks["kind"][ev["blk_start"][i]:ev["blk_start"][i] + ev["blk_count"][i]].tolist()) for i in nr_sacks]
    assert sum({E.BK_R, E.BK_NR} <= k for k in kinds) > 0, "no NR-SACK with both R and NR blocks"
    assert not (ev["chunk"] == 3).any(), "a plain SACK after NR-SACK was negotiated"


def test_no_error_level_finding(capture):
    findings = check(capture["pcap"])
    assert list(findings.loc[findings.severity == "error", "message"]) == []
    result = CliRunner().invoke(main, ["check", "--severity", "error", str(capture["pcap"])])
    assert result.exit_code == 0, result.output
