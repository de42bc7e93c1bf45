"""`nrsack check` as a command: report formats (text, JSON, JUnit XML, SARIF), filters, exit codes,
unusable input; and the Python API's DataFrame."""

import json
import xml.etree.ElementTree as ET

import junitparser
import pytest
from click.testing import CliRunner
from scapy.layers.l2 import ARP, Ether
from scapy.utils import wrpcap

from nrsack.analyzer import CaptureError, check
from nrsack.analyzer.rules.checker import COLUMNS, applies
from nrsack.analyzer.rules import REGISTRY
from nrsack.cli import main
from support.paths import CONFORMANCE as VECTORS

REVOCATION = VECTORS / "nr03-revocation.pcap"           # NR-03 error on frames 9, 10
OLD_ACK = VECTORS / "nr03-legal-reordered-old-ack.pcap"  # NR-07 note only
RTX = VECTORS / "nr04-retransmission-after-nr-ack.pcap"  # NR-04 warning


def run(*args):
    return CliRunner().invoke(main, ["check", *map(str, args)])


def test_json_has_exactly_the_contract_keys_and_exit_1_on_error():
    result = run("--format", "json", REVOCATION)
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert list(report) == ["findings"]
    (finding,) = report["findings"]
    assert list(finding) == ["rule", "severity", "flow", "direction", "frames", "message"]
    assert finding["rule"] == "NR-03" and finding["severity"] == "error" and finding["frames"] == [9, 10]
    assert finding["flow"] == 0 and finding["direction"] == "192.0.2.1:5000 -> 198.51.100.1:5001"
    assert "TSN 13" in finding["message"] and "frame 9" in finding["message"]


def test_exit_0_without_error_findings_and_severity_filter():
    assert run(OLD_ACK).exit_code == 0
    assert "NR-07 note" in run(OLD_ACK).output
    quiet = run("--severity", "warning", "--format", "json", OLD_ACK)
    assert quiet.exit_code == 0 and json.loads(quiet.output) == {"findings": []}
    warned = run("--severity", "warning", "--format", "json", RTX)
    assert warned.exit_code == 0 and [f["rule"] for f in json.loads(warned.output)["findings"]] == ["NR-04"]


def test_rules_option_selects_rules():
    only = run("--rules", "nr-07,NR-04", "--format", "json", REVOCATION, OLD_ACK)
    assert only.exit_code == 0
    findings = json.loads(only.output)["findings"]
    assert [(f["rule"], f["flow"]) for f in findings] == [("NR-07", "nr03-legal-reordered-old-ack.pcap:0")]


@pytest.mark.parametrize("args,message", [
    (["/nonexistent.pcap"], "no such file"),
    (["--rules", "NR-99", str(REVOCATION)], "unknown rule ID NR-99"),
])
def test_unusable_input_exits_2_with_one_line(args, message):
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_not_a_capture_and_no_flows_exit_2(tmp_path):
    (tmp_path / "text.pcap").write_text("not a capture\n")
    arp = Ether() / ARP()
    arp.time = 1_700_000_000
    wrpcap(str(tmp_path / "arp.pcap"), [arp])
    for name, message in (("text.pcap", "not a readable capture"), ("arp.pcap", "no SCTP or TCP flows")):
        result = run(tmp_path / name)
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_junit_loads_in_a_junit_parser_one_case_per_rule_per_flow(tmp_path):
    out = tmp_path / "report.xml"
    pcaps = [REVOCATION, VECTORS / "tn03-revocation-reported-renegable.pcap", VECTORS / "mn01-legal-negotiated.pcap"]
    result = run("--format", "junit", "--out", out, *pcaps)
    assert result.exit_code == 1 and result.output == ""
    # schema-ish: testsuites > testsuite > testcase, counts agree with the children
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [str(p) for p in pcaps]
    for suite, protocol in zip(suites, ["sctp", "tcp", "mptcp"]):
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == len([c for c in cases if c.find("failure") is not None])
        assert sorted(c.get("name").split()[0] for c in cases) == sorted(r for r in REGISTRY if applies(REGISTRY[r], protocol))
    xml = junitparser.JUnitXml.fromfile(str(out))
    failed = {(suite.name, case.name) for suite in xml for case in suite if not case.is_passed}
    assert failed == {(str(pcaps[0]), "NR-03 nr acked tsn revoked"), (str(pcaps[1]), "TN-03 nr acked bytes revoked")}
    assert sum(suite.tests for suite in xml) == sum(len(s.findall("testcase")) for s in suites)


def test_junit_lists_warnings_in_system_out():
    result = run("--format", "junit", RTX)
    case = next(c for c in ET.fromstring(result.output.split("\n", 1)[1]).iter("testcase") if c.get("name").startswith("NR-04"))
    assert case.find("failure") is None
    assert "warning: frames [8, 9]" in case.find("system-out").text


def test_sarif_2_1_0():
    result = run("--format", "sarif", REVOCATION, RTX)
    assert result.exit_code == 1
    sarif = json.loads(result.output)
    assert sarif["version"] == "2.1.0"
    (run_,) = sarif["runs"]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(REGISTRY)
    got = [(r["ruleId"], r["level"], r["properties"]["frames"]) for r in run_["results"]]
    assert got == [("NR-03", "error", [9, 10]), ("NR-04", "warning", [8, 9])]
    for r in run_["results"]:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(".pcap")


def test_text_report_names_rule_frames_and_direction():
    result = run(REVOCATION)
    line = result.output.splitlines()[0]
    assert line.startswith(f"{REVOCATION}: frame 10: NR-03 error: TSN 13")
    assert "flow 0 192.0.2.1:5000 -> 198.51.100.1:5001; frames 9,10" in line
    assert result.output.splitlines()[-1].endswith("1 error, 0 warnings, 0 notes")


def test_python_api_returns_the_findings_dataframe():
    frame = check(REVOCATION)
    assert list(frame.columns) == COLUMNS
    assert frame.shape == (1, 6)
    assert frame.rule[0] == "NR-03" and list(frame.frames[0]) == [9, 10] and frame.flow[0] == 0
    assert list(check(OLD_ACK, severity="warning").rule) == []
    assert list(check(REVOCATION, rules=["NR-07"]).rule) == []
    with pytest.raises(KeyError):
        check(REVOCATION, rules=["XX-01"])


def test_python_api_raises_capture_error_without_flows(tmp_path):
    arp = Ether() / ARP()
    arp.time = 1_700_000_000
    wrpcap(str(tmp_path / "arp.pcap"), [arp])
    with pytest.raises(CaptureError, match="no SCTP or TCP flows"):
        check(tmp_path / "arp.pcap")
