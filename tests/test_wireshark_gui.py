"""Wireshark's Qt GUI with the "nrsack" profile and the C plugin, under Xvfb, as a normal user
(Wireshark ignores personal plugin folders for root): on a capture with send-buffer-blocked frames, a
screenshot shows rows in the profile's blocked colour across the packet list, with text in the
profile's text colour on them.
"""

import colorsys
import contextlib
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from support import tshark
from support.paths import SAMPLES

pytestmark = [pytest.mark.tshark, pytest.mark.slow, pytest.mark.gui,
              pytest.mark.skipif(tshark.WIRESHARK_TARGET != "native",
                                 reason="the Debian chroots of other releases hold tshark, not the Qt GUI")]

PCAP = SAMPLES / "sctp-nrsack-fig4.pcap"
SNDBUF = 8000
PROFILE = tshark.REPO / "wireshark" / "profile"
BLOCKED_RULE = "NR-SACK send buffer blocked"
DEADLINE_S = 45


def profile_colours(rule):
    """The (background, foreground) of a colorfilters rule as 8-bit RGB, as the X server shows them."""
    for line in (PROFILE / "colorfilters").read_text().splitlines():
        m = re.match(r"^@([^@]+)@.+@\[(\d+),(\d+),(\d+)\]\[(\d+),(\d+),(\d+)\]$", line)
        if m and m.group(1) == rule:
            values = [int(v) >> 8 for v in m.groups()[1:]]
            return tuple(values[:3]), tuple(values[3:])
    raise AssertionError(f"no colorfilters rule {rule!r}")


def read_xwd(data: bytes):
    """An xwd -root dump (TrueColor, 24 or 32 bits per pixel) -> (width, height, rows of (r, g, b))."""
    fields = struct.unpack(">25I", data[:100])
    header_size, width, height = fields[0], fields[4], fields[5]
    byte_order, bits_per_pixel, bytes_per_line = fields[7], fields[11], fields[12]
    masks, ncolors = fields[14:17], fields[19]
    assert bits_per_pixel in (24, 32), f"xwd: {bits_per_pixel} bits per pixel"
    size = bits_per_pixel // 8
    shifts = [(m & -m).bit_length() - 1 for m in masks]
    pixels = data[header_size + 12 * ncolors:]
    order = "little" if byte_order == 0 else "big"
    rows = []
    for y in range(height):
        start = y * bytes_per_line
        line = (int.from_bytes(pixels[x:x + size], order) for x in range(start, start + width * size, size))
        rows.append([tuple((p & m) >> s for m, s in zip(masks, shifts)) for p in line])
    return width, height, rows


def coloured_rows(rows, window_width, background, foreground):
    """Screen lines where `background` spans most of the window's width (a coloured row, its text
    breaking it up), and whether `foreground` text is drawn on them."""
    found, text_pixels = [], 0
    for y, line in enumerate(rows):
        xs = [x for x, p in enumerate(line) if p == background]
        if xs and xs[-1] - xs[0] >= 0.6 * window_width and len(xs) >= 0.5 * window_width:
            found.append(y)
            text_pixels += sum(1 for p in line[xs[0]:xs[-1]] if p == foreground)
    return found, text_pixels


def as_nobody(cmd):
    return ["setpriv", f"--reuid={tshark.NOBODY}", f"--regid={tshark.NOBODY}", "--clear-groups", *cmd] \
        if os.geteuid() == 0 else cmd


def stop(proc):
    if proc and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def window_width(display, title, exact=True):
    """The width of the window named `title` (or a name containing it), None while there is none."""
    out = subprocess.run(["xwininfo", "-root", "-tree", "-display", display], capture_output=True, text=True).stdout
    name = re.escape(title) if exact else rf'[^"]*{re.escape(title)}[^"]*'
    m = re.search(rf'"{name}": \([^)]*\)\s+(\d+)x(\d+)', out)
    return int(m.group(1)) if m else None


