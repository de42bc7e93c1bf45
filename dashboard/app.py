"""The Dash app: capture and flow picker, KPIs, RtxQ view, ladder view, findings, compare, export.

Every callback is a method of `Dashboard` that takes and returns plain values, so the tests call
them directly on real analyses; `create_app` registers them with Dash. The views read the
analyzer's results (Analysis, its entries and tables); they do not compute figures of their own.
"""

import functools
import itertools
import json
import sys
import threading
import traceback
from pathlib import Path

import dash
import numpy as np
import pandas as pd
from dash import Input, Output, State, dash_table, dcc, html
from werkzeug.exceptions import HTTPException
from werkzeug.serving import make_server

from nrsack.analyzer import CaptureError
from nrsack.analyzer.views import formats
from nrsack.dashboard import figures as FIG, ladder as L, library as LIB

ASSETS = Path(__file__).resolve().parent / "assets"
# packets shown before / after a finding's frame or a clicked time in the ladder
LADDER_BEFORE, LADDER_AFTER = 8, 24
CONTEXT_PACKETS = 3  # shown around any ladder window
ZOOM_PACKETS = 4  # the RtxQ view zooms to this many packets either side of a finding's frame
# sender directions listed in the flows and compare tables (a flood's 200,000 would not reach a browser whole)
LISTED_ENTRIES = 1000
EMPTY_FIGURE = {"data": [], "layout": {"template": "plotly_white", "height": 200,
                                       "xaxis": {"visible": False}, "yaxis": {"visible": False}}}
GRAPH_CONFIG = {"displaylogo": False, "scrollZoom": True,
                "toImageButtonOptions": {"format": "png", "filename": "nrsack-rtxq", "scale": 2}}
TABLE_STYLE = dict(
    style_table={"overflowX": "auto"},
    style_cell={"fontFamily": FIG.FONT, "fontSize": 13, "padding": "4px 8px", "textAlign": "left",
                "whiteSpace": "nowrap"},
    style_header={"fontWeight": 600, "backgroundColor": "#f2f4f7", "borderBottom": "2px solid #d0d5dd"},
    style_data_conditional=[{"if": {"state": "active"}, "backgroundColor": "#e8f1fb", "border": "1px solid #1f77b4"}],
)


def parse_sndbuf(text):
    """The B field: empty -> None (estimated); a positive integer of bytes; else ValueError."""
    text = (text or "").strip() if isinstance(text, str) else text
    if text in ("", None):
        return None
    value = int(text)
    if value <= 0:
        raise ValueError("B must be a positive number of bytes")
    return value


def _fmt_bytes(n):
    return f"{int(n):,} B"


def _ratio(value):
    """A table cell of p/q or b/q: rounded, or the text a figure the capture cannot support shows."""
    return formats.ratio_text(None) if value is None or pd.isna(value) else round(float(value), 4)


def _count(value):
    """A table cell of a count the capture may not support (blocking intervals)."""
    return formats.ratio_text(None) if value is None or pd.isna(value) else int(value)


def _kpi(label, value, hint=None):
    return html.Div([html.Div(label, className="kpi-label"), html.Div(value, className="kpi-value")]
                    + ([html.Div(hint, className="kpi-hint")] if hint else []), className="kpi")


def flow_times(analysis, entry):
    """Capture times (s) of the events of the entry's flow (an in-memory Analysis: a flow_view's)."""
    return analysis.capture.ev["time_ns"][analysis.flow_of == entry.summary["flow"]] / 1e9


def listed_ids(analysis):
    """The ids of the first LISTED_ENTRIES sender directions (with their paths)."""
    return {e.summary["id"] for top in itertools.islice(analysis.entries, LISTED_ENTRIES) for e in (top, *top.paths)}


