"""Views of an Analysis: the JSON summary of metrics.md, files, rich table (the RtxQ figure is the
dashboard's: nrsack.dashboard.figures).

Views read results; they never re-derive figures (architecture.md).
"""

import json
from json.encoder import encode_basestring_ascii as _quote  # json.dumps's own, compiled
import math
from pathlib import Path
import sys

import numpy as np

from nrsack.analyzer import _native
from nrsack.analyzer.state import scoreboard as A


def _ordered(summary):
    return {k: _plain(summary[k]) for k in A.summary_order(summary)}


def _plain(value):
    """numpy / pandas scalars -> JSON values (NaN and NA -> null)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool:  # most values: nothing to do
        return value
    # pandas.NA can only come from a DataFrame, so only when pandas is loaded (the summary alone never loads it)
    if value is None or value is getattr(sys.modules.get("pandas"), "NA", None):
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    return value


def summary_dict(analysis, entry_ids=None) -> dict:
    """The machine-readable summary (metrics.md): flows, each with the contract's keys, paths nested."""
    return {"capture": analysis.capture.path, "frames": analysis.capture.frames,
            "flows": list(_flow_items(analysis, entry_ids)), "findings": summary_findings(analysis, entry_ids)}


def _flow_items(analysis, entry_ids):
    for entry in analysis.entries:
        if entry_ids is not None and entry.summary["id"] not in entry_ids:
            continue
        item = _ordered(entry.summary)
        if entry.paths:
            item["paths"] = [_ordered(p.summary) for p in entry.paths]
        yield item


def write_json(analysis, out, entry_ids=None, findings=None):
    """dump_json(summary_dict(analysis, entry_ids)) written to `out` a few thousand flows at a time: a
    million flows' summary is never one document in memory. Flows with the same keys are filled into
    the indented layout by one compiled call (_native.fill_layout) per batch."""
    out.write(f'{{\n  "capture": {json.dumps(analysis.capture.path)},\n  "frames": {json.dumps(analysis.capture.frames)},'
              f'\n  "flows": ')
    far = []  # (frame, entry id, count) of the entries that left far serial numbers out: for the findings
    opened = False
    for rows in summary_rows(analysis.entries):
        text = _indented_rows(rows, far, entry_ids)
        if text:
            out.write(text if opened else "[" + text[1:])
            opened = True
    out.write("\n  ]" if opened else "[]")
    if findings is None:  # analyze --check passes the checker's, which include the reader's GEN ones
        findings = summary_findings(analysis, entry_ids, far)
    out.write(',\n  "findings": ')
    if not findings:
        out.write("[]\n}\n")
        return
    # json.dumps(findings, indent=2) nested one level, written a batch at a time: indent= takes json's Python
    # encoder, which cost three times the analysis when an NR-01 note stands on every ack (analyze --check)
    opening = "[\n    "
    for first in range(0, len(findings), 4096):
        out.write(opening + ",\n    ".join(_indented_finding(f).replace("\n", "\n    ")
                                         for f in findings[first:first + 4096]))
        opening = ",\n    "
    out.write("\n  ]\n}\n")


def _indented_finding(finding):
    """json.dumps(finding, indent=2), its strings and ints written by json's compiled quoting (frames: a list
    of ints); anything else by json.dumps."""
    items = []
    for key, value in finding.items():
        kind = type(value)
        if kind is str:
            text = _quote(value)
        elif kind is int:
            text = str(value)
        elif value is None:
            text = "null"
        elif kind is list and all(type(v) is int for v in value):
            text = "[\n    " + ",\n    ".join(map(str, value)) + "\n  ]" if value else "[]"
        else:
            text = json.dumps(value, indent=2).replace("\n", "\n  ")
        items.append(f"  {_quote(key)}: {text}")
    return "{\n" + ",\n".join(items) + "\n}" if items else "{}"


def summary_rows(entries, at_once=4096):
    """The entries as lists of (keys, values, paths' (keys, values)) (scoreboard.summary_row's): the spilled
    ones as they were spilled, the others made here."""
    if hasattr(entries, "rows"):
        yield from entries.rows()
        return
    rows = []
    for entry in entries:
        rows.append((*A.summary_row(entry.summary), [A.summary_row(p.summary) for p in entry.paths]))
        if len(rows) == at_once:
            yield rows
            rows = []
    yield rows


