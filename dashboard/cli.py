"""`nrsack dashboard`: serve the Dash app on localhost; `nrsack plot`: its RtxQ figures in one HTML file."""

import os
import signal

import click

from nrsack.analyzer.views.cli import fail_no_flow, flow_option, run_analysis, sndbuf_option


@click.command()
@click.argument("captures", nargs=-1, type=click.Path(exists=True), metavar="[CAPTURE_OR_DIR]...")
@click.option("--port", type=click.IntRange(0, 65535), default=8050, show_default=True,
              help="TCP port on 127.0.0.1 (0: any free port).")
@click.option("--upload-limit", type=click.IntRange(min=1), default=64, show_default=True, metavar="MB",
              help="Largest capture the page accepts as an upload.")
def dashboard(captures, port, upload_limit):
    """Look at RtxQ, blocking and findings of captures (default: the bundled sample-pcaps/)."""
    from nrsack.dashboard.app import create_app, local_server
    from nrsack.dashboard.library import Library

    library = Library(list(captures) or None, upload_limit << 20)
    if not library.captures:
        raise click.ClickException("no capture files in " + (" ".join(captures) or "sample-pcaps/"))
    app = create_app(library=library, upload_limit=library.upload_limit)
    # localhost only: the page shows every capture it was given and accepts uploads
    try:
        server, url = local_server(app, port)
    except OSError as error:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {error.strerror}") from None
    click.echo(f"nrsack dashboard: {len(library.captures)} capture(s); open {url}  (Ctrl-C stops)")

    def stop(signum, frame):  # SIGTERM (a service manager, kill) ends like Ctrl-C: the uploads go too
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        library.close()


@click.command()
@click.argument("capture", type=click.Path(dir_okay=False))
@sndbuf_option
@flow_option
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="HTML file to write (default: CAPTURE's name with .html, in the current folder).")
def plot(capture, sndbuf, flow_filter, out_file):
    """An HTML page of the RtxQ over time of every sender direction, as the dashboard draws it: the
    queues, the send-buffer line, blocked time shaded and loss recovery (a gap open) as a band."""
    from nrsack.analyzer.views import formats
    from nrsack.dashboard import figures

    analysis = run_analysis(capture, sndbuf)
    ids = formats.selected_ids(analysis, flow_filter)
    if ids is not None and not ids:
        fail_no_flow(flow_filter, capture, analysis)
    entries = [e for e in analysis.all_entries() if ids is None or e.summary["id"] in ids]
    out_file = out_file or os.path.splitext(os.path.basename(capture))[0] + ".html"
    with open(out_file, "w") as page:
        page.write(figures.rtxq_page(entries, f"RtxQ of {capture}"))
    click.echo(f"wrote {out_file}")
