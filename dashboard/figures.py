"""Plotly figures of the dashboard, drawn from the analyzer's results (never re-derived here).

Times on the x axis are seconds since the sender direction's first DATA (the first row of its RtxQ
table), as in the papers' figures; the analyzer's tables keep capture time since the epoch.
"""

from dataclasses import dataclass
import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from nrsack.analyzer.views import formats
from nrsack.dashboard import decimate as D

PLOT_PIXELS = 1200          # buckets per zoom level: about one per pixel of a wide graph
WEBGL_MIN_POINTS = 50_000   # from here on WebGL traces draw faster than SVG
MAX_SHAPES = 400            # more intervals than this in view are merged below a pixel
BLOCKED_FILL = "rgba(214, 39, 40, 0.16)"
GAP_FILL = "rgba(255, 127, 14, 0.85)"
COLORS = {"rtxq_sack": "#1f77b4", "rtxq_nr": "#2ca02c", "rtxq_whatif": "#9467bd", "buffer": "#222222"}
LADDER_COLORS = {"data": "#1f77b4", "rtx": "#ff7f0e", "lost": "#d62728", "ack": "#2ca02c", "control": "#7f7f7f"}
FONT = "Inter, Segoe UI, Helvetica, Arial, sans-serif"
TEMPLATE = pio.templates["plotly_white"]


@dataclass
class Series:
    """One entry's results (the analyzer builds its tables on request) and the RtxQ as plain arrays
    in relative time: made once per entry, then sliced by every view."""

    rtxq: pd.DataFrame
    blocking: pd.DataFrame
    origin_s: float
    t: np.ndarray
    columns: dict
    blocked: tuple      # (starts, ends) relative, from the analyzer's blocking table
    gap_t: np.ndarray   # the rtxq table's gap_open column as a step function (0 / 1)
    gap_flag: np.ndarray
    end: float


_series_cache = {}


def series(entry) -> Series:
    key = id(entry)
    cached = _series_cache.get(key)
    if cached is not None and cached[0] is entry:
        return cached[1]
    table, summary = entry.rtxq, entry.summary
    t_abs = table["time_s"].to_numpy()
    origin = float(t_abs[0]) if len(t_abs) else 0.0
    t = t_abs - origin
    end = max(float(summary["q_s"]), float(t[-1]) if len(t) else 0.0)
    columns = {name: table[f"{name}_bytes"].to_numpy() for name in ("rtxq_sack", "rtxq_nr", "rtxq_whatif")}
    blocking = entry.blocking
    made = Series(table, blocking, origin, t, columns,
                  (blocking["start_s"].to_numpy() - origin, blocking["end_s"].to_numpy() - origin),
                  np.append(t, end), np.append(table["gap_open"].to_numpy(), False).astype(np.int8), end)
    if len(_series_cache) > 32:
        _series_cache.clear()
    _series_cache[key] = (entry, made)
    return made


def shown_columns(summary):
    """rtxq_sack and rtxq_nr on NR-SACK captures; rtxq_sack and the what-if on SACK-only ones, each with
    its label in words (the column names stay in the hover text)."""
    if summary["nr_sack"]:
        return [("rtxq_sack", "RtxQ had the SACKs been renegable"), ("rtxq_nr", "RtxQ this NR-SACK sender kept")]
    return [("rtxq_sack", "RtxQ this sender kept"), ("rtxq_whatif", "RtxQ had every SACK been an NR-SACK")]


def buffer_label(summary):
    if summary["sndbuf_bytes"] is None:
        return f"send buffer B: {formats.buffer_text(summary)}"
    how = "estimated: the RtxQ at which the sender waited for acks" if summary["sndbuf_estimated"] else "given"
    return f"send buffer B = {int(summary['sndbuf_bytes'])} bytes ({how})"


def _interval_shapes(starts, ends, y0, y1, fill, name):
    return [dict(type="rect", xref="x", yref="paper", x0=float(a), x1=float(b), y0=y0, y1=y1, fillcolor=fill,
                 line={"width": 0}, layer="below", name=name, showlegend=i == 0, legendgroup=name)
            for i, (a, b) in enumerate(zip(starts, ends))]