_PIECES = {}  # (keys, with paths) -> the layout around the values, for _native.fill_layout


def _pieces(keys, paths) -> tuple:
    """json.dumps(item, indent=2) of a flow item as it sits in the flows list (4 more spaces a line), cut
    where its values go; each item begins ",\n"; with paths it ends where their list goes."""
    pieces = _PIECES.get((keys, paths))
    if pieces is None:
        names = [json.dumps(k) for k in keys]
        pieces = _PIECES[keys, paths] = tuple([f",\n    {{\n      {names[0]}: "] + [f",\n      {n}: " for n in names[1:]]
                                               + [',\n      "paths": ' if paths else "\n    }"])
    return pieces


def _indented_rows(rows, far, entry_ids) -> str:
    """The flow items of `rows` (summary rows) whose id entry_ids holds (None: all), each after ",\n";
    notes in `far` the far serials every entry and path reports (the findings filter them)."""
    parts, run, run_keys = [], [], None
    for keys, values, paths in rows:
        _note_far(keys, values, paths, far)
        if entry_ids is not None and values[0] not in entry_ids:
            continue
        if keys is not run_keys or paths:
            if run:
                parts.append(_native.fill_layout(_pieces(run_keys, False), run, _json_value))
            run, run_keys = [], keys
        if paths:  # rare (paths, subflows): their list by the generic encoder
            parts.append(_native.fill_layout(_pieces(keys, True), list(values), _json_value))
            parts.append(json.dumps([{k: _plain(v) for k, v in zip(*path)} for path in paths], indent=2)
                         .replace("\n", "\n      ") + "\n    }")
            run_keys = None
        else:
            run += values
    if run:
        parts.append(_native.fill_layout(_pieces(run_keys, False), run, _json_value))
    return "".join(parts)


def _note_far(keys, values, paths, far):
    """Appends to `far` the _far_note of a summary row (summary_row's) and of its paths' that have one."""
    for summary_keys, summary_values in ((keys, values), *paths):
        if "far_serials_ignored" in summary_keys:
            note = _far_note(dict(zip(summary_keys, summary_values)))
            if note:
                far.append(note)


def far_notes(rows, far):
    """Appends to `far` the _far_note of the entries and paths of `rows` (summary rows) that have one."""
    last = noted = None
    for keys, values, paths in rows:
        if keys is not last:  # (a batch's rows mostly share one keys tuple)
            last, noted = keys, "far_serials_ignored" in keys
        if noted or paths:
            _note_far(keys, values, paths, far)


def _far_note(summary):
    """(first frame, entry id, count) of an entry that left far serial numbers out, else None."""
    count = summary.get("far_serials_ignored")
    return (summary["far_serials_first_frame"], summary["id"], count) if count else None


def _json_value(value) -> str:
    """The JSON text of a value fill_layout leaves to Python (numpy and pandas scalars, big ints, escaped text)."""
    return json.dumps(_plain(value))


def summary_findings(analysis, entry_ids, far=None):
    """far: the (frame, entry id, count) of the entries that left far serial numbers out, when the caller
    went through the entries already (else found here)."""
    findings = [{"rule": "GEN-01", "severity": "error", "frames": [frame], "message": f"GEN-01 {reason}"}
                for frame, reason in analysis.capture.findings]
    findings += [general_finding(*found) for found in analysis.capture.rule_findings if found[1].startswith("GEN-")]
    if far is None and hasattr(analysis, "far_notes"):  # (a streamed run's: read as rows, not an object an entry)
        far = analysis.far_notes()
    elif far is None:
        far = [note for note in (_far_note(entry.summary) for entry in analysis.all_entries()) if note]
    if far:
        # here: the rules package (the checker's) costs start-up, and only this note's text comes from it
        from nrsack.analyzer.rules.inputs import far_reason
    for frame, entry_id, count in far:
        if entry_ids is None or entry_id in entry_ids:
            findings.append(general_finding(frame, "GEN-01.note", f"entry {entry_id}: {far_reason(count)}"))
    findings.sort(key=lambda f: f["frames"][0])
    return findings


def general_finding(frame, rule_id, reason):
    """A reader's GEN-01 / GEN-02 finding (".note": the note variant) as the JSON summary lists it."""
    base, _, note = rule_id.partition(".")
    severity = "note" if note else "error" if base == "GEN-01" else "warning"
    return {"rule": base, "severity": severity, "frames": [frame], "message": f"{base} {reason}"}