@contextlib.contextmanager
def wireshark(plugin):
    """Xvfb and Wireshark (profile "nrsack", `plugin` loaded, the blocked capture open) as uid 65534;
    yields (display, the Wireshark process, the main window's width) once the main window shows the
    capture; kills both process groups at the end."""
    missing = [tool for tool in ("wireshark", "Xvfb", "xwd", "xwininfo", "xdotool") if not shutil.which(tool)]
    assert not missing, f"not installed: {missing} (scripts/setup.sh installs them)"
    scratch = Path(tempfile.mkdtemp(prefix="nrsack-gui-"))
    xvfb = gui = None
    try:
        (scratch / "home").mkdir()
        shutil.copytree(PROFILE, scratch / "config" / "profiles" / "nrsack")
        capture = scratch / PCAP.name
        shutil.copyfile(PCAP, capture)
        for path in [scratch, *scratch.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o644)
        read_end, write_end = os.pipe()
        xvfb = subprocess.Popen(as_nobody(["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1280x800x24",
                                           "-nolisten", "tcp"]),
                                pass_fds=(write_end,), start_new_session=True, stderr=subprocess.DEVNULL)
        os.close(write_end)
        with os.fdopen(read_end) as displayfd:
            display = ":" + displayfd.readline().strip()
        assert display != ":", "Xvfb did not start"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(scratch / "home"), "TZ": "UTC", "LC_ALL": "C.UTF-8",
               "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "XDG_RUNTIME_DIR": str(scratch / "home"),
               "WIRESHARK_CONFIG_DIR": str(scratch / "config"),
               "WIRESHARK_PLUGIN_DIR": str(plugin.plugin_dir(scratch))}
        gui = subprocess.Popen(as_nobody(["wireshark", "-C", "nrsack", "-o", f"nrsack.sndbuf:{SNDBUF}",
                                          *plugin.tshark_args(), "-r", str(capture)]),
                               env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + DEADLINE_S
        width = None
        # the main window takes the capture's name once the file is read
        while not width and time.monotonic() < deadline and gui.poll() is None:
            time.sleep(0.5)
            width = window_width(display, PCAP.name)
        assert gui.poll() is None, f"wireshark exited: {gui.stderr.read()[-2000:]!r}"
        assert width, f"no Wireshark window for {PCAP.name} within {DEADLINE_S} s"
        yield display, gui, width
    finally:
        stop(gui)
        stop(xvfb)
        shutil.rmtree(scratch, ignore_errors=True)


def test_blocked_frames_are_coloured_rows(nrsack_c_plugin, tmp_path):
    background, foreground = profile_colours(BLOCKED_RULE)
    # a row colour, not the packet list's own white (or black, or grey)
    _, lightness, saturation = colorsys.rgb_to_hls(*(c / 255 for c in background))
    assert saturation >= 0.5 and 0.15 <= lightness <= 0.9, f"{BLOCKED_RULE}: background {background} is no row colour"
    with wireshark(nrsack_c_plugin) as (display, gui, width):
        shot = tmp_path / "wireshark.xwd"
        rows, text_pixels = [], 0
        deadline = time.monotonic() + DEADLINE_S
        # rows are painted a moment after the window has its title
        while not rows and time.monotonic() < deadline and gui.poll() is None:
            shot.write_bytes(subprocess.run(["xwd", "-root", "-silent", "-display", display],
                                            capture_output=True, check=True).stdout)
            _, _, pixels = read_xwd(shot.read_bytes())
            rows, text_pixels = coloured_rows(pixels, width, background, foreground)
            time.sleep(0.5)
        assert len(rows) >= 10, f"no row in the blocked colour {background} in {shot}"
        assert text_pixels > 0, f"no text in {foreground} on the blocked rows in {shot}"


def test_statistics_menu_opens_the_nr_sack_tree(nrsack_c_plugin):
    """Statistics > NR-SACK (the C plugin's stats tree, the menu's last entry: Up from the top wraps to
    it) opens the tree's window. The Lua plugin's entry sits mid-menu (its protocol section, sorted
    by name) where no key reaches it; -z nrsack,tree tests its text."""
    title = "Wireshark · NR-SACK · " + PCAP.name
    with wireshark(nrsack_c_plugin) as (display, gui, _):
        env = {**os.environ, "DISPLAY": display}
        main = subprocess.run(["xdotool", "search", "--name", re.escape(PCAP.name)], env=env, capture_output=True,
                              text=True, check=True).stdout.split()[0]
        subprocess.run(["xdotool", "windowfocus", "--sync", main], env=env, check=True)
        subprocess.run(["xdotool", "key", "--window", main, "alt+s"], env=env, check=True)
        time.sleep(1)
        subprocess.run(["xdotool", "key", "--delay", "300", "Up", "Return"], env=env, check=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not window_width(display, title):
            time.sleep(0.5)
        assert window_width(display, title), f"no window {title!r} after Statistics > NR-SACK"
