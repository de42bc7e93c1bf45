"""write_json fills many flows' JSON at once (_native.fill_layout, values a few thousand at a time): it
must write exactly what json.dumps of summary_dict gives, whatever the values (numpy scalars, NaN,
infinities, big integers, text to escape, far-serial notes on paths, several key sets in a row)."""

import io
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from nrsack.analyzer import _native
from nrsack.analyzer.state import scoreboard as A
from nrsack.analyzer.views import formats


def summary(k, **extra):
    base = {key: 0 for key in A.SUMMARY_KEYS}
    base.update(id=f"{k}a", protocol="tcp", src=f"10.0.0.{k}:1", dst="10.0.0.9:80", q_s=k / 7, flow=k, side=0)
    base.update(extra)
    return base


AWKWARD = [
    dict(q_s=float("nan"), p_s=float("inf"), b_s=-float("inf"), data_bytes=2 ** 70, sndbuf_bytes=-(2 ** 63)),
    dict(src='"quoted" \\ back', dst="caf\u00e9 \u2603 \x7f\x01\n", vantage="NaN"),
    dict(data_bytes=np.int64(5), q_s=np.float64(0.1), p_s=np.float64("nan"), complete=np.bool_(True), nr_sack=True),
    dict(sndbuf_estimated=None, retransmissions=-0.0, first_frame=1e300),
    dict(far_serials_ignored=3, far_serials_first_frame=17),
]


def analysis_of(entries):
    capture = SimpleNamespace(path="/x/\u00e9.pcap", frames=12, findings=[(4, "a GEN-01 reason")],
                              rule_findings=[])
    return SimpleNamespace(capture=capture, entries=entries,
                           all_entries=lambda: (e for entry in entries for e in (entry, *entry.paths)))


def entries():
    out = [A.DirectionResult(summary(k, **AWKWARD[k % len(AWKWARD)]), {}, {}) for k in range(5000)]
    # paths (one with far serials of its own while its entry has none) between runs of plain entries
    out[3].paths = [A.DirectionResult(summary(3, id="3a.0", parent="3a", far_serials_ignored=2,
                                              far_serials_first_frame=9), {}, {}),
                    A.DirectionResult(summary(3, id="3a.1", parent="3a", q_s=float("nan")), {}, {})]
    out[4100].paths = [A.DirectionResult(summary(4100, id="4100a.0", parent="4100a"), {}, {})]
    return out


@pytest.mark.parametrize("entry_ids", [None, {"3a", "4a", "4100a", "9a"}, {"3a.0"}, set()])
def test_write_json_is_json_dumps_of_the_summary(entry_ids):
    analysis = analysis_of(entries())
    written = io.StringIO()
    formats.write_json(analysis, written, entry_ids)
    assert written.getvalue() == formats.dump_json(formats.summary_dict(analysis, entry_ids)) + "\n"
    document = json.loads(written.getvalue())
    path_note = any(f["message"].startswith("GEN-01 entry 3a.0") for f in document["findings"])
    assert path_note == (entry_ids is None or "3a.0" in entry_ids)
    if entry_ids is None:
        assert len(document["flows"]) == 5000 and document["flows"][0]["q_s"] is None


def test_fill_layout_refuses_what_it_cannot_write():
    with pytest.raises(ValueError):
        _native.fill_layout(("<", "|", ">"), [1, 2, 3], json.dumps)  # not a whole run
    with pytest.raises(ValueError):
        _native.fill_layout(("\u00e9", ">"), [1], json.dumps)
    with pytest.raises(ValueError):
        _native.fill_layout(("<", ">"), [object()], lambda v: "\u00e9")
    with pytest.raises(ZeroDivisionError):
        _native.fill_layout(("<", ">"), [object()], lambda v: 1 / 0)
    assert _native.fill_layout(("<", ">"), [math.pi, -1, "x"], json.dumps) == f"<{math.pi!r}><-1><\"x\">"


def test_write_json_writes_the_checkers_findings_as_json_dumps_would():
    """analyze --check's findings (thousands of notes, past one batch) and awkward ones: escapes, no flow,
    no frames, values of other types, written exactly as json.dumps with indent=2 lays them out."""
    analysis = analysis_of(entries()[:3])
    note = {"rule": "NR-01", "severity": "note", "flow": 2, "direction": "10.0.0.1:5000 -> 10.0.0.2:5001",
            "frames": [7], "message": "NR-SACK (cum 4294967257) although the INIT / INIT-ACK exchange was not captured"}
    odd = [{"rule": "GEN-01", "severity": "error", "frames": [], "message": 'caf\u00e9 "x" \\ \n\x01 \U0001F600'},
           {"rule": "X", "flow": None, "frames": [1, 2, 3], "ratio": 0.5, "flag": True, "big": 2 ** 70,
            "nested": {"a": [1, None]}, "mixed": [True, 2]}, {}]
    findings = [dict(note, frames=[k]) for k in range(5000)] + odd
    written = io.StringIO()
    formats.write_json(analysis, written, findings=findings)
    expected = dict(formats.summary_dict(analysis), findings=findings)
    assert written.getvalue() == formats.dump_json(expected) + "\n"