def selected_ids(analysis, flow_filter):
    """Entry ids matching --flow (None: no filter)."""
    if flow_filter is None:
        return None
    return {e.summary["id"] for e in analysis.all_entries() if id_matches(e.summary["id"], flow_filter)}


def id_matches(entry_id, flow_filter) -> bool:
    """--flow names an entry id ("0a", "0a.1") or a flow number ("0")."""
    return (entry_id == flow_filter or entry_id.rstrip("ab").split(".")[0] == flow_filter
            or entry_id.startswith(flow_filter + "."))


def _select(frame, ids):
    return frame if ids is None else frame[frame["flow"].astype(str).isin(ids)]


def write_tables(analysis, out_dir, fmt, ids=None):
    """summary, rtxq and blocking tables as CSV or Parquet (metrics.md, Files)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = analysis.summary
    if ids is not None:
        summary = summary[summary["id"].isin(ids)]
    tables = {"summary": summary, "rtxq": _select(analysis.rtxq, ids),
              "blocking": _select(analysis.blocking, ids)}
    written = []
    for name, table in tables.items():
        path = out / f"{name}.{fmt}"
        write_table(table, path, fmt)
        written.append(path)
    return written


def write_table(frame, path, fmt):
    """One table as a CSV or Parquet file (metrics.md, Files)."""
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False, use_dictionary=dictionary_columns(frame.columns))


def dictionary_columns(names) -> list:
    """The Parquet columns worth a dictionary: not times and frame numbers, where every value differs
    (a dictionary there is built, outgrows its limit and is dropped: 11 % of the writing time)."""
    return [name for name in names if not name.endswith(("_s", "_ns", "frame"))]


# What the table's headers mean (`nrsack analyze --help` shows it; metrics.md defines each figure).
TABLE_LEGEND = (
    ("id", "sender direction: flow number, a/b for its direction, .N a path or subflow"),
    ("NR", "NR-SACKs negotiated or seen"),
    ("q s", "transfer time q in seconds (* or (incomplete): to the end of the capture)"),
    ("p/q", "time blocked during loss recovery (gap open) / q"),
    ("b/q", "time blocked / q"),
    ("B bytes", "send buffer B in payload bytes (est.: estimated from the waits for acks, `nrsack docs metrics`; "
                 "never full, or cannot tell and why)"),
    ("max rtxq nr", "largest RtxQ of a sender honouring NR-SACKs, bytes"),
    ("T b/s", "throughput: acked payload bits / q"),
    ("vantage", "where the capture was taken: sender, receiver, middle or unknown"),
)
NOT_AVAILABLE = "n/a"


def ratio_text(value) -> str:
    """p/q or b/q as the tables show it: None is a figure the capture cannot support."""
    return "cannot tell" if value is None else f"{value:.4f}"


def buffer_text(summary, reason=True) -> str:
    """The send buffer B as the tables show it: given, estimated, or the verdict (and its reason)."""
    if summary["sndbuf_bytes"] is not None:
        return f"{summary['sndbuf_bytes']}{' est.' if summary['sndbuf_estimated'] else ''}"
    verdict = summary.get("sndbuf_verdict")
    if verdict == "never":
        return "never full"
    return f"{verdict}: {summary.get('sndbuf_reason')}" if reason else f"{verdict}"


def fixed(value, digits) -> str:
    """A figure to `digits` decimals; None (a figure the capture cannot support) as n/a."""
    return NOT_AVAILABLE if value is None else f"{value:.{digits}f}"


def _shown_summaries(analysis, ids):
    return [e.summary for e in analysis.all_entries() if ids is None or e.summary["id"] in ids]


def rich_table(analysis, ids=None, width=200, caption=None):
    """The summary table for a console `width` columns wide: one line per entry when it fits; else a
    compact table of the figures with each entry's endpoints and vantage listed under it, so that no
    value is cut (rich would shorten addresses and q to "192.…" and "0.30…")."""
    from rich.console import Console, Group
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    title = f"{analysis.capture.path}: {analysis.capture.frames} frames"
    summaries = _shown_summaries(analysis, ids)
    wide = Table(title=title, caption=caption)
    for header in ("id", "sender -> receiver", "NR", "q s", "p/q", "b/q", "B bytes", "max rtxq nr", "T b/s",
                   "vantage"):
        wide.add_column(header, no_wrap=True)
    for s in summaries:
        wide.add_row(
            ("  " if s.get("parent") else "") + s["id"], f"{s['protocol']} {s['src']} -> {s['dst']}",
            "yes" if s["nr_sack"] else "no", fixed(s["q_s"], 4) + ("" if s["complete"] else " (incomplete)"),
            ratio_text(s["p_over_q"]), ratio_text(s["b_over_q"]), buffer_text(s), f"{s['max_rtxq_nr_bytes']}",
            fixed(s["throughput_bps"], 0), s["vantage"])
    unbounded = Console(width=1 << 16)  # measures the table's natural width, not one clamped to the console
    if Measurement.get(unbounded, unbounded.options, wide).maximum <= width:
        return wide
    compact = Table(title=title, caption=caption)
    for header in ("id", "NR", "q s", "p/q", "b/q", "B bytes", "max rtxq nr", "T b/s"):
        compact.add_column(header, no_wrap=header != "max rtxq nr")
    where = []
    for s in summaries:
        entry = ("  " if s.get("parent") else "") + s["id"]
        compact.add_row(entry, "yes" if s["nr_sack"] else "no", fixed(s["q_s"], 4) + ("" if s["complete"] else "*"),
                        fixed(s["p_over_q"], 4), fixed(s["b_over_q"], 4), buffer_text(s, reason=False),
                        f"{s['max_rtxq_nr_bytes']}", fixed(s["throughput_bps"], 0))
        why = s.get("sndbuf_reason") if s["sndbuf_bytes"] is None and s.get("sndbuf_verdict") != "never" else None
        where.append(Text(f"{entry}: {s['protocol']} {s['src']} -> {s['dst']}, vantage {s['vantage']}"
                          + ("" if s["complete"] else ", incomplete") + (f"; B: {why}" if why else "")))
    return Group(compact, *where)


def legend_text() -> str:
    """The table's headers explained, one per line (for --help)."""
    return "\n".join(f"{header}: {meaning}" for header, meaning in TABLE_LEGEND)


