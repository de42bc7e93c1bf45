"""Dashboard speed: from selecting a big capture's flow (analysed and cached) to its RtxQ graph drawn.

A simulated SCTP transfer of about a million frames (`nrsack generate simulate`) is analysed once;
then headless Chromium (Debian's, driven by Playwright) switches from a small sample to it and we
time until the RtxQ graph of the big flow is drawn, and a zoom to 1 % of the transfer. The same is
measured in the same run with decimation off (every point of the step function sent to the
browser) as the baseline. Goal: under 2 s.

Then a flood (issue 29): `nrsack dashboard` in a process of its own is sent an upload of FLOOD TCP flows
that never close (tests/support/hostile.write_flood, "unacked": 200,000 flows are 65 MB, within the
default upload limit), then asked for its flows table; printed: the upload's time (analysis included), the
flows table's, and the server's peak RSS (its ru_maxrss, read by its parent: tests/support/dashboard.py).
--flood-only skips the browser part.

    python3 bench/bench_dashboard.py [--frames 1000000] [--repeat 3] [--keep DIR] [--flood 200000] [--flood-only]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nrsack.dashboard import app as APP, library as LIB

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from support.dashboard import served_measured, update, upload  # noqa: E402
from support.hostile import write_flood  # noqa: E402

SMALL = ROOT / "sample-pcaps" / "sctp-sack-fig2.pcap"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PAYLOAD = 200           # bytes per DATA chunk: a million frames without a gigabyte of pcap
FRAMES_PER_CHUNK = 1.55  # DATA chunks plus SACKs (one per two chunks) plus retransmissions, measured
GRAPH = "document.querySelector('#rtxq-graph .js-plotly-plot')"


def make_capture(folder: Path, frames: int) -> Path:
    total = int(frames / FRAMES_PER_CHUNK) * PAYLOAD
    subprocess.run(["nrsack", "generate", "simulate", "--protocol", "sctp", "--ack", "sack",
                    "--bytes", str(total), "--payload", str(PAYLOAD), "--sndbuf", "64000", "--loss", "0.01",
                    "--delay", "10", "--out", str(folder)], check=True, stdout=subprocess.DEVNULL)
    return folder / "sender.pcap"


def wait_drawn(page, q_s):
    """Until the graph shows the big flow (its x range reaches the big transfer's end) and the
    browser has painted the frame after it."""
    page.wait_for_function(f"q => {{ const g = {GRAPH}; return !!(g && g.layout && g.layout.meta && "
                           "g.layout.meta.range[1] >= q * 0.99 && g.data.length >= 3); }", arg=q_s, polling="raf",
                           timeout=600_000)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def measure(browser, library, decimate, webgl, q_s, repeat):
    app = APP.create_app(library=library, decimate=decimate, webgl=webgl)
    server, url = APP.serve_in_background(app)
    select, zoom, points = [], [], 0
    try:
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1600, "height": 1200})
            page.goto(url)
            page.wait_for_selector("#flows td", timeout=120_000)
            page.click("#capture")
            page.get_by_role("option", name="small.pcap", exact=True).click()
            page.wait_for_function(f"() => {{ const g = {GRAPH}; return g && g.layout && g.layout.meta && "
                                   "g.layout.meta.range[1] < 1; }", timeout=120_000)
            page.click("#capture")
            start = time.perf_counter()
            page.get_by_role("option", name="big.pcap", exact=True).click()
            wait_drawn(page, q_s)
            select.append(time.perf_counter() - start)
            points = page.evaluate(f"() => {GRAPH}.layout.meta.points")
            lo, hi = q_s * 0.5, q_s * 0.51
            start = time.perf_counter()
            page.evaluate(f"([a, b]) => Plotly.relayout({GRAPH}, {{'xaxis.range': [a, b]}})", [lo, hi])
            page.wait_for_function(f"a => {{ const g = {GRAPH}; return g.layout.meta.range[0] === a; }}", arg=lo,
                                   polling="raf", timeout=600_000)
            zoom.append(time.perf_counter() - start)
            page.close()
    finally:
        server.shutdown()
    return statistics.median(select), statistics.median(zoom), points


def measure_flood(folder: Path, flows: int):
    """-> (upload s, flows table s, the server's peak RSS MB) of an upload of `flows` never-closed flows."""
    capture = folder / f"flood-{flows}.pcap"
    if not capture.exists():
        write_flood(capture, flows, "unacked")
    with served_measured(env=dict(os.environ, TMPDIR=str(folder))) as served:
        start = time.perf_counter()
        status, body = upload(served.url, capture, capture.name, timeout=3600)
        uploaded = time.perf_counter() - start
        if status != 200 or "uploaded and analysed" not in body:
            raise SystemExit(f"the upload failed: {status} {body[:200]}")
        capture_id = json.loads(body)["response"]["capture"]["value"]
        start = time.perf_counter()
        status, _ = update(served.url, "..flows.data...flows.active_cell...flows-message.children..",
                           [("capture", "value", capture_id), ("sndbuf", "value", None)], timeout=3600)
        listed = time.perf_counter() - start
        if status != 200:
            raise SystemExit(f"the flows table failed: {status}")
    return uploaded, listed, served.peak_mb, capture.stat().st_size


def print_flood(folder, flows):
    uploaded, listed, peak, size = measure_flood(folder, flows)
    print(f"flood upload: {flows:,} never-closed flows ({size / 2**20:.0f} MiB): upload and analysis {uploaded:.1f} s, "
          f"flows table {listed:.1f} s, server peak RSS {peak:,.0f} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="folder for the big capture (kept)")
    parser.add_argument("--flood", type=int, default=200_000, help="flows of the flood upload (0: none)")
    parser.add_argument("--flood-only", action="store_true", help="the flood upload alone, no browser")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="nrsack-bench-dashboard-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if args.flood_only:
            print_flood(folder, args.flood)
            return
        from playwright.sync_api import sync_playwright

        big = folder / "big.pcap"
        if not big.exists():
            t = time.perf_counter()
            make_capture(folder / "sim", args.frames).rename(big)
            print(f"simulated capture: {time.perf_counter() - t:.1f} s")
        shutil.copy(SMALL, folder / "small.pcap")
        library = LIB.Library([big, folder / "small.pcap"])
        t = time.perf_counter()
        analysis = library.analysis("c0")
        entry = analysis.entries[0]
        frames, events = analysis.capture.frames, sum(len(e.rtxq) for e in analysis.all_entries())
        print(f"capture: {frames:,} frames, {big.stat().st_size / 2**20:.0f} MiB; RtxQ rows {events:,}; "
              f"blocking intervals {len(entry.blocking):,}; analysis (once, cached) {time.perf_counter() - t:.1f} s")
        library.analysis("c1")
        t = time.perf_counter()
        for capture in ("c0", "c1"):
            library.findings(capture)
        print(f"conformance check (once, cached) {time.perf_counter() - t:.1f} s")
        q_s = float(entry.summary["q_s"])
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            runs = [("decimated, auto traces (SVG here)", measure(browser, library, True, None, q_s, args.repeat)),
                    ("decimated, WebGL traces", measure(browser, library, True, True, q_s, args.repeat)),
                    ("baseline: every point, WebGL", measure(browser, library, False, True, q_s, 1))]
            browser.close()
        print(f"{'':36}{'select flow -> drawn':>22}{'zoom to 1 %':>14}{'points sent':>14}")
        for name, (sel, zm, pts) in runs:
            print(f"{name:36}{sel:>20.2f} s{zm:>12.2f} s{pts:>14,}")
        fast, slow = runs[0][1], runs[2][1]
        print(f"speed-up over the baseline: select x{slow[0] / fast[0]:.1f}, zoom x{slow[1] / fast[1]:.1f}; "
              f"goal select < 2 s: {'met' if fast[0] < 2 else 'NOT met'} ({fast[0]:.2f} s, median of {args.repeat})")
        if args.flood:
            print_flood(folder, args.flood)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
