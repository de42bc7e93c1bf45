"""An SCTP NR-SACK whose counts need far more bytes than the chunk has (nplab packetdrill's
nr-sack-too-short-2: 786,440 bytes of blocks in a 20-byte chunk) is unreadable as a whole: nothing of it
is fed (decisions.md 40), so `nrsack check` reports NR-05 alone, as both plugins do, and no ack rule
(NR-09 on its cum ack beyond all sent, NR-04 / NR-07 after it) judges its fields; `nrsack analyze`'s
figures are those of the transfer without it."""

import json

import pytest
from support import tshark
from support.cli import invoke
from support.hostile import nr_sack_too_short, sctp_transfer, write_transfers
from support.tshark import LUA_PLUGIN


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    return write_transfers(tmp_path_factory.mktemp("too-short"), {"too-short": nr_sack_too_short(),
                                                                  "clean": sctp_transfer()})


def test_check_reports_nr05_alone(captures):
    result = invoke("check", "--format", "json", captures["too-short"])
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["frames"]) for f in findings] == [("NR-05", [7])], findings
    assert "need 786440 bytes, chunk length is 20" in findings[0]["message"]


def test_analyze_feeds_nothing_of_it(captures):
    summaries = {}
    for name, path in captures.items():
        result = invoke("analyze", "--format", "json", path)
        assert result.exit_code == 0, result.output
        summaries[name] = json.loads(result.stdout)
    flows = {name: [{k: v for k, v in f.items() if k != "first_frame"} for f in s["flows"]]
             for name, s in summaries.items()}
    # the malformed ack is frame 7 and moves later frames by one: the figures are the clean transfer's
    assert flows["too-short"] == flows["clean"]


@pytest.mark.tshark
@pytest.mark.parametrize("plugin", ["c", "lua"])
def test_plugins_report_nr05_alone(captures, plugin, nrsack_c_plugin):
    found = tshark.expert_findings(captures["too-short"], LUA_PLUGIN if plugin == "lua" else nrsack_c_plugin)
    assert found == [(7, "NR-05")]