def compare_dict(run_a: dict, run_b: dict) -> dict:
    """Throughput and gain (metrics.md) of run A over run B, pairing sender directions in order."""
    pairs = []
    for a, b in zip(run_a["flows"], run_b["flows"]):
        pairs.append({"a": a["id"], "b": b["id"], "src": a["src"], "dst": a["dst"],
                      "throughput_a_bps": a["throughput_bps"], "throughput_b_bps": b["throughput_bps"],
                      "gain_percent": A.gain(a["throughput_bps"], b["throughput_bps"]),
                      "p_over_q_a": a["p_over_q"], "p_over_q_b": b["p_over_q"],
                      "sndbuf_a_bytes": a.get("sndbuf_bytes"), "sndbuf_b_bytes": b.get("sndbuf_bytes"),
                      "sndbuf_a_estimated": a.get("sndbuf_estimated"), "sndbuf_b_estimated": b.get("sndbuf_estimated"),
                      "sndbuf_a_verdict": a.get("sndbuf_verdict"), "sndbuf_b_verdict": b.get("sndbuf_verdict"),
                      "sndbuf_a_reason": a.get("sndbuf_reason"), "sndbuf_b_reason": b.get("sndbuf_reason")})
    return {"run_a": run_a["capture"], "run_b": run_b["capture"], "pairs": pairs}


def estimated_sndbuf_note(pairs) -> str | None:
    """One line naming the entries of a comparison whose send buffer B was estimated, not given (p/q
    depends on B: the reader must know), or None when every B was given."""
    named = [f"run {run.upper()} {p[run]} {_estimated_text(p, run)}"
             for p in pairs for run in ("a", "b") if p[f"sndbuf_{run}_estimated"]]
    if not named:
        return None
    return f"send buffer estimated from the capture (--sndbuf gives it): {', '.join(named)}"


def _estimated_text(pair, run) -> str:
    if pair[f"sndbuf_{run}_bytes"] is not None:
        return f"{pair[f'sndbuf_{run}_bytes']} bytes"
    return buffer_text({"sndbuf_bytes": None, "sndbuf_verdict": pair[f"sndbuf_{run}_verdict"],
                        "sndbuf_reason": pair[f"sndbuf_{run}_reason"]})


def dump_json(obj) -> str:
    return json.dumps(obj, indent=2)
