"""Many captures: the files and folders given to `nrsack analyze` / `check` -> the captures they hold.

Files that continue each other (a tcpdump -C / -G ring, editcap -c pieces) are one capture, read in
time order (events.Ring); any other set of files is that many independent captures. Which it is is
decided from the files, not their names (docs/decisions.md, "Many captures"): ordered by their first
frame's time, every file starts no earlier than the one before it ends. Such a set is a ring when the
files share their link type and snapshot length; when they do not, they cannot be one capture and
cannot be told from one either, so the set is refused (`separate` reads them one by one). Files
whose times overlap are independent captures: a ring never overlaps itself.
"""

from contextlib import contextmanager
from dataclasses import dataclass
import os

from nrsack.analyzer import _native
from nrsack.analyzer.read import events as E

# the first bytes of a capture file: pcap (micro- and nanosecond, either byte order), pcapng, compressed
_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a",
           *E.COMPRESSIONS)
# frames skimmed between looks at the clock while deciding whether a file ends before the next starts
_SKIM_STEP = 1 << 14


@dataclass
class Span:
    """One file as the decision sees it: its link type, snaplen and its first and last frame's time
    (None: no timed frame)."""

    path: str
    linktype: int
    snaplen: int
    first_ns: int = None
    last_ns: int = None


def captures(arguments, separate=False) -> list:
    """The captures `arguments` hold, each a path or an events.Ring: the files named directly are one set,
    each folder another (its capture files, by name; hidden and other files left out), and each set is
    one ring or as many captures as files (the module's rule). A lone file or '-': itself; a set with a
    missing or unreadable file: its files, each said or analysed on its own. separate: every file its own
    capture. Raises CaptureError for a folder without captures, or files that follow each other in time
    but differ in link type or snapshot length."""
    files, found = [], []
    for argument in map(os.fspath, arguments):
        if not os.path.isdir(argument):  # a missing or unreadable one is said when its analysis starts
            files.append(argument)
            continue
        inside = [os.path.join(argument, name) for name in sorted(os.listdir(argument))
                  if not name.startswith(".") and _is_capture(os.path.join(argument, name))]
        if not inside:
            raise E.CaptureError(f"{argument}: a folder without a capture file (pcap or pcapng) in it")
        found.append((inside, argument))
    if files:
        found.insert(0, (files, None))
    return [capture for paths, folder in found for capture in (paths if separate else _one_set(paths, folder))]


def _is_capture(path) -> bool:
    """A file of the folder that opens as pcap or pcapng; one that cannot be read is kept, so that its
    reading fails with its own one line, as a file named on the command line does."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(4).startswith(_MAGICS)
    except OSError:
        return True


def _one_set(files, folder) -> list:
    """[Ring] when `files` continue each other, else the files (the module's rule); folder: the set's
    folder, the ring's name (else its files joined by " + ", in time order)."""
    if len(files) == 1 or "-" in files or not all(map(os.path.isfile, files)):
        return files
    try:
        spans = [_first(path) for path in files]
    except E.CaptureError:  # an unreadable file is no part of a ring: each is said or analysed on its own
        return files
    timed = sorted((s for s in spans if s.first_ns is not None), key=lambda s: s.first_ns)
    if len(timed) < 2:
        return files  # nothing to continue
    for before, after in zip(timed, timed[1:]):
        if _ends_after(before, after.first_ns):
            return files  # overlapping in time: captures side by side, not one after the other
    for before, after in zip(spans, spans[1:]):
        if (before.linktype, before.snaplen) != (after.linktype, after.snaplen):
            raise E.CaptureError(
                f"{before.path} (link type {before.linktype}, snaplen {before.snaplen}) and {after.path} (link type "
                f"{after.linktype}, snaplen {after.snaplen}) follow each other in time but cannot be one capture; "
                "--separate reads them as separate captures")
    # files without a timed frame add nothing where they stand: last, in the order given
    ordered = [s.path for s in timed] + [s.path for s in spans if s.first_ns is None]
    return [E.Ring(tuple(ordered), folder or " + ".join(ordered))]


@contextmanager
def _skimmed(path):
    """The compiled Reader of `path`, skimming (Reader.skim), its decompression stopped after; the
    reader's errors as CaptureError."""
    decompressing = E.decompressing_of(path)
    reader = None
    try:
        reader = E._open_reader(path, path, decompressing)
        reader.skim()
        yield reader
    except _native.ReaderError as error:
        raise E.CaptureError(f"{path}: damaged or truncated capture, {error}") from None
    finally:
        reader = None
        if decompressing is not None:
            decompressing.stop()


def _first(path) -> Span:
    """The file's link type, snaplen and its first frame's time (its first frames skimmed)."""
    with _skimmed(path) as reader:
        while reader.read(_SKIM_STEP) == _SKIM_STEP and reader.span()[2] is None:
            pass
        return Span(path, *reader.span()[:3])


def _ends_after(span, time_ns) -> bool:
    """Whether a frame of the file at span.path is later than `time_ns`, skimming no further than the first
    such frame (captures side by side tell at once); span.last_ns: its last frame's time once all was read."""
    with _skimmed(span.path) as reader:
        while True:
            more = reader.read(_SKIM_STEP) == _SKIM_STEP
            last = reader.span()[3]
            if last is not None and last > time_ns:
                return True
            if not more:
                span.last_ns = last
                return False
