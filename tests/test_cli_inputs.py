"""The commands' answers to what users hand them: compressed and empty captures, a flow that is not
there, several captures of which one is unusable, runs whose send buffer was estimated."""

import gzip
import json
import re
import subprocess

import pytest
from click.testing import CliRunner

from nrsack.cli import main
from support.paths import SAMPLES

FIG4 = SAMPLES / "sctp-nrsack-fig4.pcap"
CMT = SAMPLES / "cmt-nrsack.pcap"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def flows_of(result):
    assert result.exit_code == 0, result.output
    return [{k: v for k, v in f.items()} for f in json.loads(result.stdout)["flows"]]


def compressed(source, target, how):
    if how == "gzip":
        target.write_bytes(gzip.compress(source.read_bytes()))
    else:  # the tools Wireshark's users compress captures with
        subprocess.run([how, "-q", "-c", str(source)], stdout=target.open("wb"), check=True)
    return target


@pytest.mark.parametrize("how", ["gzip", "zstd", "lz4"])
def test_a_compressed_capture_reads_as_the_capture_itself(tmp_path, how):
    """Wireshark opens gzip (and from 4.2 zstd and lz4) compressed captures: so does nrsack, pcap and pcapng."""
    pcapng = tmp_path / "cmt.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(CMT), str(pcapng)], check=True)
    for plain in (FIG4, CMT, pcapng):
        packed = compressed(plain, tmp_path / f"{plain.name}.{how}", how)
        assert packed.read_bytes()[:4] != plain.read_bytes()[:4]
        assert flows_of(invoke("analyze", packed, "--format", "json")) == \
            flows_of(invoke("analyze", plain, "--format", "json"))
    checked = invoke("check", tmp_path / f"{FIG4.name}.{how}")
    assert checked.exit_code == 0 and "0 errors" in checked.output


def test_a_damaged_gzip_capture_says_so_in_one_line(tmp_path):
    whole = gzip.compress(CMT.read_bytes())
    cut = tmp_path / "cut.pcap.gz"
    cut.write_bytes(whole[:200])  # a frame whole inside: analysed up to it, as any capture cut short
    result = invoke("analyze", cut, "--format", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["frames"] == 1
    assert result.stderr.startswith(f"nrsack: warning: {cut}: capture cut short, analysed up to frame 1 (")
    assert result.stderr.strip().endswith("gzip decompression failed: gzip: " + str(cut) + ": unexpected end of file)")
    assert result.stderr.count("\n") == 1
    cut.write_bytes(whole[:40])  # not even the file header
    result = invoke("analyze", cut)
    assert result.exit_code == 2 and result.output == \
        f"nrsack: error: {cut}: not a readable capture: gzip decompression failed: gzip: {cut}: unexpected end of file\n"


@pytest.mark.parametrize("content, words", [
    (b"", "the file is empty"), (gzip.compress(b"", mtime=0), "empty inside its gzip"),
    (b"\xd4\xc3", "cut short inside its file header (2 of 4 bytes)"),
    (b"plain text, no capture\n" * 3, "neither pcap nor pcapng")], ids=["empty", "empty-gzip", "short", "text"])
def test_an_empty_or_foreign_file_gets_one_line_in_nrsacks_words(tmp_path, content, words):
    path = tmp_path / "input.pcap"
    path.write_bytes(content)
    for command in ("analyze", "check"):
        result = invoke(command, path)
        assert result.exit_code == 2
        assert result.stderr.startswith(f"nrsack: error: {path}: not a readable capture: ")
        assert words in result.stderr and result.stderr.count("\n") == 1
        assert "dump file" not in result.stderr and "unknown file format" not in result.stderr  # libpcap's words


@pytest.mark.parametrize("command", ["analyze", "plot"])
def test_a_flow_that_is_not_there_lists_those_that_are(command, tmp_path):
    result = invoke(command, CMT, "--flow", "7", *(["--out", tmp_path / "p.html"] if command == "plot" else []))
    assert result.exit_code == 2
    assert result.output.strip().endswith("no flow '7' in " + str(CMT) + "; its flows: 0a, 0a.0, 0a.1")


def test_check_goes_on_past_an_unusable_capture_and_exits_2_at_the_end(tmp_path):
    broken = tmp_path / "broken.pcap"
    broken.write_text("not a capture\n")
    revocation = SAMPLES / "broken" / "nr03-revocation.pcap"
    result = invoke("check", broken, revocation, FIG4)
    assert result.exit_code == 2
    assert result.stderr.strip() == f"nrsack: error: {broken}: not a readable capture: neither pcap nor pcapng " \
                                    "(nor a gzip, zstd or lz4 compressed one)"
    # the captures after it were checked and reported, the revocation's error among them
    assert re.search(rf"^{re.escape(str(revocation))}: [1-9]\d* errors?", result.stdout, re.M)
    assert f"{FIG4}: 0 errors, 0 warnings, 0 notes" in result.stdout
    reported = json.loads(invoke("check", broken, revocation, "--format", "json").stdout)
    assert any(f["rule"] == "NR-03" for f in reported["findings"])


def test_compare_says_which_send_buffers_were_estimated():
    sack = SAMPLES / "sctp-sack-fig2.pcap"
    estimated = invoke("compare", FIG4, sack)
    assert estimated.exit_code == 0
    assert ("send buffer estimated from the capture (--sndbuf gives it): run A 0a cannot tell: too short: 6 waits "
            "for an ack, 16 needed, run B 0a cannot tell: too short") in " ".join(estimated.output.split())
    given = invoke("compare", FIG4, sack, "--sndbuf", "8000")
    assert given.exit_code == 0 and "estimated" not in given.output
    pair = json.loads(invoke("compare", FIG4, sack, "--format", "json").output)["pairs"][0]
    assert pair["sndbuf_a_estimated"] is True and pair["sndbuf_b_bytes"] is None
    assert pair["sndbuf_a_verdict"] == "cannot tell" and pair["sndbuf_a_reason"].startswith("too short")


def test_lab_run_help_names_the_comma_lists_of_the_readme():
    helped = " ".join(invoke("lab", "run", "--help").output.split())
    for option in ("--loss RATE[,RATE...]", "--delay MS[,MS...]", "--bandwidth MBPS[,MBPS...]"):
        assert re.search(re.escape(option) + r" .{0,40}?; a comma-separated list gives one per path", helped), option
