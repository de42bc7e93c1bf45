"""The C plugin over every sample capture (sample-pcaps/, sample-pcaps/broken/).

- The golden output (tests/support/tshark.py format) equals the checked-in tests/golden/NAME.golden.
  Regenerate after a reviewed change with NRSACK_UPDATE_GOLDEN=1 (then diff and commit).
- The RtxQ fields after each scoreboard change equal the hand-written expected file directly
  (not only the golden file), with -o nrsack.sndbuf:<flows[].sndbuf_bytes>.
- Findings: exactly the expected rule IDs on the expected frames; clean captures raise none.
- The same results on the first and the second pass (-2) and under display filters.
"""

import os

import pytest

from support import tshark
from support.samples import (PCAPS, SAMPLES, check_findings_equal_expected, check_rtxq_equals_expected,
                             expected_of, flow_cases, golden_path, golden_sndbuf, ident)

pytestmark = pytest.mark.tshark


@pytest.fixture(scope="module")
def goldens(nrsack_c_plugin):
    cache = {}

    def get(pcap, sndbuf=None, **kw):
        key = (pcap, sndbuf, tuple(sorted(kw.items())))
        if key not in cache:
            sb = golden_sndbuf(pcap) if sndbuf is None else sndbuf
            cache[key] = tshark.golden_output(pcap, nrsack_c_plugin, sndbuf=sb, **kw)
        return cache[key]

    return get


def test_sample_captures_present():
    assert PCAPS, f"no captures in {SAMPLES}"


@pytest.mark.parametrize("pcap", PCAPS, ids=ident)
def test_golden_file(goldens, pcap):
    got = goldens(pcap)
    golden = golden_path(pcap)
    if os.environ.get("NRSACK_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(got)
    assert golden.exists(), f"{golden} missing: run with NRSACK_UPDATE_GOLDEN=1 and review it"
    assert got == golden.read_text()


@pytest.mark.parametrize("pcap,index", list(flow_cases()))
def test_rtxq_after_each_change_equals_expected_file(goldens, pcap, index):
    check_rtxq_equals_expected(goldens, pcap, index)


@pytest.mark.parametrize("pcap", [p for p in PCAPS if expected_of(p) is not None], ids=ident)
def test_findings_equal_expected(goldens, pcap):
    """Each expected finding is raised on the frame that breaks the rule (its last frame), with the
    severity the expected file gives (else rules.md's), and nothing else."""
    check_findings_equal_expected(goldens, pcap)


# the conformance vectors are many small variations of the same flows: the timelines and broken vectors suffice here
@pytest.mark.parametrize("pcap", [p for p in PCAPS if "conformance" not in p.parts], ids=ident)
def test_second_pass_and_display_filter_change_nothing(goldens, pcap):
    first = tshark.parse_golden(goldens(pcap))
    second = tshark.parse_golden(goldens(pcap, two_pass=True))
    assert second.rows == first.rows and second.expert == first.expert
    # a filter that keeps only some frames must show them exactly as the unfiltered run does
    filtered = tshark.parse_golden(goldens(pcap, display_filter="nrsack.stream && frame.number > 3"))
    by_frame = {int(r["frame.number"][0]): r for r in first.rows}
    assert filtered.rows, "the filter kept no frame"
    for row in filtered.rows:
        assert row == by_frame[int(row["frame.number"][0])]
