"""The commands as a person at an 80-column terminal sees them: whole values, whole help lines."""

import os
import pty
import re
import subprocess

from click.testing import CliRunner

from nrsack.analyzer import analyze
from nrsack.analyzer.views import formats
from nrsack.cli import main
from support.paths import REPO, SAMPLES

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_terminal(*args, columns=80):
    """-> the text `nrsack ARGS` shows on a pseudo-terminal `columns` wide (colours removed)."""
    controller, terminal = pty.openpty()
    env = dict(os.environ, COLUMNS=str(columns), LINES="50", TERM="xterm")
    process = subprocess.Popen(["nrsack", *args], stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert process.wait(timeout=120) == 0
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


def test_the_analyze_table_fits_80_columns_without_cutting_a_value():
    for capture, given, endpoints, values in (
            ("sctp-nrsack-fig4.pcap", ["--sndbuf", "8000"], ["192.0.2.1:5000 -> 198.51.100.1:5001"],
             ["0.3042", "0.0059", "0.3149", "8000"]),
            ("cmt-nrsack.pcap", [], ["192.0.2.2:5000 -> 198.51.100.2:5001"], ["0.3012", "0.2031", "239044", "cannot tell"])):
        shown = on_terminal("analyze", str(SAMPLES / capture), *given)
        assert "…" not in shown, shown
        assert max(map(len, shown.splitlines())) <= 80, shown
        for text in endpoints + values + ["vantage sender"]:
            assert text in shown, (text, shown)


def test_a_wide_terminal_keeps_one_line_per_entry():
    shown = on_terminal("analyze", str(SAMPLES / "sctp-nrsack-fig4.pcap"), "--sndbuf", "8000", columns=160)
    row = next(line for line in shown.splitlines() if line.startswith("│ 0a "))
    assert "192.0.2.1:5000 -> 198.51.100.1:5001" in row and row.rstrip().endswith("│ sender  │")


def test_every_header_of_the_table_is_explained_in_help():
    helped = CliRunner().invoke(main, ["analyze", "--help"], terminal_width=80).output
    for header in ("id", "NR", "q s", "p/q", "b/q", "B bytes", "max rtxq nr", "T b/s", "vantage"):
        assert re.search(rf"^  {re.escape(header)}: \w", helped, re.M), (header, helped)


def test_a_figure_the_capture_cannot_support_says_cannot_tell_and_why():
    from rich.console import Console

    analysis = analyze(SAMPLES / "sctp-nrsack-fig4.pcap")
    for entry in analysis.all_entries():
        entry.summary.update(sndbuf_bytes=None, b_over_q=None, p_over_q=None, sndbuf_verdict="cannot tell",
                             sndbuf_reason="a reason")
    for width in (80, 200):
        console = Console(width=width, record=True)
        console.print(formats.rich_table(analysis, None, width))
        shown = console.export_text()
        # the wide layout says it in each ratio's column; the compact one (n/a there) in B's
        assert shown.count("cannot tell") == (3 if width > 100 else 1) and "a reason" in shown, shown


def every_command(group=main, path=()):
    """-> [(words, command)] of every nrsack command and subcommand."""
    import click

    found = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        found.append(((*path, name), command))
        if isinstance(command, click.Group):
            found += every_command(command, (*path, name))
    return found


def test_nrsack_help_shows_every_command_line_whole():
    helped = CliRunner().invoke(main, ["--help"], terminal_width=80).output
    listed = helped.split("Commands:\n", 1)[1].splitlines()
    assert len(listed) == len(main.list_commands(None))
    for line in listed:
        assert len(line) <= 80 and not line.rstrip().endswith(("...", "(e.g.", ".")), line
        assert line.count("(") == line.count(")"), line


def test_help_texts_cite_documents_the_installed_package_has():
    """A help text names a document as `nrsack docs NAME`, which prints it from the package (no repository
    needed); never as a path into the repository's docs/."""
    cited = set()
    for words, command in every_command():
        helped = CliRunner().invoke(main, [*words, "--help"], terminal_width=200).output
        assert not re.search(r"\w\.md\b", helped), (words, helped)
        cited |= set(re.findall(r"nrsack docs ([\w-]+)", helped))
    assert {"metrics", "rules", "simulator"} <= cited
    for name in cited:
        shown = CliRunner().invoke(main, ["docs", name])
        assert shown.exit_code == 0 and shown.output == (REPO / "docs" / f"{name}.md").read_text(), name


def test_an_unknown_document_lists_the_known_ones():
    shown = CliRunner().invoke(main, ["docs", "metric"])
    assert shown.exit_code == 2 and "metrics" in shown.output and "rules" in shown.output
