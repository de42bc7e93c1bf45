"""The Lua plugin against the shared truth: the hand-written sample-pcaps/NAME.expected.json files.

Independent of the C plugin's output: the RtxQ fields after each scoreboard change (decisions.md 5)
equal the expected file's figures (with -o nrsack.sndbuf:<flows[].sndbuf_bytes>) on exactly the
expected frames, and the findings are exactly the expected rule IDs (and severities) on the expected
frames. The checks are the C plugin's own (tests/support/samples.py), run here on the Lua plugin's
golden output, so that both plugins are held to one reading of the expected files.
"""

import functools

import pytest

from support import tshark
from support.samples import (PCAPS, check_findings_equal_expected, check_rtxq_equals_expected, expected_of,
                             flow_cases, golden_sndbuf, ident)
from support.tshark import LUA_PLUGIN

pytestmark = pytest.mark.tshark


@functools.lru_cache(maxsize=None)
def lua_golden(pcap, sndbuf=None):
    """The Lua plugin's golden output, called as the C tests call their `goldens` fixture."""
    return tshark.golden_output(pcap, LUA_PLUGIN, sndbuf=golden_sndbuf(pcap) if sndbuf is None else sndbuf)


def test_expected_files_present():
    assert any(expected_of(p) for p in PCAPS), "no sample capture has an expected file"


@pytest.mark.parametrize("pcap,index", list(flow_cases()))
def test_lua_rtxq_after_each_change_equals_expected_file(pcap, index):
    check_rtxq_equals_expected(lua_golden, pcap, index)


@pytest.mark.parametrize("pcap", [p for p in PCAPS if expected_of(p) is not None], ids=ident)
def test_lua_findings_equal_expected(pcap):
    check_findings_equal_expected(lua_golden, pcap)
