"""The "nrsack" profile as Wireshark's GUI reads it (wireshark/profile/):

- colorfilters lines are @name@filter@[background][foreground] (16-bit RGB): each rule colours the
  row (a saturated background, not white, grey or black) and its text reads on it (WCAG contrast);
- io_graphs rows are the I/O Graph dialog's UAT (Wireshark 4.0 to 4.6 read the same nine fields:
  Enabled, Graph Name, Display Filter, Color, Style, Y Axis, Y Field, SMA Period, Y Axis Factor): every
  graph is in bytes of an nrsack bytes field, none a packet count drawn on the bytes axis, and the
  graphs have points at the 10 ms interval the profile's docs tell the user to pick (tshark's
  `-z io,stat` computes the dialog's per-interval values with the same code).
"""

import colorsys
import csv
import re

import pytest

from support import tshark
from support.paths import SAMPLES

PROFILE = tshark.REPO / "wireshark" / "profile"
COLOUR_LINE = re.compile(r"^@([^@]+)@(.+)@\[(\d+),(\d+),(\d+)\]\[(\d+),(\d+),(\d+)\]$")
# The values Wireshark 4.0's io_graph_dialog.cpp accepts (graph_style_vs, y_axis_vs, moving_avg_vs).
STYLES = {"Line", "Impulse", "Bar", "Stacked Bar", "Dot", "Square", "Diamond", "Cross", "Plus", "Circle"}
Y_AXES = {"Packets", "Bytes", "Bits", "SUM(Y Field)", "COUNT FRAMES(Y Field)", "COUNT FIELDS(Y Field)",
          "MAX(Y Field)", "MIN(Y Field)", "AVG(Y Field)", "LOAD(Y Field)"}
COUNTS = {"Packets", "Bytes", "Bits", "COUNT FRAMES(Y Field)", "COUNT FIELDS(Y Field)"}
BYTES_FIELDS = {"nrsack.rtxq.bytes", "nrsack.rtxq.sack_bytes", "nrsack.rtxq.nr_bytes", "nrsack.rtxq.whatif_bytes",
                "nrsack.freed_bytes"}
BLOCKED_PCAP = SAMPLES / "sctp-nrsack-fig4.pcap"
BLOCKED_SNDBUF = 8000


def colour_rules():
    rules = {}
    for line in (PROFILE / "colorfilters").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = COLOUR_LINE.match(line)
        assert m, f"not a colorfilters line: {line!r}"
        rgb = [int(v) / 65535 for v in m.groups()[2:]]
        rules[m.group(1)] = (tuple(rgb[:3]), tuple(rgb[3:]))
    return rules


def luminance(rgb):
    """WCAG 2 relative luminance of an sRGB colour (components 0..1)."""
    def linear(c):
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_every_rule_colours_the_row_with_readable_text():
    rules = colour_rules()
    assert len(rules) == 4
    for name, (background, foreground) in rules.items():
        _, lightness, saturation = colorsys.rgb_to_hls(*background)
        # a row colour: not the list's white, nor black, nor a grey
        assert saturation >= 0.5 and 0.15 <= lightness <= 0.9, (name, background)
        assert contrast(background, foreground) >= 4.5, (name, background, foreground)
    # the four kinds stay apart at a glance
    backgrounds = [bg for bg, _ in rules.values()]
    assert len(set(backgrounds)) == len(backgrounds)


def io_graphs():
    lines = [line for line in (PROFILE / "io_graphs").read_text().splitlines() if not line.startswith("#")]
    return [dict(zip(["enabled", "name", "filter", "color", "style", "y_axis", "y_field", "sma", "factor"], row))
            for row in csv.reader(lines)]


def test_io_graphs_are_rows_wireshark_reads_in_bytes():
    graphs = io_graphs()
    assert graphs
    for g in graphs:
        assert len(g) == 9 and g["enabled"] in ("TRUE", "FALSE") and re.fullmatch(r"#[0-9A-F]{6}", g["color"]), g
        assert g["style"] in STYLES and g["y_axis"] in Y_AXES and g["sma"] == "None" and g["factor"] == "1", g
        # one unit on the one Y axis Wireshark 4.0 draws: bytes of an nrsack field, no counts
        assert g["y_axis"] not in COUNTS and g["y_field"] in BYTES_FIELDS, g
        # a frame without the field in the tree (a filter not naming it) would leave the graph at zero
        assert g["y_field"] in g["filter"], g
    blocked = [g for g in graphs if "nrsack.blocked" in g["filter"]]
    assert len(blocked) == 1


@pytest.mark.tshark
def test_io_graphs_have_points_at_10_ms(nrsack_c_plugin):
    """Each graph has values in several 10 ms intervals of a 0.3 s sample; the blocked graph only in
    intervals where the sender is blocked, at most the RtxQ then."""
    columns = [g["y_axis"].replace("Y Field", g["y_field"]) + g["filter"] for g in io_graphs()]
    args = ["-q", "-z", "io,stat,0.01," + ",".join(columns)]
    out = tshark.run_tshark(args, nrsack_c_plugin, pcap=BLOCKED_PCAP,
                            prefs={"nrsack.sndbuf": BLOCKED_SNDBUF}).stdout
    rows = [[int(v) for v in re.findall(r"\|\s*(\d+)\s*(?=\|)", line)[:len(columns)]]
            for line in out.splitlines() if re.match(r"^\|\s*[\d.]+\s*<>", line)]
    assert len(rows) >= 20, out
    names = [g["name"] for g in io_graphs()]
    series = {name: [r[i] for r in rows] for i, name in enumerate(names)}
    blocked_name = next(g["name"] for g in io_graphs() if "nrsack.blocked" in g["filter"])
    nr_name = next(g["name"] for g in io_graphs() if g["filter"] == "nrsack.rtxq.bytes")
    for name, values in series.items():
        assert sum(v > 0 for v in values) >= 2, (name, out)
    assert all(b <= nr for b, nr in zip(series[blocked_name], series[nr_name])), out
    assert 0 < sum(v > 0 for v in series[blocked_name]) < len(rows), out
