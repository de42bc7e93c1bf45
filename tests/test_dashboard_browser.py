"""The dashboard in a real browser: Debian's headless Chromium driven by Playwright, the app served
on a free localhost port in a background thread. No network access is made or needed."""

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

from nrsack.dashboard import app as APP, library as LIB
from support.frames import nr04_capture
from support.paths import SAMPLES

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
UPLOAD_LIMIT = 64 << 10
TIMEOUT_MS = 60_000  # generous: CI machines run other suites beside this one

GRAPH = "document.querySelector('#{0} .js-plotly-plot')"
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dashboard")
    library = LIB.Library([SAMPLES, nr04_capture(folder)], upload_limit=UPLOAD_LIMIT,
                          upload_dir=folder / "uploads")
    app = APP.create_app(library=library, upload_limit=UPLOAD_LIMIT)
    server, url = APP.serve_in_background(app)
    yield url, library, folder
    server.shutdown()
    library.close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture()
def page(browser, served):
    context = browser.new_context(viewport={"width": 1600, "height": 1250})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(served[0])
    page.wait_for_selector("#flows td")
    yield page
    context.close()
    assert not errors, errors


def graph(page, name, expression):
    return page.evaluate(f"() => {{ const g = {GRAPH.format(name)}; return {expression}; }}")


def wait_graph(page, name, condition, arg=None):
    page.wait_for_function(f"arg => {{ const g = {GRAPH.format(name)}; return !!(g && g.layout && g.data && ({condition})); }}",
                           arg=arg)


def pick_capture(page, name):
    page.click("#capture")
    page.get_by_role("option", name=name, exact=True).click()
    expect(page.locator("#flows-message")).to_contain_text(name)


def click_cell(page, table, column, text):
    page.locator(f"#{table} td[data-dash-column='{column}']", has_text=text).first.click()


def test_pick_a_sample_and_a_flow_then_open_a_blocking_interval(page, tmp_path):
    spec = json.loads((SAMPLES / "sctp-nrsack-fig4.expected.json").read_text())
    flow = spec["flows"][0]
    pick_capture(page, "sctp-nrsack-fig4.pcap")
    page.fill("#sndbuf", str(flow["sndbuf_bytes"]))
    page.press("#sndbuf", "Enter")
    click_cell(page, "flows", "id", "0a")
    wait_graph(page, "rtxq-graph", "g.layout.meta && g.layout.meta.entry === '0a' && g.data.length >= 3 && "
               "g.data.some(t => t.name === arg)", f"send buffer B = {flow['sndbuf_bytes']} bytes (given)")
    blocked = graph(page, "rtxq-graph", "(g.layout.shapes || []).filter(s => (s.name || '').startsWith('blocked')).length")
    assert blocked == len(flow["blocking_intervals"]) == 3
    expect(page.locator("#kpis")).to_contain_text(f"{flow['p_over_q']:.4f}")

    third = flow["blocking_intervals"][2]
    click_cell(page, "blocking", "#", "3")
    wait_graph(page, "ladder-graph", "g.layout.meta.frames.includes(arg[0]) && g.layout.meta.frames.includes(arg[1])",
               [third["start_frame"], third["end_frame"]])
    expect(page.locator("#ladder-caption")).to_contain_text("blocking interval 3")
    labels = graph(page, "ladder-graph", "g.data.filter(t => t.mode === 'text').flatMap(t => Array.from(t.text))")
    assert "N:10;2-3" in labels and "DATA 20" in labels
    x0, x1 = graph(page, "rtxq-graph", "g.layout.xaxis.range")
    assert x0 < third["start_ms"] / 1e3 - 0.3 < x1 and x1 - x0 < 0.05  # zoomed onto it (first DATA at 300 ms)
    page.screenshot(path=str(tmp_path / "dashboard-blocking-interval.png"), full_page=True)

    # export: the plot as SVG (Plotly draws it in the page) and the blocking table as CSV
    with page.expect_download() as svg:
        page.click("#svg-rtxq")
    svg_path = tmp_path / svg.value.suggested_filename
    svg.value.save_as(svg_path)
    assert svg_path.suffix == ".svg" and svg_path.read_text().lstrip().startswith("<svg")
    with page.expect_download() as csv:
        page.click("#csv-blocking")
    csv_path = tmp_path / csv.value.suggested_filename
    csv.value.save_as(csv_path)
    assert csv_path.name == "nrsack-0a-blocking.csv" and len(csv_path.read_text().strip().splitlines()) == 4


def test_click_a_finding_and_the_views_move(page, tmp_path):
    pick_capture(page, "nr04-rtx-of-freed-data.pcap")
    wait_graph(page, "rtxq-graph", "g.layout.meta && g.data.length >= 3")
    page.wait_for_selector("#findings td[data-dash-column='rule']")
    before = graph(page, "rtxq-graph", "g.layout.xaxis.range")
    frames_before = graph(page, "ladder-graph", "g.layout.meta.frames")
    click_cell(page, "findings", "rule", "NR-04")
    finding = page.locator("#findings td[data-dash-column='frames']").first.inner_text()
    frame = int(finding.split(",")[-1])
    assert frame not in frames_before
    wait_graph(page, "ladder-graph", "g.layout.meta.frames.includes(arg)", frame)
    wait_graph(page, "rtxq-graph", "(g.layout.xaxis.range[1] - g.layout.xaxis.range[0]) < arg", (before[1] - before[0]) / 5)
    expect(page.locator("#ladder-caption")).to_contain_text(f"NR-04 at frame {frame}")
    page.screenshot(path=str(tmp_path / "dashboard-finding.png"), full_page=True)


def upload(page, name, data: bytes):
    page.set_input_files("#upload input[type=file]", files=[{"name": name, "mimeType": "application/octet-stream",
                                                             "buffer": data}])


def test_uploads_non_capture_oversized_and_dotdot_names(page, served, tmp_path):
    _, library, folder = served
    upload(page, "notes.txt", b"these are notes, not packets\n")
    expect(page.locator("#upload-message")).to_contain_text("notes.txt: not a capture (neither pcap nor pcapng)")
    page.screenshot(path=str(tmp_path / "dashboard-upload-refused.png"))

    sample = (SAMPLES / "sctp-sack-fig2.pcap").read_bytes()
    upload(page, "huge.pcap", sample * (UPLOAD_LIMIT // len(sample) + 2))
    expect(page.locator("#upload-message")).to_contain_text("huge.pcap: refused")
    expect(page.locator("#upload-message")).to_contain_text("upload limit of 64.0 KB")

    upload(page, "../../escape.pcap", sample)
    expect(page.locator("#upload-message")).to_contain_text("escape.pcap: uploaded and analysed")
    stored = [Path(c.path) for c in library.captures.values() if c.uploaded]
    assert stored and all(path.parent == folder / "uploads" for path in stored)
    assert not list(folder.parent.rglob("escape.pcap")) and not list(folder.rglob("escape.pcap"))
    # the upload is now the chosen capture, and it shows like any other
    expect(page.locator("#flows-message")).to_contain_text("escape.pcap")
    wait_graph(page, "rtxq-graph", "g.layout.meta && g.data.length >= 3")