class Dashboard:
    def __init__(self, library: LIB.Library, decimate=True, webgl=None):
        self.library = library
        # both for the benchmark only: decimate=False sends every point (the baseline); webgl forces
        # the trace type (None: by point count, figures.WEBGL_MIN_POINTS)
        self.decimate = decimate
        self.webgl = webgl

    # ---- data access -------------------------------------------------------------------------
    def _entry(self, selection):
        analysis = self.library.analysis(selection["capture"], selection.get("sndbuf"))
        return analysis, analysis.entry(selection["entry"])

    # ---- capture and flows -------------------------------------------------------------------
    def upload(self, contents, filename):
        """-> (capture options, chosen capture or no_update, message, message class)."""
        if not contents:
            return dash.no_update, dash.no_update, "", "message"
        try:
            capture, analysis = self.library.upload_analysed(contents, filename)
        except LIB.UploadRefused as refusal:
            return dash.no_update, dash.no_update, str(refusal), "message error"
        read = analysis.capture
        if read.truncated:  # as `nrsack analyze`: what came before the cut is whole and analysed
            return (self.library.options(), capture.id, f"{capture.name}: uploaded; cut short, analysed up to frame "
                    f"{read.frames} (its last whole record)", "message warning")
        return self.library.options(), capture.id, f"{capture.name}: uploaded and analysed", "message ok"

    def load_capture(self, capture_id, sndbuf_text):
        """-> (flows table rows, active cell, message)."""
        if not capture_id:
            return [], None, "Pick a capture."
        try:
            sndbuf = parse_sndbuf(sndbuf_text)
        except ValueError:
            return [], None, f"B must be a whole number of bytes, not {sndbuf_text!r}."
        try:
            analysis = self.library.analysis(capture_id, sndbuf)
        except (CaptureError, KeyError) as error:
            return [], None, f"Cannot analyse this capture: {error}"
        rows = []
        for entry in itertools.islice(analysis.all_entries(), LISTED_ENTRIES):
            s = entry.summary
            rows.append({"id": s["id"], "protocol": s["protocol"] + (" (path)" if s.get("level") == "path" else
                                                                     " (subflow)" if s.get("level") == "subflow" else ""),
                         "sender → receiver": f"{s['src']} → {s['dst']}", "NR-SACK": "yes" if s["nr_sack"] else "no",
                         "bytes": int(s["data_bytes"]), "duration s": round(float(s["q_s"]), 6),
                         "p/q": _ratio(s["p_over_q"]), "blocked": _count(s["blocking_intervals"]),
                         "capture": capture_id, "sndbuf": sndbuf})
        name = self.library.captures[capture_id].name
        listed = f"{len(rows)} sender direction(s)"
        if analysis.entry_count > len(rows):
            listed = f"{analysis.entry_count} sender direction(s), the first {len(rows)} listed"
        message = f"{name}: {analysis.capture.frames} frames, {listed}. Click a row."
        active = {"row": 0, "column": 0, "column_id": "id", "row_id": rows[0]["id"]} if rows else None
        return rows, active, message

    def load_findings(self, capture_id):
        """-> (findings rows, note). A callback of its own: checking a big capture takes longer than
        analysing it, and the RtxQ view need not wait for it."""
        if not capture_id:
            return [], ""
        try:
            table, source = self.library.findings(capture_id)
        except (CaptureError, KeyError) as error:
            return [], f"Cannot check this capture: {error}"
        findings = [{"id": i, "rule": r.rule, "severity": r.severity, "frames": ", ".join(map(str, r.frames)),
                     "message": r.message, "direction": r.direction} for i, r in enumerate(table.itertuples())]
        if source == "checker":
            note = (f"{len(findings)} finding(s) from the conformance checker (nrsack check). "
                    "Click one to see its last (breaking) frame.")
        else:
            note = (f"{len(findings)} malformed-packet finding(s) from the reader. The conformance checker "
                    "(nrsack check) is not installed in this build, so protocol rules are not checked here.")
        return findings, note

    def select_entry(self, active_cell, rows):
        """Rows carry an "id", so a cell names its row (row_id) whatever page or sort is shown."""
        chosen = [r for r in rows or [] if active_cell and r["id"] == active_cell.get("row_id")]
        if not chosen:
            return None
        return {"capture": chosen[0]["capture"], "sndbuf": chosen[0]["sndbuf"], "entry": chosen[0]["id"]}

    # ---- KPIs ----------------------------------------------------------------------------------
    def kpis(self, selection):
        """-> (KPI cards with the per path / subflow table, blocking interval rows)."""
        if not selection:
            return html.Div("Pick a capture and a flow.", className="hint"), []
        analysis, entry = self._entry(selection)
        s = entry.summary
        series = FIG.series(entry)
        table, blocking_table = series.rtxq, series.blocking
        peak_sacked = int(table["sacked_bytes"].max()) if len(table) else 0
        saved_hint = (f"NR-SACKs freed up to {_fmt_bytes(table['nr_acked_bytes'].max() if len(table) else 0)} above the cum ack"
                      if s["nr_sack"] else
                      f"SACKed data held: up to {_fmt_bytes(peak_sacked)}; NR-SACKs would have freed it")
        cards = [
            _kpi("p/q (blocked during loss recovery)", formats.ratio_text(s["p_over_q"]),
                 f"p = {s['p_s']:.4f} s" if s["p_s"] is not None else s["sndbuf_reason"]),
            _kpi("b/q (blocked)", formats.ratio_text(s["b_over_q"]),
                 f"b = {s['b_s']:.4f} s" if s["b_s"] is not None else s["sndbuf_reason"]),
            _kpi("q (transfer time)", f"{s['q_s']:.4f} s", "complete" if s["complete"] else "incomplete: to capture end"),
            _kpi("throughput", f"{s['throughput_bps'] / 1e3:,.1f} kb/s", _fmt_bytes(s["acked_bytes"]) + " acked"),
            _kpi("send buffer B", _fmt_bytes(s["sndbuf_bytes"]) if s["sndbuf_bytes"] is not None else s["sndbuf_verdict"],
                 s["sndbuf_reason"] or s["sndbuf_source"]),
            _kpi("blocking intervals", str(_count(s["blocking_intervals"])),
                 s["sndbuf_reason"] if s["blocking_intervals"] is None
                 else f"{int(blocking_table['gap_open'].sum())} during gap_open"),
            _kpi("what NR-SACK saves", _fmt_bytes(max(s["max_rtxq_sack_bytes"] - s["max_rtxq_whatif_bytes"], peak_sacked)),
                 saved_hint),
            _kpi("vantage point", str(s["vantage"]), "capture next to the " + str(s["vantage"])
                 if s["vantage"] in ("sender", "receiver") else "RtxQ shifted by one-way delays"),
        ]
        paths = [{"id": p.summary["id"], "level": p.summary["level"],
                  "path": f"{p.summary['src']} → {p.summary['dst']}", "p/q": _ratio(p.summary["p_over_q"]),
                  "b/q": _ratio(p.summary["b_over_q"]), "throughput kb/s": round(p.summary["throughput_bps"] / 1e3, 1),
                  "bytes": int(p.summary["data_bytes"]), "vantage": p.summary["vantage"]} for p in entry.paths]
        blocking = [{"id": i, "#": i + 1, "start s": round(a - series.origin_s, 6), "end s": round(b - series.origin_s, 6),
                     "duration ms": round(d * 1e3, 3), "RtxQ at start": int(r), "gap_open": "yes" if g else "no",
                     "frames": f"{f0}-{'' if pd.isna(f1) else int(f1)}"}
                    for i, (a, b, d, r, g, f0, f1) in enumerate(zip(
                        blocking_table["start_s"], blocking_table["end_s"], blocking_table["duration_s"],
                        blocking_table["rtxq_bytes_at_start"], blocking_table["gap_open"],
                        blocking_table["start_frame"], blocking_table["end_frame"].astype(object)))]
        children = [html.Div(cards, className="kpis")]
        if paths:
            children += [html.H4("Per path / subflow" if s["protocol"] == "sctp" else "Per subflow", className="sub"),
                         dash_table.DataTable(columns=[{"name": c, "id": c} for c in PATH_COLUMNS], data=paths, **TABLE_STYLE)]
        return html.Div(children), blocking

    # ---- focus: where the RtxQ and ladder views look --------------------------------------------
    def window_around(self, analysis, entry, t_abs, t_end=None, before=LADDER_BEFORE, after=LADDER_AFTER):
        """(t0, t1) capture times from `before` packets of the flow before t_abs to `after` packets
        after t_end (default t_abs). analysis, entry: a flow_view's."""
        times = flow_times(analysis, entry)
        i = int(np.searchsorted(times, t_abs, "left"))
        j = int(np.searchsorted(times, t_abs if t_end is None else t_end, "right")) - 1
        return float(times[max(i - before, 0)]), float(times[min(max(j, 0) + after, len(times) - 1)])

    def focus_on_blocking(self, selection, active_cell):
        if not selection or not active_cell:
            return dash.no_update
        _, entry = self._entry(selection)
        index = int(active_cell["row_id"])
        row = FIG.series(entry).blocking.iloc[index]
        start, end = float(row["start_s"]), float(row["end_s"])
        pad = max(end - start, 1e-4)
        return {"t0": start, "t1": end, "zoom": [start - pad, end + pad], "what": f"blocking interval {index + 1}"}

    def focus_on_finding(self, selection, active_cell, findings):
        chosen = [f for f in findings or [] if active_cell and f["id"] == active_cell.get("row_id")]
        if not selection or not chosen:
            return dash.no_update
        analysis, entry = self._entry(selection)
        finding = chosen[0]
        frame = int(str(finding["frames"]).split(",")[-1])  # the breaking frame is the last
        t = analysis.frame_time(frame)
        if t is None:
            return dash.no_update
        view, flow_entry = analysis.flow_view(entry)
        t0, t1 = self.window_around(view, flow_entry, t)
        times = flow_times(view, flow_entry)
        i = int(np.searchsorted(times, t))
        # ZOOM_PACKETS typical packet spacings either side (the median ignores an idle RTO wait)
        spacing = np.median(np.diff(times[max(i - ZOOM_PACKETS, 0):i + ZOOM_PACKETS + 1])) if len(times) > 1 else 0
        half = max(float(spacing) * ZOOM_PACKETS, 1e-4)
        what = f"{finding['rule']} at frame {frame}"
        here = f"{entry.summary['src']} -> {entry.summary['dst']}"
        if finding.get("direction") and finding["direction"] != here:
            # the views show the selected sender direction at the finding's time
            what += f" (a finding of {finding['direction']}: pick that sender direction for its own RtxQ)"
        return {"t0": t0, "t1": t1, "zoom": [t - half, t + half], "frame": frame, "at": t, "what": what}

    def focus_on_click(self, selection, click):
        """A click on the RtxQ graph: the blocking interval under it, else the packets around it."""
        if not selection or not click or not click.get("points"):
            return dash.no_update
        analysis, entry = self._entry(selection)
        origin = FIG.series(entry).origin_s
        t = origin + float(click["points"][0]["x"])
        b = FIG.series(entry).blocking
        inside = b[(b["start_s"] <= t) & (b["end_s"] >= t)]
        if len(inside):
            row = inside.iloc[0]
            return {"t0": float(row["start_s"]), "t1": float(row["end_s"]), "zoom": None,
                    "what": f"blocking interval {int(inside.index[0]) + 1}"}
        t0, t1 = self.window_around(*analysis.flow_view(entry), t)
        return {"t0": t0, "t1": t1, "zoom": None, "what": f"t = {t - origin:.6f} s"}

    # ---- RtxQ view -----------------------------------------------------------------------------
    def rtxq_view(self, selection, focus, relayout, trigger):
        """trigger: which input fired ("selection", "focus" or "relayout")."""
        if not selection:
            return EMPTY_FIGURE
        _, entry = self._entry(selection)
        origin = FIG.series(entry).origin_s
        x_range = None
        if trigger == "focus" and focus and focus.get("zoom"):
            x_range = (focus["zoom"][0] - origin, focus["zoom"][1] - origin)
        elif trigger == "relayout" and relayout:
            if "xaxis.range[0]" in relayout:
                x_range = (float(relayout["xaxis.range[0]"]), float(relayout["xaxis.range[1]"]))
            elif "xaxis.range" in relayout:
                x_range = tuple(float(v) for v in relayout["xaxis.range"])
            elif not relayout.get("xaxis.autorange"):
                return dash.no_update  # a y-only or legend change: the drawn points stay right
        fig = FIG.rtxq_figure(entry, x_range, decimated=self.decimate, webgl=self.webgl)
        if focus and trigger == "focus" and focus.get("at") is not None:
            x = focus["at"] - origin
            fig["layout"]["shapes"].append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0,
                                            "y1": 1, "line": {"color": "#b42318", "width": 2, "dash": "dot"}})
            fig["layout"]["annotations"] = [{"x": x, "y": 1, "xref": "x", "yref": "paper", "text": focus.get("what", ""),
                                             "showarrow": False, "xanchor": "right", "yanchor": "bottom"}]
        return fig

    # ---- ladder view ---------------------------------------------------------------------------
    def ladder_view(self, selection, focus):
        """-> (figure, caption). Without a focus: the first blocking interval, else the first packets."""
        if not selection:
            return EMPTY_FIGURE, ""
        analysis, entry = self._entry(selection)
        series = FIG.series(entry)
        if focus:
            t0, t1, what = focus["t0"], focus["t1"], focus.get("what", "")
        elif len(series.blocking):
            first = series.blocking.iloc[0]
            t0, t1, what = float(first["start_s"]), float(first["end_s"]), "blocking interval 1"
        else:
            t0, t1, what = series.origin_s, series.origin_s, "the first packets"
        # a few packets either side show how the window began and ended
        view, flow_entry = analysis.flow_view(entry)
        t0, t1 = self.window_around(view, flow_entry, t0, t1, before=CONTEXT_PACKETS, after=CONTEXT_PACKETS)
        rows, total = L.ladder_rows(view, flow_entry, t0, t1)
        fig = FIG.ladder_figure(rows, entry.summary, series.origin_s,
                                (series.blocking["start_s"].to_numpy(), series.blocking["end_s"].to_numpy()))
        shown = f"{len(rows)} of {total} packets" if total > len(rows) else f"{total} packets"
        caption = (f"{what}: {(t0 - series.origin_s) * 1e3:.1f} to {(t1 - series.origin_s) * 1e3:.1f} ms, {shown}. "
                   "Red rows: sender blocked; red cross: lost DATA; dashed: retransmission.")
        return fig, caption

    # ---- export --------------------------------------------------------------------------------
    def export_csv(self, which, selection):
        if not selection:
            return dash.no_update
        _, entry = self._entry(selection)
        series = FIG.series(entry)
        table = series.rtxq if which == "rtxq" else series.blocking
        return dcc.send_data_frame(table.to_csv, f"nrsack-{entry.summary['id']}-{which}.csv", index=False)

    # ---- compare -------------------------------------------------------------------------------
    def compare(self, capture_a, capture_b, sndbuf_text):
        """-> (figure, rows, message): two captures' first sender directions overlaid, throughput, gain."""
        if not capture_a or not capture_b:
            return EMPTY_FIGURE, [], "Pick run A (e.g. NR-SACK) and run B (e.g. SACK)."
        try:
            sndbuf = parse_sndbuf(sndbuf_text)
            runs = [self.library.analysis(c, sndbuf) for c in (capture_a, capture_b)]
        except (ValueError, CaptureError) as error:
            return EMPTY_FIGURE, [], f"Cannot compare: {error}"
        result = formats.compare_dict(*(formats.summary_dict(r, listed_ids(r)) for r in runs))
        rows = [{"A": p["a"], "B": p["b"], "sender → receiver": f"{p['src']} → {p['dst']}",
                 "T_A kb/s": round(p["throughput_a_bps"] / 1e3, 2), "T_B kb/s": round(p["throughput_b_bps"] / 1e3, 2),
                 "gain %": "n/a" if p["gain_percent"] is None else round(p["gain_percent"], 2),
                 "p/q A": _ratio(p["p_over_q_a"]), "p/q B": _ratio(p["p_over_q_b"])} for p in result["pairs"]]
        names = [self.library.captures[c].name for c in (capture_a, capture_b)]
        pairs = [(f"A {names[0]}", runs[0].entries[0]), (f"B {names[1]}", runs[1].entries[0])]
        message = "Gain of A over B = (T_A - T_B) / T_B (metrics.md); sender directions paired in order."
        return FIG.compare_figure(pairs), rows, message

    # ---- sweeps --------------------------------------------------------------------------------
    def sweep_groups(self, sweep_id):
        """Each (protocol, bandwidth, delay) of the sweep is one heat map."""
        gain, _ = self.library.sweep(sweep_id)
        groups = gain[FIG.SWEEP_GROUP].drop_duplicates().to_dict("records")
        options = [{"label": f"{g['protocol']}, {g['bandwidth_mbps']:g} Mb/s, {g['delay_ms']:g} ms one way",
                    "value": json.dumps(g)} for g in groups]
        return options, options[0]["value"] if options else None

    def sweep_view(self, sweep_id, group):
        if not sweep_id or not group:
            return EMPTY_FIGURE, ""
        gain, regions = self.library.sweep(sweep_id)
        fig = FIG.sweep_figure(gain, regions, json.loads(group))
        return fig, ("Cells: mean gain (T_NR - T_SACK) / T_SACK over the seeds; outlined: the regions of gain "
                     "(regions.csv, gain at least the sweep's threshold).")


