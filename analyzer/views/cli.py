"""`nrsack analyze`, `nrsack compare`: the analyzer's commands (`nrsack plot` draws as the dashboard does,
so it lives there).

Unusable input (not a capture, cut short before its first whole record, unknown link type, no
flows) ends with one line on stderr and exit code 2; malformed packets inside a usable capture are
GEN-01 findings instead, and a capture cut short later is analysed up to its last whole record with
one warning line on stderr (exit 0). CAPTURE may be '-' (standard input) or a FIFO. Several files or a
folder: a ring read as one capture, or independent captures put together (views/many.py).
"""

import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import click

# captures above this size get a progress bar (below it the bar would only flicker)
PROGRESS_MIN_BYTES = 32 << 20


def fail(message):
    click.echo(f"nrsack: error: {message}", err=True)
    sys.exit(2)


def fail_no_flow(flow_filter, capture, analysis, shown=20):
    """--flow named nothing: say which ids there are (the first `shown` of them; a capture may hold millions)."""
    ids = [e.summary["id"] for e in analysis.all_entries()]
    listed = ", ".join(ids[:shown]) + (f", ... ({len(ids)} in all)" if len(ids) > shown else "")
    fail(f"no flow {flow_filter!r} in {capture}; its flows: {listed}")


def warn_truncated(capture):
    """One line on stderr when the capture ended inside a record: the figures cover what came before."""
    if capture.truncated:
        click.echo(f"nrsack: warning: {capture.path}: capture cut short, analysed up to frame {capture.frames} "
                   f"({capture.truncated})", err=True)


@contextmanager
def _progress(path):
    from nrsack.analyzer.read.events import Ring

    size = path.size() if isinstance(path, Ring) else os.path.getsize(path) if os.path.isfile(path) else 0
    # rich draws its bar on stdout only where that is a terminal or its variables say to treat it as one;
    # elsewhere a transient bar shows nothing, and importing rich for it cost a large capture's run 40 ms
    drawn = sys.stdout.isatty() or any(os.environ.get(name) for name in ("FORCE_TERMINAL", "FORCE_COLOR", "TTY_COMPATIBLE"))
    if size < PROGRESS_MIN_BYTES or not drawn:
        yield None
        return
    from rich.progress import BarColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), transient=True, console=None) as bar:
        task = bar.add_task(f"reading {os.path.basename(path)}", total=size)
        yield lambda done: bar.update(task, completed=done)


def run_analysis(path, sndbuf, max_open_flows=None, jobs=1):
    from nrsack.analyzer import CaptureError, analyze

    try:
        with _progress(path) as progress:
            return analyze(path, sndbuf=sndbuf, progress=progress, jobs=jobs, **open_flows(max_open_flows))
    except CaptureError as error:
        fail(str(error))


def run_streaming(path, sndbuf, flow_filter, out_dir, fmt, checker=None, max_open_flows=None, jobs=1):
    """-> (the summary as the views take it, the files written); `checker` (checker.Checker) rides along
    on the same pass (analyze --check)."""
    from nrsack.analyzer import CaptureError
    from nrsack.analyzer.views import stream
    from nrsack.analyzer.views import formats

    keep = None if flow_filter is None else (lambda entry_id: formats.id_matches(entry_id, flow_filter))
    observe = None if checker is None else checker.attach
    try:
        with _progress(path) as progress:
            result = stream.analyze_to_files(path, out_dir, fmt, sndbuf, keep, progress=progress, observe=observe,
                                             jobs=jobs, **open_flows(max_open_flows))
    except CaptureError as error:
        fail(str(error))
    return result, result.files


def check_findings(checker, flow_filter, severity):
    """The findings of `analyze --check`: those of the flows --flow names (and of no flow), at `severity` or
    more severe."""
    from nrsack.analyzer.rules.checker import at_least

    found = at_least(checker.finish()[1], severity)
    if flow_filter is not None:
        number = flow_filter.rstrip("ab").split(".")[0]
        found = [f for f in found if f["flow"] is None or str(f["flow"]) == number]
    return found