def rtxq_figure(entry, x_range=None, pixels=PLOT_PIXELS, decimated=True, webgl=None) -> dict:
    """RtxQ vs time of one entry (SCTP paper figs. 8-9, MPTCP paper figs. 7-8): the two queues,
    the send-buffer line, blocked intervals shaded, gap_open intervals as a band along the bottom.
    x_range: (x0, x1) in seconds since the first DATA, or None for the whole transfer.
    A plain figure dict: plotly's per-property validation of go.Figure costs more than the rest of
    a zoom step on a large capture, and Dash sends dicts as they are.
    webgl: True / False forces the trace type; None (auto) uses WebGL only above WEBGL_MIN_POINTS,
    where SVG gets slow: a decimated window stays below it, and a browser without a GPU (headless
    Chromium) draws WebGL in software at 1.7-2.8 s a plot against 0.1-0.2 s for SVG
    (bench/bench_dashboard.py measures both)."""
    s = series(entry)
    summary = entry.summary
    x0, x1 = x_range if x_range else (min(0.0, s.t[0] if len(s.t) else 0.0), s.end)
    width = max(x1 - x0, 1e-9)
    data = []
    sent = 0
    for column, name in shown_columns(summary):
        if decimated:
            tx, ty = D.decimate(s.t, s.columns[column], x0, x1, pixels)
        else:
            tx, ty = s.t, s.columns[column]
        sent += len(tx)
        data.append({"type": "scattergl", "x": tx, "y": ty, "mode": "lines", "name": name, "legendgroup": column,
                     "line": {"shape": "hv", "width": 2, "color": COLORS[column],
                              "dash": "dot" if column == "rtxq_whatif" else "solid"},
                     "hovertemplate": "%{y:,} bytes at %{x:.6f} s<extra>" + column + "</extra>"})
    capacity = 0 if summary["sndbuf_bytes"] is None else int(summary["sndbuf_bytes"])  # no B: no line
    top = 1.1 * max(capacity, *(int(summary[f"max_{c}_bytes"]) for c, _ in shown_columns(summary)))
    data.append({"type": "scattergl", "x": [min(x0, 0.0), max(x1, s.end)] if capacity else [],
                 "y": [capacity, capacity] if capacity else [], "mode": "lines",
                 "name": buffer_label(summary), "hoverinfo": "skip",
                 "line": {"color": COLORS["buffer"], "dash": "dash", "width": 1.5}})
    pixel = width / pixels
    b_starts, b_ends, blocked_count = D.merge_intervals(*s.blocked, x0, x1, pixel, MAX_SHAPES)
    # gap_open as one WebGL band (0 or 3 % of the axis), decimated like the queues: it can have
    # as many runs as there are losses
    g_t, g_flag = D.decimate(s.gap_t, s.gap_flag, x0, x1, pixels) if decimated else (s.gap_t, s.gap_flag)
    kind = "scattergl" if (sent + len(g_t) > WEBGL_MIN_POINTS if webgl is None else webgl) else "scatter"
    for trace in data:
        trace["type"] = kind
    data.append({"type": kind, "x": g_t, "y": g_flag * (top * 0.03), "mode": "lines", "fill": "tozeroy",
                 "name": "loss recovery (a gap open)", "hoverinfo": "skip", "fillcolor": GAP_FILL,
                 "line": {"shape": "hv", "width": 0, "color": GAP_FILL}})
    shapes = _interval_shapes(b_starts, b_ends, 0.0, 1.0, BLOCKED_FILL, "blocked: send buffer full")
    layout = {
        "shapes": shapes, "template": TEMPLATE, "height": 430, "font": {"family": FONT, "size": 13},
        "margin": {"l": 70, "r": 20, "t": 40, "b": 50}, "hovermode": "x", "uirevision": summary["id"],
        "title": {"text": f"RtxQ of {summary['id']}: {summary['src']} → {summary['dst']} ({summary['protocol'].upper()}, "
                          f"vantage: {summary['vantage']})", "font": {"size": 15}, "x": 0.01},
        "legend": {"orientation": "h", "y": -0.18, "x": 0},
        "xaxis": {"title": {"text": "time since first DATA (s)"}, "range": [x0, x1], "showspikes": True,
                  "spikemode": "across"},
        "yaxis": {"title": {"text": "bytes"}, "range": [0, top]},
        "meta": {"entry": summary["id"], "origin_s": s.origin_s, "blocked_intervals": int(blocked_count),
                 "points": int(sent), "range": [x0, x1]},
    }
    return {"data": data, "layout": layout}