def sweep_tab(board):
    sweeps = board.library.sweeps
    if not sweeps:
        return html.Div(className="main", children=[html.Section(className="card", children=[
            html.H3("Sweeps"),
            html.P(["No sweep folder was given. Run ", html.Code("nrsack generate sweep --out DIR"),
                    " (loss x send buffer, SACK and NR-SACK) and start ", html.Code("nrsack dashboard DIR"),
                    " to see the gain heat map and the regions of gain here."], className="hint")])])
    options = [{"label": str(path), "value": key} for key, path in sweeps.items()]
    return html.Div(className="main", children=[html.Section(className="card", children=[
        html.H3("Gain of NR-SACK over SACK"),
        dcc.Dropdown(id="sweep", options=options, value=options[0]["value"], clearable=False),
        dcc.Dropdown(id="sweep-group", clearable=False),
        html.Div(id="sweep-message", className="hint"),
        dcc.Graph(id="sweep-graph", figure=EMPTY_FIGURE, config=GRAPH_CONFIG),
    ])])


def _table(id_, columns, **extra):
    return dash_table.DataTable(id=id_, columns=[{"name": c, "id": c} for c in columns], data=[],
                                **{**TABLE_STYLE, **extra})


FLOW_COLUMNS = ["id", "protocol", "sender → receiver", "NR-SACK", "bytes", "duration s", "p/q", "blocked"]
BLOCKING_COLUMNS = ["#", "start s", "end s", "duration ms", "RtxQ at start", "gap_open", "frames"]
FINDING_COLUMNS = ["rule", "severity", "frames", "direction", "message"]
PATH_COLUMNS = ["id", "level", "path", "p/q", "b/q", "throughput kb/s", "bytes", "vantage"]
COMPARE_COLUMNS = ["A", "B", "sender → receiver", "T_A kb/s", "T_B kb/s", "gain %", "p/q A", "p/q B"]


