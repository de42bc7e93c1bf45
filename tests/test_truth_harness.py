"""One truth harness (docs/scoreboard.md): every consumer of a capture against the simulator's truth, row by row.

Captures of at least 100k frames (tests/support/truth_harness.py CASES): SCTP with TSN wrap, CMT over two
paths, TCP with sequence wrap, MPTCP over two subflows, each with SACK and NR-SACK; acks reordered by
asymmetric CMT paths; receiver-side captures (one SCTP and one TCP whose first DATA was lost); captures
cut in the middle of a loss recovery. The consumers: the analyzer, `nrsack check`, the C plugin and the
Lua plugin. Where the truth applies (sender-side captures) every consumer's rows equal it; receiver-side
captures compare the plugins with the analyzer; cut captures compare the plugins with the analyzer and
every consumer with the truth from the first ack that cum-acks all data sent before the cut.

The rows compared per case and consumer are printed and appended to build/truth-harness/rows.tsv.

KNOWN_FAILING_ON_MAIN lists what fails on main and why (the first differing row, the rule it breaks).
Those tests run and fail like the others (their ids end in "known-failing"): a red test is the right
result until the consumer is fixed. Select them with -k known_failing after merging a fix.
"""

import pytest

from support import tshark
from support import truth_harness as H

# 100k-frame simulated captures: minutes in all, so not in make test-fast
pytestmark = pytest.mark.slow

# (case, check) -> why it fails on main. check: analyzer, checker, {c,lua}-rows, {c,lua}-findings.
KNOWN_FAILING_ON_MAIN = {
}

TRUTH_CASES = [n for n, c in H.CASES.items() if c.has_truth or c.cut]
PLUGINS = ("c", "lua")


def params(names, check, marks=()):
    """pytest params of `names` for `check`, the known-failing ones named so."""
    out = []
    for name in names:
        known = (name, check) in KNOWN_FAILING_ON_MAIN
        out.append(pytest.param(name, id=f"{name}-known-failing" if known else name, marks=list(marks)))
    return out


@pytest.fixture(scope="session")
def truth_captures():
    captures = H.Captures()
    yield captures
    captures.close()


@pytest.fixture(scope="session")
def plugins(nrsack_c_plugin):
    return {"c": nrsack_c_plugin, "lua": tshark.LUA_PLUGIN}


def leading_zero_rows_dropped(rows, first_frame):
    """Rows before the simulator's first one (a TCP SYN-ACK acks the SYN) must carry an empty queue."""
    before = rows[rows.frame < first_frame]
    assert (before[["rtxq_sack_bytes", "rtxq_nr_bytes", "rtxq_whatif_bytes"]].to_numpy() == 0).all(), before
    return rows[rows.frame >= first_frame]


def references(capture):
    """[(name, rows, first frame compared)] a consumer's rows must equal: the truth on sender-side
    captures; the analyzer's rows on the others and, on a cut capture, the truth from the first ack that
    cum-acks all data sent before the cut."""
    if capture.case.has_truth:
        truth = H.truth_rows(capture)
        return [("truth", truth, None)]
    out = [("analyzer", H.analyzer_rows(capture), None)]
    if capture.case.cut:
        start = H.convergence_frame(capture)
        truth = H.truth_rows(capture)
        out.append(("truth", truth[truth.frame >= start], start))
    return out


def compare(capture, rows, consumer, refs):
    """Every reference's rows equal `rows` (from its first frame on); the first difference otherwise."""
    diffs = []
    for name, want, start in refs:
        if name == consumer:
            continue
        got = rows[rows.frame >= start] if start else leading_zero_rows_dropped(rows, want.frame.iloc[0])
        assert len(want) > 0
        H.record(capture.case.name, f"{consumer} vs {name}", len(want))
        diff = H.first_difference(want, got, name, consumer)
        if diff:
            diffs.append(diff)
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("name", list(H.CASES))
def test_capture_is_long_and_has_what_its_case_says(truth_captures, name):
    capture = truth_captures.get(name)
    case, trace = capture.case, capture.truth.trace
    assert capture.frames >= H.MIN_FRAMES
    assert trace.counters["retransmissions"] > 0 and capture.truth.complete
    if case.isn is not None:  # the serial numbers wrap around inside the transfer
        span = trace.n_units if case.protocol in ("sctp", "cmt") else case.total_bytes
        assert case.isn + span > 2**32
    if case.reorders_acks:
        assert H.stale_ack_frames(capture)
    if case.first_lost:
        first = next(f for f in trace.receiver if f[1] != H.ACK and isinstance(f[3], int))
        assert first[3] != 0, "the receiver must see later data before the first unit"
    if case.cut:
        # the capture starts inside a loss recovery: a gap is open and data above the cum ack is sacked
        rows = H.truth_rows(capture)
        last_cut = rows[rows.frame <= 0].iloc[-1]
        assert last_cut.gap_open and last_cut.rtxq_whatif_bytes < last_cut.rtxq_sack_bytes
        assert H.convergence_frame(capture) > 1
    if case.protocol in ("cmt", "mptcp"):
        assert {f[2] for f in trace.sender if f[1] != H.ACK} == {0, 1}, "data on both paths"


@pytest.mark.parametrize("name", params(TRUTH_CASES, "analyzer"))
def test_analyzer_rows_equal_the_truth(truth_captures, name):
    capture = truth_captures.get(name)
    compare(capture, H.analyzer_rows(capture), "analyzer", references(capture))
    if capture.case.has_truth:
        top, summary = H.analyzer_summary(capture), capture.truth.summary()
        assert bool(top.nr_sack) == (capture.case.ack == "nrsack")
        assert top.complete and top.vantage == "sender"
        assert top.blocking_intervals == summary["blocking_intervals"]


# 100k-frame captures through `nrsack check`: seconds each, so not in the inner loop
@pytest.mark.slow
@pytest.mark.parametrize("name", params(list(H.CASES), "checker"))
def test_checker_finds_only_the_documented_notes(truth_captures, name):
    capture = truth_captures.get(name)
    got = sorted((frame, rule, severity) for rule, severity, frame in H.checker_findings(capture))
    want = H.expected_findings(capture)
    H.record(name, "checker findings", len(want))
    assert got == want, _first_finding_difference(want, got)


def _first_finding_difference(want, got):
    extra = sorted(set(got) - set(want))
    missing = sorted(set(want) - set(got))
    return f"{len(extra)} unexpected, first {extra[:3]}; {len(missing)} missing, first {missing[:3]}"


def _plugin_params(check):
    return [pytest.param(kind, name, id=f"{kind}-{p.id}", marks=[pytest.mark.slow, pytest.mark.tshark])
            for kind in PLUGINS for p in params(list(H.CASES), f"{kind}-{check}") for name in [p.values[0]]]


@pytest.mark.parametrize("kind,name", _plugin_params("rows"))
def test_plugin_rows_equal_the_truth(truth_captures, plugins, kind, name):
    capture = truth_captures.get(name)
    compare(capture, H.plugin_run(capture, plugins[kind]).rows, f"{kind} plugin", references(capture))


@pytest.mark.parametrize("kind,name", _plugin_params("findings"))
def test_plugin_finds_only_the_documented_notes(truth_captures, plugins, kind, name):
    capture = truth_captures.get(name)
    got = sorted(H.plugin_run(capture, plugins[kind]).findings)
    want = H.expected_findings(capture)
    H.record(name, f"{kind} plugin findings", len(want))
    assert got == want, _first_finding_difference(want, got)