def run_follow(path, sndbuf, flow_filter, idle_s):
    """--follow: on a terminal the table redraws in place (rich Live); piped, each refresh is printed
    after the one before, the final one last."""
    from rich.console import Console
    from rich.live import Live

    from nrsack.analyzer import CaptureError
    from nrsack.analyzer.views import follow as F
    from nrsack.analyzer.views import formats

    console = Console() if sys.stdout.isatty() else Console(width=200)

    def table(analysis, final):
        ids = formats.selected_ids(analysis, flow_filter)
        title = "final" if final else f"following, {analysis.capture.frames} frames so far"
        return formats.rich_table(analysis, ids, console.width, caption=title)

    try:
        if console.is_terminal:
            with Live(console=console, auto_refresh=False) as live:
                result = F.follow(path, sndbuf, lambda a, final: live.update(table(a, final), refresh=True),
                                  idle_s=idle_s)
        else:
            result = F.follow(path, sndbuf, lambda a, final: (console.print(table(a, final)), sys.stdout.flush()),
                              idle_s=idle_s)
    except CaptureError as error:
        fail(str(error))
    warn_truncated(result.capture)


sndbuf_option = click.option("--sndbuf", type=click.IntRange(min=1), default=None, metavar="BYTES",
                             help="Send buffer B in payload bytes (default: estimated from the capture, or cannot tell).")


def socket_buffer_options(command):
    """--sndbuf-socket, --stack and --mss: B from the socket's SO_SNDBUF by the stack's accounting."""
    for option in reversed((
        click.option("--sndbuf-socket", type=click.IntRange(min=1), default=None, metavar="BYTES",
                     help="The sender's SO_SNDBUF (the value given to setsockopt), translated into B by --stack's "
                          "accounting (`nrsack docs metrics`); instead of --sndbuf."),
        click.option("--stack", type=click.Choice(["linux"]), default=None,
                     help="With --sndbuf-socket: the sender's stack."),
        click.option("--mss", type=click.IntRange(min=1), default=None, metavar="BYTES",
                     help="With --sndbuf-socket: payload per segment (default 1448: Ethernet with TCP timestamps)."),
    )):
        command = option(command)
    return command


def resolve_sndbuf(sndbuf, sndbuf_socket, stack, mss):
    """B in payload bytes from --sndbuf or --sndbuf-socket/--stack/--mss (None: estimate it)."""
    from nrsack.analyzer.state.socket_buffer import DEFAULT_MSS, payload_bytes

    if sndbuf_socket is None:
        if stack is not None or mss is not None:
            fail("--stack and --mss go with --sndbuf-socket")
        return sndbuf
    if sndbuf is not None:
        fail("give --sndbuf (B in payload bytes) or --sndbuf-socket (the socket's SO_SNDBUF), not both")
    if stack is None:
        fail("--sndbuf-socket needs --stack (the accounting that turns SO_SNDBUF into payload)")
    return payload_bytes(sndbuf_socket, stack, mss or DEFAULT_MSS)


max_open_flows_option = click.option(
    "--max-open-flows", type=click.IntRange(min=1), default=None, metavar="N",
    help="Flows held open at once (default 50000, a few hundred MB): past it the flows without data are released "
         "and those idle longest finished at their last event, incomplete, with a note saying how many.")


def open_flows(max_open_flows) -> dict:
    """The keyword for the flag (none: the pipeline's default)."""
    return {} if max_open_flows is None else {"max_open_flows": max_open_flows}


flow_option = click.option("--flow", "flow_filter", default=None, metavar="ID",
                           help="Only this entry (e.g. 0a, 0a.1) or flow number (e.g. 0).")


def _table_legend():
    from nrsack.analyzer.views.formats import legend_text

    # \b keeps click from rewrapping the legend into one paragraph
    return "The table's columns (`nrsack docs metrics` defines each figure):\n\n\b\n" + legend_text()