def layout(board: Dashboard):
    options = board.library.options()
    first = options[0]["value"] if options else None
    limit = LIB._size(board.library.upload_limit)
    capture_tab = html.Div(className="page", children=[
        html.Aside(className="sidebar", children=[
            html.H3("Capture"),
            dcc.Dropdown(id="capture", options=options, value=first, clearable=False),
            dcc.Upload(id="upload", className="upload", multiple=False,
                       children=html.Div(["Drop a pcap / pcapng here or ", html.A("choose a file"),
                                          html.Div(f"up to {limit}", className="hint")])),
            html.Div(id="upload-message", className="message"),
            html.Label("Send buffer B (bytes)", htmlFor="sndbuf"),
            dcc.Input(id="sndbuf", type="text", placeholder="estimated from the capture", debounce=True,
                      className="text-input"),
            html.H3("Sender directions"),
            html.Div(id="flows-message", className="hint"),
            _table("flows", FLOW_COLUMNS, style_as_list_view=True, cell_selectable=True),
            html.H3("Blocking intervals"),
            html.Div("Click one to see its packets in the ladder.", className="hint"),
            _table("blocking", BLOCKING_COLUMNS, page_size=10),
            html.H3("Findings"),
            html.Div(id="findings-note", className="hint"),
            _table("findings", FINDING_COLUMNS, page_size=10,
                   style_data={"whiteSpace": "normal", "height": "auto"},
                   style_cell_conditional=[{"if": {"column_id": "message"}, "minWidth": "220px"},
                                           {"if": {"column_id": "direction"}, "maxWidth": "140px"}]),
        ]),
        html.Main(className="main", children=[
            html.Div(id="kpis"),
            html.Section(className="card", children=[
                html.Div(className="card-head", children=[
                    html.H3("Retransmission queue"),
                    html.Div(className="buttons", children=[
                        html.Button("SVG", id="svg-rtxq", className="btn", title="the RtxQ plot as SVG (PNG: camera icon)"),
                        html.Button("RtxQ CSV", id="csv-rtxq", className="btn"),
                        html.Button("Blocking CSV", id="csv-blocking", className="btn"),
                    ]),
                ]),
                html.P("Zoom with the mouse; each zoom level is decimated on the server (min/max per pixel). "
                       "Click the plot, a blocking interval or a finding to see its packets below.", className="hint"),
                dcc.Loading(dcc.Graph(id="rtxq-graph", figure=EMPTY_FIGURE, config=GRAPH_CONFIG), delay_show=400),
            ]),
            html.Section(className="card", children=[
                html.Div(className="card-head", children=[
                    html.H3("Ladder"),
                    html.Button("SVG", id="svg-ladder", className="btn"),
                ]),
                html.Div(id="ladder-caption", className="hint"),
                dcc.Graph(id="ladder-graph", figure=EMPTY_FIGURE, style={"maxWidth": "980px"},
                          config={**GRAPH_CONFIG, "toImageButtonOptions": {"format": "png", "filename": "nrsack-ladder", "scale": 2}}),
            ]),
        ]),
    ])
    compare_tab = html.Div(className="main", children=[
        html.Section(className="card", children=[
            html.H3("Compare two captures"),
            html.Div(className="compare-pickers", children=[
                dcc.Dropdown(id="compare-a", options=options, placeholder="run A (e.g. NR-SACK)"),
                dcc.Dropdown(id="compare-b", options=options, placeholder="run B (e.g. SACK)"),
            ]),
            html.Div(id="compare-message", className="hint"),
            _table("compare-table", COMPARE_COLUMNS),
            dcc.Graph(id="compare-graph", figure=EMPTY_FIGURE, config=GRAPH_CONFIG),
        ]),
    ])
    tabs = [dcc.Tab(label="Capture", value="capture", children=capture_tab),
            dcc.Tab(label="Compare", value="compare", children=compare_tab),
            dcc.Tab(label="Sweeps", value="sweeps", children=sweep_tab(board))]
    return html.Div([
        html.Header(className="topbar", children=[
            html.H1("nrsack dashboard"),
            html.Span("RtxQ, send-buffer blocking and what NR-SACKs would save", className="subtitle"),
        ]),
        dcc.Tabs(id="tabs", value="capture", children=tabs),
        dcc.Store(id="selection"), dcc.Store(id="focus"), dcc.Download(id="download"),
        html.Div(id="svg-done", hidden=True), html.Div(id="svg-ladder-done", hidden=True),
    ])


