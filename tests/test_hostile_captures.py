"""The hostile-capture suite : every capture of tests/support/hostile.py through
`nrsack analyze` (JSON, which streams, and --stream with tables), and `nrsack check`: the exit codes
the commands document (analyze 0 / 2, check 0 / 1 / 2), one line on stderr for an error, no
traceback, and every figure within its bounds (0 <= p <= b <= q, bytes never negative nor more than
the capture's frames can hold)."""

import json

import pytest
from support.cli import invoke as run
from support.hostile import check_bounds, frame_bytes_bound, build_all


CAPTURES = {name: (data, expectation) for name, data, expectation in build_all()}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    out = {}
    for name, (data, expectation) in CAPTURES.items():
        path = folder / f"{name}.pcap"
        path.write_bytes(data)
        out[name] = (path, expectation)
    return out


def test_there_are_at_least_80_captures():
    assert len(CAPTURES) >= 80


def analyzed(hostile, name, *options):
    path, expectation = hostile[name]
    result = run("analyze", "--format", "json", *options, path)
    if expectation == "unusable":
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("nrsack: error:"), result.output
        return None
    assert result.exit_code == 0, result.output
    text = result.stdout
    summary = json.loads(text[text.index("{"):])
    frame_bound = frame_bytes_bound(path)
    for flow in summary["flows"]:
        # every level, the MPTCP data level too (decisions 70), counts payload the frames carried
        check_bounds(flow, frame_bound)
        for path_entry in flow.get("paths", []):
            check_bounds(path_entry, frame_bound)
    return summary


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_analyze_json(hostile, name):
    analyzed(hostile, name)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_analyze_stream_tables_match_json(hostile, name, tmp_path):
    summary = analyzed(hostile, name, "--stream", "--out", tmp_path)
    if summary is not None:
        assert summary == analyzed(hostile, name)
        assert (tmp_path / "rtxq.csv").exists() and (tmp_path / "blocking.csv").exists()


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_check(hostile, name):
    path, expectation = hostile[name]
    result = run("check", "--format", "json", path)
    if expectation == "unusable":
        assert result.exit_code == 2, result.output
        return
    text = result.stdout
    findings = json.loads(text[text.index("{"):])["findings"]
    errors = [f for f in findings if f["severity"] == "error"]
    assert result.exit_code == (1 if errors else 0), result.output