def resolve_captures(arguments, separate):
    """The captures in the files and folders given (read/inputs.py); unusable ones end here (exit 2)."""
    from nrsack.analyzer.read import inputs
    from nrsack.analyzer import CaptureError

    if len(arguments) == 1 and not os.path.isdir(arguments[0]):
        return list(arguments)  # one capture: read as it always was, even when it is missing
    try:
        return inputs.captures(arguments, separate)
    except CaptureError as error:
        fail(str(error))


def print_table(console, analysis, ids, capture, found):
    """One capture's table, its reader's findings and (found: --check's findings) the check report."""
    from nrsack.analyzer.views import formats

    console.print(formats.rich_table(analysis, ids, console.width))
    print_notes(console, analysis, ids)
    if found is not None:
        from nrsack.analyzer.views.check_cli import text_report

        console.print(text_report([(capture, None, found)]), markup=False, highlight=False)


def print_notes(console, analysis, ids, capture=""):
    """The reader's findings and the analysis's notes (GEN-01: flows the budget cut, events after a flow's
    end), one line each however long (soft_wrap): what the figures leave out. capture: its name before
    each line (several captures)."""
    from nrsack.analyzer.views import formats

    where = f"{capture}: " if capture else ""
    for frame, reason in analysis.capture.findings:
        console.print(f"{where}GEN-01 frame {frame}: {reason}", markup=False, soft_wrap=True)
    for finding in formats.summary_findings(analysis, ids):
        if finding["rule"] != "GEN-01" or finding["severity"] == "note":
            console.print(f"{where}{finding['rule']} {finding['severity']} frame {finding['frames'][0]}: "
                          f"{finding['message'].split(' ', 1)[1]}", markup=False, soft_wrap=True)