class BadCallbackInput(Exception):
    """A callback input of the wrong JSON type or shape: the request is answered 400 with this message."""


NUMBER = (int, float)
# where this thread's callback request is: Dash reads the body before our callback runs and fits the
# result to the body's outputs after it; a failure there is the body's fault (refuse_unfit_bodies)
_STAGE = threading.local()


def checked(callback, *kinds):
    """`callback` with its inputs checked: each argument None or of its kind (a type or tuple of types),
    else BadCallbackInput (HTTP 400). A crafted input of the right type but the wrong shape (a dict
    without its keys) fails inside the callback: that too is the request's fault, answered 400, and
    the traceback goes to the server's log, where a bug in the app would show."""
    @functools.wraps(callback)
    def guarded(*args):
        for position, (value, kind) in enumerate(zip(args, kinds)):
            if value is not None and (not isinstance(value, kind) or isinstance(value, bool) and bool not in
                                      (kind if isinstance(kind, tuple) else (kind,))):
                names = "/".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
                raise BadCallbackInput(f"{callback.__name__}: input {position + 1} must be {names}, "
                                       f"not {type(value).__name__}")
        _STAGE.name = "inside"
        try:
            result = callback(*args)
        except (KeyError, TypeError, AttributeError, IndexError) as error:
            traceback.print_exc(file=sys.stderr)
            raise BadCallbackInput(f"{callback.__name__}: malformed input ({type(error).__name__})") from None
        _STAGE.name = "after"
        return result
    return guarded


