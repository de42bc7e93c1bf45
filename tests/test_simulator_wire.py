"""Simulated captures are valid: the real tshark 4.0 reads them without malformed marks or bad
checksums, and decodes the values the model meant (TSNs, cum acks, blocks, DSNs)."""

import hashlib
import subprocess

import pytest
from click.testing import CliRunner

from nrsack.generator.cli import generate
from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate, write_pcap
from nrsack.generator.sim.model import ACK, DATA, RTX

VALIDATE = ["-o", "sctp.checksum:crc32c", "-o", "tcp.check_checksum:TRUE",
            "-o", "ip.check_checksum:TRUE", "-o", "tcp.relative_sequence_numbers:FALSE"]
BAD = '_ws.malformed || _ws.expert.group == "Malformed" || _ws.expert.severity >= error'
PROTOCOLS = [("sctp", 1), ("cmt", 2), ("tcp", 1), ("mptcp", 2)]


def tshark(*args):
    run = subprocess.run(["tshark", *VALIDATE, *args], capture_output=True, text=True, check=True)
    return run.stdout


def fields(pcap, display_filter, *names):
    out = tshark("-r", str(pcap), "-Y", display_filter, "-T", "fields", "-E", "occurrence=a",
                 *[x for n in names for x in ("-e", n)])
    return [line.split("\t") for line in out.splitlines()]


def _trace(protocol, ack, n_paths, isn=None, loss=0.03):
    cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=16000, total_bytes=150_001, seed=11, isn=isn,
                    paths=tuple(PathConfig(bandwidth_bps=20e6, delay_s=0.01, loss=loss)
                                for _ in range(n_paths)))
    return simulate(cfg, receiver_trace=True)


@pytest.mark.tshark
@pytest.mark.parametrize("ack", ["sack", "nrsack"])
@pytest.mark.parametrize("protocol,n_paths", PROTOCOLS)
def test_tshark_reads_without_malformed_marks(tmp_path, protocol, n_paths, ack):
    trace = _trace(protocol, ack, n_paths)
    assert trace.counters["retransmissions"] > 0
    for side, frames in (("sender", trace.sender), ("receiver", trace.receiver)):
        pcap = tmp_path / f"{side}.pcap"
        count = write_pcap(trace, frames, pcap)
        assert tshark("-r", str(pcap), "-Y", BAD) == ""
        assert len(tshark("-r", str(pcap)).splitlines()) == count == len(frames)


@pytest.mark.tshark
@pytest.mark.parametrize("protocol,ack", [("sctp", "sack"), ("sctp", "nrsack"), ("tcp", "sack"),
                                          ("tcp", "nrsack")])
def test_compiled_writer_output_reads_cleanly(tmp_path, protocol, ack):
    cfg = SimConfig(protocol=protocol, ack=ack, sndbuf=16000, total_bytes=150_001, seed=11,
                    paths=(PathConfig(bandwidth_bps=20e6, delay_s=0.01, loss=0.03),))
    trace = simulate(cfg, engine="c")
    pcap = tmp_path / "c.pcap"
    count = write_pcap(trace, trace.sender, pcap)
    assert tshark("-r", str(pcap), "-Y", BAD) == ""
    assert len(tshark("-r", str(pcap)).splitlines()) == count


def _acks(trace):
    return [f for f in trace.sender if f[1] == ACK]


@pytest.mark.tshark
@pytest.mark.parametrize("ack", ["sack", "nrsack"])
def test_sctp_fields_decode_to_the_model_values(tmp_path, ack):
    isn = 2**32 - 40  # TSNs wrap around
    trace = _trace("sctp", ack, 1, isn=isn)
    pcap = tmp_path / "s.pcap"
    write_pcap(trace, trace.sender, pcap)
    tsns = [int(r[0]) for r in fields(pcap, "sctp.data_tsn_raw", "sctp.data_tsn_raw")]
    assert tsns == [(isn + f[3]) % 2**32 for f in trace.sender if f[1] in (DATA, RTX)]
    cum_field = "sctp.nr_sack_cumulative_tsn_ack" if ack == "nrsack" else "sctp.sack_cumulative_tsn_ack_raw"
    start = "sctp.nr_sack_nr_gap_block_start" if ack == "nrsack" else "sctp.sack_gap_block_start"
    end = "sctp.nr_sack_nr_gap_block_end" if ack == "nrsack" else "sctp.sack_gap_block_end"
    rows = fields(pcap, cum_field, cum_field, start, end)
    acks = _acks(trace)
    assert len(rows) == len(acks)
    assert any(f[3][1] for f in acks), "some acks must carry gap blocks"
    for (cum, starts, ends), f in zip(rows, acks):
        unit_cum, blocks = f[3][0], f[3][1]
        assert int(cum) == (isn + unit_cum - 1) % 2**32
        want = [(s - unit_cum + 1, e - unit_cum) for s, e in blocks]
        got = list(zip(map(int, filter(None, starts.split(","))), map(int, filter(None, ends.split(",")))))
        assert got == want