def rtxq_page(entries, title) -> str:
    """One HTML page of `entries`' RtxQ figures as the dashboard draws them, one under the other at the
    dashboard's height, every point drawn (no server to decimate a zoom); plotly.js inline, once."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
             f"<body style='font-family: {FONT}'><h2>{html.escape(title)}</h2>"]
    for i, entry in enumerate(entries):
        figure = rtxq_figure(entry, decimated=False)
        parts.append(pio.to_html(figure, full_html=False, include_plotlyjs=i == 0,
                                 default_height=figure["layout"]["height"]))
    return "".join(parts) + "</body></html>"


def ladder_figure(rows, summary, origin_s, blocked=((), ())) -> dict:
    """Sequence diagram: sender lane on the left, receiver on the right, one packet per row
    (time goes down), each arrow labelled in the papers' notation; lost DATA ends half-way with a
    cross; rows inside a blocking interval are shaded. blocked: (starts, ends) in capture time.
    A plain figure dict, like rtxq_figure (no per-property validation)."""
    slant = 0.35
    n = len(rows)
    data = []
    ys = np.arange(n, dtype=float)
    starts, ends = (np.asarray(b, dtype=float) for b in blocked)
    times = rows["time_s"].to_numpy() if n else np.empty(0)
    inside = np.searchsorted(starts, times, "right") - 1
    in_block = (inside >= 0) & (times < np.append(ends, np.inf)[np.maximum(inside, 0)]) if len(starts) else np.zeros(n, bool)
    shapes = [dict(type="rect", xref="paper", yref="y", x0=0, x1=1, y0=y - 0.5, y1=y + 0.5, fillcolor=BLOCKED_FILL,
                   line={"width": 0}, layer="below") for y in ys[in_block]]
    shapes += [dict(type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1, line={"color": "#444", "width": 2})
               for x in (0, 1)]
    for style, color in LADDER_COLORS.items():
        pick = (rows["style"] == style).to_numpy() if n else np.zeros(0, bool)
        if not pick.any():
            continue
        forward = rows["from_sender"].to_numpy()[pick]
        y = ys[pick]
        # the capture sits at one end: the arrow touches its lane at the row's time
        x_from = np.where(forward, 0.0, 1.0)
        x_to = np.where(forward, 0.55 if style == "lost" else 1.0, 0.0)
        y_from = np.where(forward, y, y - slant)
        y_to = np.where(forward, y + slant * (0.55 if style == "lost" else 1.0), y)
        xs = np.column_stack((x_from, x_to, np.full(len(y), np.nan))).ravel()
        yl = np.column_stack((y_from, y_to, np.full(len(y), np.nan))).ravel()
        data.append(dict(type="scatter", x=xs, y=yl, mode="lines", line={"color": color, "width": 2,
                         "dash": "dash" if style == "rtx" else "solid"}, hoverinfo="skip", showlegend=False))
        symbols = ["x-thin-open" if style == "lost" else ("triangle-right" if f else "triangle-left") for f in forward]
        labels = rows["label"].to_numpy()[pick]
        frames = rows["frame"].to_numpy()[pick]
        data.append(dict(
            type="scatter", x=x_to, y=y_to, mode="markers", name=style,
            marker={"symbol": symbols, "size": 12 if style == "lost" else 9, "color": color,
                    "line": {"width": 3, "color": color}},
            customdata=np.column_stack((frames, labels)),
            hovertemplate="frame %{customdata[0]}: %{customdata[1]}<extra>" + style + "</extra>"))
        # the label sits above its arrow, towards the lane it leaves from
        data.append(dict(type="scatter", x=np.where(forward, 0.3, 0.7), y=y_from + (y_to - y_from) * 0.3 - 0.3,
                         mode="text", text=labels, textfont={"color": color, "size": 12}, hoverinfo="skip",
                         showlegend=False))
    ticks = [f"{(t - origin_s) * 1000:.1f} ms  #{f}" + (f"  {p}" if p else "")
             for t, f, p in zip(times, rows["frame"], rows["path"])] if n else []
    layout = dict(
        template=TEMPLATE, height=max(220, 30 * n + 90), font={"family": FONT, "size": 12}, shapes=shapes,
        margin={"l": 170 if n and rows["path"].astype(bool).any() else 130, "r": 20, "t": 50, "b": 20},
        showlegend=False, hovermode="closest",
        xaxis={"range": [-0.08, 1.08], "showgrid": False, "zeroline": False, "showticklabels": False, "fixedrange": True},
        yaxis={"autorange": "reversed", "tickvals": ys.tolist(), "ticktext": ticks, "showgrid": False,
               "zeroline": False, "range": [n + 0.2, -1.2] if n else None},
        annotations=[dict(x=x, y=1.0, xref="x", yref="paper", yanchor="bottom", showarrow=False, text=f"<b>{who}</b><br>{addr}")
                     for x, who, addr in ((0, "sender", summary["src"]), (1, "receiver", summary["dst"]))],
        meta={"frames": [int(f) for f in rows["frame"]] if n else [],
              "lost": int((rows["style"] == "lost").sum()) if n else 0},
    )
    return {"data": data, "layout": layout}


def compare_figure(pairs, pixels=PLOT_PIXELS) -> go.Figure:
    """The RtxQ (the semantics each capture used) of two captures' entries overlaid.
    pairs: [(label, entry)]"""
    fig = go.Figure()
    styles = (("solid", COLORS["rtxq_nr"]), ("dot", COLORS["rtxq_sack"]))
    for (label, entry), (dash, color) in zip(pairs, styles):
        s = series(entry)
        column = "rtxq_nr" if entry.summary["nr_sack"] else "rtxq_sack"
        # decimated to the pixel buckets: SVG traces draw these fastest (see rtxq_figure)
        tx, ty = D.decimate(s.t, s.columns[column], 0.0, s.end, pixels)
        fig.add_trace(go.Scatter(x=tx, y=ty, mode="lines", line={"shape": "hv", "dash": dash, "width": 2, "color": color},
                                 name=f"{label}: {column}"))
        if entry.summary["sndbuf_bytes"] is not None:
            fig.add_trace(go.Scatter(x=[0, s.end], y=[entry.summary["sndbuf_bytes"]] * 2, mode="lines",
                                     line={"dash": "dash", "width": 1, "color": color}, name=f"{label}: B"))
    fig.update_layout(template="plotly_white", height=380, font={"family": FONT, "size": 13},
                      margin={"l": 70, "r": 20, "t": 30, "b": 50}, legend={"orientation": "h", "y": -0.2},
                      xaxis={"title": "time since first DATA (s)"}, yaxis={"title": "bytes", "rangemode": "tozero"})
    return fig


SWEEP_GROUP = ["protocol", "bandwidth_mbps", "delay_ms"]


def sweep_figure(gain, regions, group) -> go.Figure:
    """Heat map of the mean gain over loss rate x send buffer for one (protocol, bandwidth, delay),
    the regions of gain (regions.csv: per send buffer, loss intervals) outlined cell by cell."""
    part = gain[(gain[SWEEP_GROUP] == pd.Series(group)).all(axis=1)]
    grid = part.pivot_table(index="sndbuf", columns="loss", values="gain_pct")
    losses, sndbufs = list(grid.columns), list(grid.index)
    fig = go.Figure(go.Heatmap(
        z=grid.to_numpy(), x=[f"{x:g}" for x in losses], y=[f"{b:,}" for b in sndbufs], colorscale="RdBu",
        zmid=0, colorbar={"title": "gain %"}, texttemplate="%{z:.1f}",
        hovertemplate="loss %{x}, B %{y} bytes: gain %{z:.2f} %<extra></extra>"))
    shapes = []
    if regions is not None:
        mine = regions[(regions[SWEEP_GROUP] == pd.Series(group)).all(axis=1)].dropna(subset=["loss_from"])
        for sndbuf, lo, hi in zip(mine["sndbuf"], mine["loss_from"], mine["loss_to"]):
            if sndbuf not in sndbufs or lo not in losses or hi not in losses:
                continue
            y = sndbufs.index(sndbuf)
            shapes.append(dict(type="rect", xref="x", yref="y", x0=losses.index(lo) - 0.5, x1=losses.index(hi) + 0.5,
                               y0=y - 0.5, y1=y + 0.5, line={"color": "#111", "width": 3}, name="region of gain"))
    fig.update_layout(template="plotly_white", height=420, font={"family": FONT, "size": 13}, shapes=shapes,
                      margin={"l": 90, "r": 20, "t": 30, "b": 50}, xaxis={"title": "loss rate", "type": "category"},
                      yaxis={"title": "send buffer B (bytes)", "type": "category"},
                      meta={"regions": len(shapes)})
    return fig