def refuse_unfit_bodies(app):
    """A callback request whose body does not fit a callback of the page ({"output": "x"}, inputs that
    are not a list of {id, property, value}, outputs that do not match what the callback returns)
    fails in Dash's reading of it, before or after our callback: 400 with one line and no traceback,
    as the request's fault. A failure inside a callback is `checked`'s (400) or, a bug of the app,
    Flask's (500, logged)."""
    endpoint = next(rule.endpoint for rule in app.server.url_map.iter_rules()
                    if rule.rule.endswith("_dash-update-component"))
    view = app.server.view_functions[endpoint]

    @functools.wraps(view)
    def guarded(*args, **kwargs):
        _STAGE.name = "before"
        try:
            return view(*args, **kwargs)
        except (HTTPException, BadCallbackInput, dash.exceptions.PreventUpdate):
            raise  # answered by their own handlers
        except Exception as error:
            if _STAGE.name == "inside":
                raise
            return f"bad request: the body fits no callback of this page ({type(error).__name__})", 400
    app.server.view_functions[endpoint] = guarded


def request_dash_refused(error):
    """Dash's own CallbackException (not its subclasses, which name mistakes of the app): the request
    did not match the page's callbacks (a crafted or stale request), 400 rather than 500."""
    if type(error) is not dash.exceptions.CallbackException:
        raise error
    return f"bad request: {error}", 400