def run_many(captures, sndbuf, flow_filter, fmt, out_dir, check, severity, max_open_flows, workers, scheduler, jobs=1):
    """Several independent captures (views/many.py): each as `analyze CAPTURE --stream` would, one by
    one or on a Dask cluster; one JSON document, one summary and one dataset partitioned by capture, or
    each capture's table in turn. Exit 2 when one was unusable (after the others), else 1 when --check
    found an error."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from nrsack.analyzer import CaptureError
    from nrsack.analyzer.views import formats, many

    files_wanted = fmt in ("csv", "parquet") or out_dir
    tables = "parquet" if fmt == "parquet" else "csv"
    out = (out_dir or ".") if files_wanted else None
    tasks = [many.Job(capture, label, sndbuf, flow_filter, out, tables, check, severity, max_open_flows, jobs)
             for capture, label in zip(captures, many.labels(captures))]
    errors = Console(stderr=True)
    try:
        if not errors.is_terminal:  # a bar only where someone watches it
            results = many.run_jobs(tasks, workers, scheduler)
        else:
            with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), transient=True, console=errors) as bar:
                task = bar.add_task(f"analysing {len(tasks)} captures", total=len(tasks))
                results = many.run_jobs(tasks, workers, scheduler, lambda: bar.advance(task))
    except CaptureError as error:
        fail(str(error))
    usable = [r for r in results if r["error"] is None]
    for r in results:
        if r["error"] is not None:
            click.echo(f"nrsack: error: {r['error']}", err=True)
    if fmt == "json":
        sys.stdout.write('{"captures": [\n')
        for i, r in enumerate(usable):
            if i:
                sys.stdout.write(",\n")
            analysis = r["analysis"]
            formats.write_json(analysis, sys.stdout, formats.selected_ids(analysis, flow_filter), findings=r["found"])
        sys.stdout.write("]}\n")
    elif fmt == "table":
        console = Console() if sys.stdout.isatty() else Console(width=200)
        for r, job in zip(results, tasks):
            if r["error"] is None:
                print_table(console, r["analysis"], formats.selected_ids(r["analysis"], flow_filter), str(job.capture),
                            r["found"])
    elif files_wanted:  # the figures go to files: what they leave out, to the terminal
        for r, job in zip(results, tasks):
            if r["error"] is None:
                print_notes(Console(stderr=True, width=200), r["analysis"],
                            formats.selected_ids(r["analysis"], flow_filter), str(job.capture))
    for r in usable:
        warn_truncated(r["analysis"].capture)
    if files_wanted:
        summary = Path(out) / f"summary.{tables}"
        formats.write_table(many.merged_summary(usable, flow_filter), summary, tables)
        click.echo(f"wrote {summary}", err=fmt == "json")
        for table in ("rtxq", "blocking"):
            click.echo(f"wrote {Path(out) / table} (partitioned by capture)", err=fmt == "json")
    if len(usable) < len(results):
        sys.exit(2)
    if check and any(f["severity"] == "error" for r in usable for f in r["found"]):
        sys.exit(1)


@click.command(epilog=_table_legend())
@click.argument("captures", nargs=-1, required=True, type=click.Path(), metavar="CAPTURE...")
@sndbuf_option
@socket_buffer_options
@flow_option
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "parquet"]), default="table",
              show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Folder for summary/rtxq/blocking files (csv and parquet: default the current folder).")
@click.option("--stream", is_flag=True,
              help="Hold one chunk of the capture at a time (memory bounded by flows and window, not by the "
                   "capture's length); tables, when asked for, are written as they are made.")
@click.option("--follow", is_flag=True,
              help="A live table of every sender direction while CAPTURE is read (e.g. '-' from tcpdump -w -, or "
                   "a file still being written), like top, redrawn every second; the final one at its end or Ctrl-C.")
@click.option("--idle-timeout", "idle_s", type=click.FloatRange(min=0), default=10.0, show_default=True,
              metavar="SECONDS",
              help="With --follow on a file: read it as it grows (like tail -f) until it has not grown this long.")
@click.option("--check", "check", is_flag=True,
              help="Also run every rule (`nrsack docs rules`) in the same pass (as `nrsack check`): json lists its findings "
                   "under `findings`, the table adds the check report; exit 1 when one is an error.")
@click.option("--severity", type=click.Choice(["error", "warning", "note"]), default="note", show_default=True,
              help="With --check: report findings of this severity or more severe.")
@max_open_flows_option
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Threads for each capture: it is read once, a chunk ahead, and each chunk's flows are fed on N "
                   "threads (the same figures as with 1; with --check only the reading is ahead).")
@click.option("--separate", is_flag=True,
              help="Each file its own capture, even where the files continue each other (a ring).")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Several captures: analyse them on a local Dask cluster of N processes (the sweep extra).")
@click.option("--scheduler", default=None, metavar="ADDR",
              help="Several captures: analyse them on the Dask cluster at ADDR (e.g. tcp://host:8786); its "
                   "workers must be able to read the captures and write --out.")
def analyze(captures, sndbuf, sndbuf_socket, stack, mss, flow_filter, fmt, out_dir, stream, follow, idle_s, check, severity,
            max_open_flows, jobs, separate, workers, scheduler):
    """RtxQ evolution, send-buffer blocking and p/q of every sender direction in CAPTURE ('-': standard input).

    Several files or a folder: files that continue each other (a tcpdump -C / -G ring, editcap -c pieces)
    are one capture in time order, frames numbered on across the files; other files are independent
    captures, analysed one by one or spread over Dask (--workers, --scheduler) into one summary, one
    JSON document and tables partitioned by capture (`nrsack docs metrics`, "Many captures").

    With --check, exit status as `nrsack check`: 0 without an error finding, 1 with one, 2 for unusable input."""
    from nrsack.analyzer.views import formats

    sndbuf = resolve_sndbuf(sndbuf, sndbuf_socket, stack, mss)
    found_captures = resolve_captures(captures, separate)
    if follow and (len(found_captures) > 1 or not isinstance(found_captures[0], str)):
        fail("--follow reads one file as it grows, not several")
    if len(found_captures) > 1:
        return run_many(found_captures, sndbuf, flow_filter, fmt, out_dir, check, severity, max_open_flows, workers,
                        scheduler, jobs)
    capture = found_captures[0]

    if follow:
        return run_follow(capture, sndbuf, flow_filter, idle_s)

    tables = "parquet" if fmt == "parquet" else "csv"
    files_wanted = fmt in ("csv", "parquet") or out_dir
    # the summary alone never needs the whole capture in memory: it is always streamed (and so is --check)
    streaming = stream or not files_wanted or check
    checker = None
    if check:
        from nrsack.analyzer.rules.checker import Checker

        checker = Checker()
    if streaming:
        analysis, written = run_streaming(capture, sndbuf, flow_filter, (out_dir or ".") if files_wanted else None, tables,
                                          checker, max_open_flows, jobs)
    else:
        analysis = run_analysis(capture, sndbuf, max_open_flows, jobs)
    ids = formats.selected_ids(analysis, flow_filter)
    if ids is not None and not ids:
        fail_no_flow(flow_filter, capture, analysis)
    found = check_findings(checker, flow_filter, severity) if check else None
    if fmt == "json":
        # a flow at a time: a million flows are a GB of text; with --check, the checker's findings
        formats.write_json(analysis, sys.stdout, ids, findings=found)
    elif fmt == "table":
        from rich.console import Console

        # piped output is not limited to 80 columns: the table stays one line per entry
        console = Console() if sys.stdout.isatty() else Console(width=200)
        print_table(console, analysis, ids, capture, found)
    elif files_wanted:  # the figures go to files: what they leave out, to the terminal
        from rich.console import Console

        print_notes(Console(stderr=True, width=200), analysis, ids)
    warn_truncated(analysis.capture)
    if streaming:
        for path in written:
            click.echo(f"wrote {path}", err=fmt == "json")
    elif files_wanted:
        for path in formats.write_tables(analysis, out_dir or ".", tables, ids):
            click.echo(f"wrote {path}", err=fmt == "json")
    if check and any(f["severity"] == "error" for f in found):
        sys.exit(1)


@click.command()
@click.argument("run_a", type=click.Path(dir_okay=False))
@click.argument("run_b", type=click.Path(dir_okay=False))
@sndbuf_option
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def compare(run_a, run_b, sndbuf, fmt):
    """Throughput of RUN_A (e.g. NR-SACK) and RUN_B (e.g. SACK) and the gain of A over B, in %.

    Each run is a capture or the JSON of `nrsack analyze --format json`; sender directions are
    paired in order."""
    from nrsack.analyzer.views import formats

    summaries = []
    for run in (run_a, run_b):
        if run.endswith(".json"):
            try:
                with open(run) as handle:
                    summaries.append(json.load(handle))
            except (OSError, ValueError) as error:
                fail(f"{run}: not an analyzer JSON summary ({error})")
        else:
            summary_only, _ = run_streaming(run, sndbuf, None, out_dir=None, fmt="csv")  # fmt unused: no files
            summaries.append(formats.summary_dict(summary_only))
    result = formats.compare_dict(*summaries)
    if fmt == "json":
        click.echo(formats.dump_json(result))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"A = {run_a}   B = {run_b}")
    for header in ("A", "B", "sender -> receiver", "T_A b/s", "T_B b/s", "gain %", "p/q A", "p/q B"):
        table.add_column(header)
    for p in result["pairs"]:
        gain = "n/a" if p["gain_percent"] is None else f"{p['gain_percent']:+.2f}"
        table.add_row(p["a"], p["b"], f"{p['src']} -> {p['dst']}", formats.fixed(p["throughput_a_bps"], 0),
                      formats.fixed(p["throughput_b_bps"], 0), gain, formats.ratio_text(p["p_over_q_a"]),
                      formats.ratio_text(p["p_over_q_b"]))
    # piped output is not limited to 80 columns, as analyze's table
    console = Console() if sys.stdout.isatty() else Console(width=200)
    console.print(table)
    note = formats.estimated_sndbuf_note(result["pairs"])
    if note:
        console.print(note, markup=False, highlight=False)
