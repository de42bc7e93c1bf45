"""A flow after a flow on the same endpoints (issue 29; decisions.md "A flow after a flow"): a TCP
SYN with a new ISN after both FINs (TIME-WAIT) or a RST, an SCTP INIT with new tags (a restart, RFC
9260 5.2.4) or after SHUTDOWN-COMPLETE. `nrsack analyze`, `nrsack check` and both plugins see two flows, each analysed in
its own sequence space: no finding on these clean transfers, every byte counted and acked."""

import json
import re

import pytest
from nrsack.analyzer import analyze
from nrsack.analyzer.views import formats
from support import tshark
from support.cli import invoke as run
from support.hostile import flows_after_flows, write_transfers
from support.tshark import LUA_PLUGIN

CAPTURES = flows_after_flows()


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    return write_transfers(tmp_path_factory.mktemp("flow-after-flow"), CAPTURES)


def sent_bytes(transfer):
    """Payload bytes each flow's opener sends for the first time: TCP 12 x 1000, SCTP 12 x 800."""
    return 12 * (1000 if transfer[0][3] == 6 else 800)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_analyze_two_flows(captures, name):
    result = run("analyze", "--format", "json", captures[name])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    senders = [f for f in summary["flows"] if f["data_bytes"]]
    assert sorted(f["flow"] for f in senders) == [0, 1]
    for flow in senders:
        assert flow["side"] == 0 and flow["complete"], flow
        assert flow["data_bytes"] == flow["acked_bytes"] == sent_bytes(CAPTURES[name])
    assert summary["findings"] == []
    # the reader tells the flows apart, so where the chunks end changes nothing (decisions.md 28)
    for frames in (1, 5):
        assert formats.summary_dict(analyze(captures[name], chunk_frames=frames))["flows"] == summary["flows"]


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_check_two_flows_no_findings(captures, name):
    result = run("check", "--format", "json", captures[name])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["findings"] == []
    junit = run("check", "--format", "junit", captures[name]).stdout
    assert set(re.findall(r'classname="[^"]*\.(flow\d+)"', junit)) == {"flow0", "flow1"}


@pytest.mark.tshark
@pytest.mark.parametrize("plugin", ["c", "lua"])
@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_plugins_two_streams(captures, name, plugin, nrsack_c_plugin):
    plugin = LUA_PLUGIN if plugin == "lua" else nrsack_c_plugin
    out = tshark.run_tshark(["-T", "fields", "-E", "occurrence=f", "-e", "nrsack.stream"], plugin, pcap=captures[name])
    assert set(out.stdout.split()) == {"0", "1"}
    assert tshark.expert_findings(captures[name], plugin) == []