def accepts(*kinds):
    """checked() as a decorator."""
    return lambda callback: checked(callback, *kinds)


def create_app(paths=None, upload_limit=LIB.DEFAULT_UPLOAD_LIMIT, library=None, decimate=True, webgl=None):
    """The Dash app over the captures in `paths` (files or folders; default: sample-pcaps/)."""
    library = library or LIB.Library(paths, upload_limit)
    board = Dashboard(library, decimate, webgl)
    app = dash.Dash(__name__, assets_folder=str(ASSETS), title="nrsack dashboard", update_title=None)
    # a request far larger than the limit is cut off before it is read (base64 adds a third)
    app.server.config["MAX_CONTENT_LENGTH"] = upload_limit * 2 + (1 << 20)
    app.layout = layout(board)
    app.board = board
    app.server.register_error_handler(BadCallbackInput, lambda error: (f"bad request: {error}", 400))
    app.server.register_error_handler(dash.exceptions.CallbackException, request_dash_refused)
    refuse_unfit_bodies(app)

    app.callback(Output("capture", "options"), Output("capture", "value"), Output("upload-message", "children"),
                 Output("upload-message", "className"), Input("upload", "contents"), State("upload", "filename"),
                 prevent_initial_call=True)(checked(board.upload, str, str))
    app.callback(Output("flows", "data"), Output("flows", "active_cell"), Output("flows-message", "children"),
                 Input("capture", "value"), Input("sndbuf", "value"))(checked(board.load_capture, str, (str, *NUMBER)))
    app.callback(Output("findings", "data"), Output("findings-note", "children"),
                 Input("capture", "value"))(checked(board.load_findings, str))
    app.callback(Output("selection", "data"), Input("flows", "active_cell"),
                 State("flows", "data"))(checked(board.select_entry, dict, list))
    app.callback(Output("kpis", "children"), Output("blocking", "data"),
                 Input("selection", "data"))(checked(board.kpis, dict))

    @app.callback(Output("focus", "data"), Input("selection", "data"), Input("blocking", "active_cell"),
                  Input("findings", "active_cell"), Input("rtxq-graph", "clickData"), State("findings", "data"))
    @accepts(dict, dict, dict, dict, list)
    def focus(selection, blocking_cell, finding_cell, click, findings):
        trigger = dash.ctx.triggered_id
        if trigger == "blocking":
            return board.focus_on_blocking(selection, blocking_cell)
        if trigger == "findings":
            return board.focus_on_finding(selection, finding_cell, findings)
        if trigger == "rtxq-graph":
            return board.focus_on_click(selection, click)
        return None  # a new flow: the views start from their defaults

    @app.callback(Output("rtxq-graph", "figure"), Input("selection", "data"), Input("focus", "data"),
                  Input("rtxq-graph", "relayoutData"))
    @accepts(dict, dict, dict)
    def rtxq(selection, focus_data, relayout):
        # several inputs can fire at once (a new flow also resets the focus): the broadest one wins
        fired = {item["prop_id"].split(".")[0] for item in dash.ctx.triggered}
        trigger = next((name for key, name in (("selection", "selection"), ("focus", "focus"),
                                               ("rtxq-graph", "relayout")) if key in fired), "selection")
        return board.rtxq_view(selection, focus_data, relayout, trigger)

    app.callback(Output("ladder-graph", "figure"), Output("ladder-caption", "children"),
                 Input("selection", "data"), Input("focus", "data"))(checked(board.ladder_view, dict, dict))

    @app.callback(Output("download", "data"), Input("csv-rtxq", "n_clicks"), Input("csv-blocking", "n_clicks"),
                  State("selection", "data"), prevent_initial_call=True)
    @accepts(int, int, dict)
    def download(_rtxq, _blocking, selection):
        return board.export_csv("rtxq" if dash.ctx.triggered_id == "csv-rtxq" else "blocking", selection)

    for button, graph, done in (("svg-rtxq", "rtxq-graph", "svg-done"), ("svg-ladder", "ladder-graph", "svg-ladder-done")):
        app.clientside_callback(
            "function(n){ if(!n){return '';} const gd=document.querySelector('#" + graph + " .js-plotly-plot');"
            " Plotly.downloadImage(gd, {format: 'svg', filename: 'nrsack-" + graph + "'}); return String(n); }",
            Output(done, "children"), Input(button, "n_clicks"), prevent_initial_call=True)

    app.callback(Output("compare-graph", "figure"), Output("compare-table", "data"), Output("compare-message", "children"),
                 Input("compare-a", "value"), Input("compare-b", "value"),
                 Input("sndbuf", "value"))(checked(board.compare, str, str, (str, *NUMBER)))

    if library.sweeps:
        app.callback(Output("sweep-group", "options"), Output("sweep-group", "value"),
                     Input("sweep", "value"))(checked(board.sweep_groups, str))
        app.callback(Output("sweep-graph", "figure"), Output("sweep-message", "children"),
                     Input("sweep", "value"), Input("sweep-group", "value"))(checked(board.sweep_view, str, str))

    @app.callback(Output("compare-a", "options"), Output("compare-b", "options"), Input("capture", "options"))
    @accepts(list)
    def compare_options(options):
        return options, options

    return app


def local_server(app, port=0):
    """(server, url): a threaded WSGI server for the app on 127.0.0.1 only (port 0: a free one)."""
    server = make_server("127.0.0.1", port, app.server, threaded=True)
    return server, f"http://127.0.0.1:{server.server_port}/"


def serve_in_background(app, port=0):
    """(server, url) with the server running in a daemon thread; server.shutdown() stops it."""
    server, url = local_server(app, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, url