@pytest.mark.tshark
def test_tcp_and_mptcp_fields_decode_to_the_model_values(tmp_path):
    trace = _trace("tcp", "sack", 1, isn=2**32 - 5000)
    pcap = tmp_path / "t.pcap"
    write_pcap(trace, trace.sender, pcap)
    rows = fields(pcap, "tcp.srcport == 5201 && tcp.flags.syn == 0", "tcp.ack", "tcp.options.sack_le")
    acks = _acks(trace)
    assert len(rows) == len(acks)
    for (ack_no, les), f in zip(rows, acks):
        assert int(ack_no) == (trace.isn + 1 + min(f[3][0] * 1000, 150_001)) % 2**32
        assert [int(x) for x in filter(None, les.split(","))] == [
            (trace.isn + 1 + s * 1000) % 2**32 for s, _ in f[3][1]]
    trace = _trace("mptcp", "nrsack", 2)
    pcap = tmp_path / "m.pcap"
    write_pcap(trace, trace.sender, pcap)
    dsns = [int(r[0]) for r in fields(pcap, "tcp.len > 0", "tcp.options.mptcp.rawdataseqno")]
    data = [f for f in trace.sender if f[1] in (DATA, RTX)]
    assert len(dsns) == len(data)
    assert len({d - f[3] * 1000 for d, f in zip(dsns, data)}) == 1  # DSN = IDSN + 1 + offset
    streams = {r[0] for r in fields(pcap, "mptcp.stream", "mptcp.stream")}
    assert streams == {"0"}  # Wireshark links the joined subflow to the connection (token)
    assert len(fields(pcap, "tcp.options.mptcp.flags & 0x20", "frame.number")) > 0  # DSS flag N


def test_same_seed_same_bytes_and_cli_outputs(tmp_path):
    runner = CliRunner()
    digests = []
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        res = runner.invoke(generate, ["simulate", "--protocol", "cmt", "--ack", "nrsack",
                                       "--loss", "0.01,0.03", "--delay", "10,20", "--bandwidth", "20",
                                       "--bytes", "200000", "--seed", str(seed), "--receiver-pcap",
                                       "--out", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
        out = tmp_path / name
        for f in ("sender.pcap", "receiver.pcap", "truth.json", "truth_rtxq.csv",
                  "truth_blocking.csv", "truth_cwnd.csv", "truth_recovery.csv"):
            assert (out / f).stat().st_size > 0, f
        digests.append(hashlib.sha256((out / "sender.pcap").read_bytes()).hexdigest())
    assert digests[0] == digests[1] != digests[2]


@pytest.mark.parametrize("args,message", [
    (["--loss", "1.5"], "loss rate"),
    (["--loss", "x"], "expected numbers"),
    (["--protocol", "sctp", "--loss", "0.1,0.2"], "exactly one path"),
    (["--sndbuf", "100"], "smaller than one payload"),
    (["--protocol", "mptcp", "--payload", "1452"], "does not fit a 1500-byte packet"),
])
def test_bad_parameters_give_a_clear_error(tmp_path, args, message):
    res = CliRunner().invoke(generate, ["simulate", *args, "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert message in res.output
    assert "Traceback" not in res.output


def test_bad_sweep_parameters_give_a_clear_error(tmp_path):
    res = CliRunner().invoke(generate, ["sweep", "--loss", "0,1.5", "--serial", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "loss rate" in res.output
    assert not (tmp_path / "runs.csv").exists()
