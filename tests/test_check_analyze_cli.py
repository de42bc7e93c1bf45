"""`nrsack analyze --check`: one pass gives the analyzer's summary and the checker's findings, the same as
`nrsack analyze` and `nrsack check` give apart, with `check`'s exit status."""

import json

import pytest
from click.testing import CliRunner

from nrsack.analyzer.views.check_cli import check
from nrsack.analyzer.views.cli import analyze
from support.paths import CONFORMANCE, SAMPLES

CAPTURES = sorted(CONFORMANCE.glob("*.pcap")) + sorted(SAMPLES.glob("*.pcap"))


def run(command, *args):
    result = CliRunner().invoke(command, [str(a) for a in args])
    return result.exit_code, result.stdout


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_json_has_the_summary_and_the_checks_findings(path):
    code, out = run(analyze, "--check", "--format", "json", path)
    check_code, check_out = run(check, "--format", "json", path)
    plain_code, plain_out = run(analyze, "--format", "json", path)
    assert plain_code == 0
    assert code == check_code
    both, alone = json.loads(out), json.loads(plain_out)
    assert both["flows"] == alone["flows"]
    assert both["findings"] == json.loads(check_out)["findings"]


def test_text_adds_the_check_report_and_errors_exit_1():
    path = CONFORMANCE / "nr03-revocation.pcap"
    code, out = run(analyze, "--check", path)
    assert code == 1
    assert "NR-03 error: TSN 13, NR-acked in frame 9" in out
    assert out.rstrip().endswith("1 error, 0 warnings, 0 notes")
    assert run(analyze, path)[0] == 0  # without --check the findings do not decide the exit status


def test_severity_and_flow_filter_the_findings():
    path = CONFORMANCE / "nr03-legal-reordered-old-ack.pcap"
    assert [f["rule"] for f in json.loads(run(analyze, "--check", "--format", "json", path)[1])["findings"]] == ["NR-07"]
    out = json.loads(run(analyze, "--check", "--severity", "warning", "--format", "json", path)[1])
    assert out["findings"] == []
    code, out = run(analyze, "--check", "--flow", "7", path)
    assert code == 2 and out == ""


def test_unusable_input_exits_2(tmp_path):
    bogus = tmp_path / "bogus.pcap"
    bogus.write_bytes(b"not a capture")
    assert run(analyze, "--check", bogus)[0] == 2
