"""The captures the dashboard knows: the paths it was started with, plus uploads, and their analyses.

Uploads are written into a temporary folder the app owns, under names the app makes up
(upload-0001.pcap); the name the browser sends is only ever shown, never used as a path.
Analyses are cached per (capture, send buffer), so switching flows or zooming never re-reads a file; they
are streamed (stored.py): their tables wait on disk, so an upload of any number of flows costs bounded memory.
"""

import base64
import binascii
import importlib.resources
import re
import shutil
import tempfile
import threading
import time
from collections import Counter, OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nrsack.analyzer import CaptureError
from nrsack.dashboard.stored import analyze_stored

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap")
DEFAULT_UPLOAD_LIMIT = 64 << 20
# sample-pcaps/, installed with the package as nrsack.samples (a wheel has no repository around it)
SAMPLES_DIR = Path(importlib.resources.files("nrsack.samples"))
CACHED_ANALYSES = 8
# uploads kept: the newest KEPT_UPLOADS, none older than UPLOAD_MAX_AGE_S (the folder never fills a disk)
KEPT_UPLOADS = 16
UPLOAD_MAX_AGE_S = 3600

PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")


class UploadRefused(Exception):
    """An upload the app does not keep; the message is for the page."""


@dataclass(frozen=True)
class Capture:
    id: str
    name: str   # what the page shows
    path: str   # where the file is (for uploads: inside the app's folder)
    uploaded: bool = False
    created: float = 0.0  # time.monotonic() of the upload


def display_name(filename: str) -> str:
    """The browser's file name reduced to a harmless label: last path part, printable, short."""
    base = re.split(r"[\\/]", filename or "")[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip(". ") or "upload"
    return base[:80]


SWEEP_TABLE = "gain.csv"  # what `nrsack generate sweep --out DIR` writes, with regions.csv beside it


def capture_paths(paths):
    """Files as given; folders -> their capture files (not recursive), sorted. Sweep folders
    (holding gain.csv) are not captures and are left out."""
    found = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.suffix.lower() in CAPTURE_SUFFIXES and p.is_file()))
        else:
            found.append(path)
    return found


RUN_TRUTH = "truth.json"  # beside the captures of a run folder (`nrsack lab run`, `generate`)


def capture_label(path):
    """A run folder's captures are all sender.pcap / receiver.pcap: labelled with the folder's name."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}" if (path.parent / RUN_TRUTH).is_file() else path.name


def sweep_dirs(paths):
    return [Path(p) for p in paths if (Path(p) / SWEEP_TABLE).is_file()]


class Library:
    def __init__(self, paths=None, upload_limit=DEFAULT_UPLOAD_LIMIT, upload_dir=None, kept_uploads=KEPT_UPLOADS,
                 upload_max_age_s=UPLOAD_MAX_AGE_S):
        self.upload_limit = upload_limit
        self.kept_uploads, self.upload_max_age_s = kept_uploads, upload_max_age_s
        self._own_dir = upload_dir is None
        self.upload_dir = Path(upload_dir or tempfile.mkdtemp(prefix="nrsack-dashboard-"))
        self.upload_dir.mkdir(parents=True, exist_ok=True)
        self.captures = OrderedDict()
        self._analyses = OrderedDict()
        # guards the dictionaries only: analysing and checking run outside it, so one heavy upload never
        # stalls the other users; `_pending` lets a second request for the same analysis wait for the first
        self._lock = threading.RLock()
        self._pending = {}
        self._in_use = Counter()  # capture id -> requests reading it now: never pruned from under them
        self._ids = -1
        self._uploads = 0
        self.sweeps = {str(i): path for i, path in enumerate(sweep_dirs(paths or []))}
        # only sweep folders given: the samples still give the capture views something to show
        sources = [p for p in paths or [] if Path(p) not in self.sweeps.values()] or [SAMPLES_DIR]
        for path in capture_paths(sources):
            self.add(capture_label(path), str(path))
        self._findings = {}

    def add(self, name, path, uploaded=False) -> Capture:
        with self._lock:
            capture = Capture(f"c{self._next_id()}", name, path, uploaded, time.monotonic())
            self.captures[capture.id] = capture
        return capture

    def _hold(self, capture_id):
        """The capture (KeyError for an unknown id), kept from pruning until _release."""
        with self._lock:
            capture = self.captures[capture_id]
            self._in_use[capture_id] += 1
        return capture

    def _release(self, capture_id):
        with self._lock:
            self._in_use[capture_id] -= 1
            if not self._in_use[capture_id]:
                del self._in_use[capture_id]

    @contextmanager
    def _using(self, capture_id):
        capture = self._hold(capture_id)
        try:
            yield capture
        finally:
            self._release(capture_id)

    def _next_id(self):
        # ids are never reused: a pruned upload's id must not name a later capture in an open page
        self._ids += 1
        return self._ids

    def options(self):
        return [{"label": c.name + (" (uploaded)" if c.uploaded else ""), "value": c.id}
                for c in self.captures.values()]

    def analysis(self, capture_id, sndbuf=None):
        """The cached StoredAnalysis of a capture with send buffer `sndbuf` (None: estimated).
        Raises KeyError for an unknown id and CaptureError for an unreadable file."""
        key = (capture_id, sndbuf)
        with self._lock:
            self.captures[capture_id]  # KeyError for an unknown id
            if key in self._analyses:
                self._analyses.move_to_end(key)
                return self._analyses[key]
            running = self._pending.get(key)
            if running is None:
                running = self._pending[key] = threading.Event()
                mine = True
            else:
                mine = False
        if not mine:  # the same analysis is under way for another request: its result serves both
            running.wait()
            return self.analysis(capture_id, sndbuf)
        try:
            with self._using(capture_id) as capture:
                result = analyze_stored(capture.path, sndbuf=sndbuf)
            with self._lock:
                self._analyses[key] = result
                while len(self._analyses) > CACHED_ANALYSES:
                    self._analyses.popitem(last=False)
            return result
        finally:
            with self._lock:
                del self._pending[key]
            running.set()

    def sweep(self, sweep_id):
        """(gain table, regions table) of a sweep folder, as `nrsack generate sweep` wrote them."""
        folder = self.sweeps[sweep_id]
        regions = folder / "regions.csv"
        return pd.read_csv(folder / SWEEP_TABLE), pd.read_csv(regions) if regions.is_file() else None

    def findings(self, capture_id):
        """The capture's findings table and their source (cached; see `findings`)."""
        with self._lock:
            if capture_id in self._findings:
                return self._findings[capture_id]
        with self._using(capture_id) as capture:  # outside the lock: checking can take long
            found = findings(self.analysis(capture_id), capture.path)
        with self._lock:
            return self._findings.setdefault(capture_id, found)

    def upload(self, contents: str, filename: str) -> Capture:
        """Keeps a dcc.Upload payload ("data:...;base64,...") if it is a readable capture within
        the size limit; raises UploadRefused with a message for the page otherwise."""
        return self.upload_analysed(contents, filename)[0]

    def upload_analysed(self, contents: str, filename: str):
        """upload() -> (Capture, its Analysis): the analysis is the caller's even when a later upload
        prunes the capture before the caller answers (concurrent uploads)."""
        name = display_name(filename)
        _, _, encoded = (contents or "").partition(",")
        if len(encoded) * 3 // 4 > self.upload_limit + 3:
            raise UploadRefused(f"{name}: refused, larger than the upload limit of {_size(self.upload_limit)}")
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise UploadRefused(f"{name}: the upload arrived damaged (not base64); nothing was kept") from None
        if len(data) > self.upload_limit:
            raise UploadRefused(f"{name}: refused, {_size(len(data))} is larger than the upload limit of "
                                f"{_size(self.upload_limit)}")
        if data[:4] not in PCAP_MAGICS + (PCAPNG_MAGIC,):
            raise UploadRefused(f"{name}: not a capture (neither pcap nor pcapng); nothing was kept")
        with self._lock:
            self._uploads += 1
            stored = self.upload_dir / f"upload-{self._uploads:04d}{'.pcapng' if data[:4] == PCAPNG_MAGIC else '.pcap'}"
        stored.write_bytes(data)
        del data  # (the analysis reads the file: the upload's bytes need not stay for it)
        with self._lock:  # added and in use at once: a concurrent upload's prune cannot take it first
            capture = self.add(name, str(stored), uploaded=True)
            self._hold(capture.id)
        try:
            self.prune_uploads(keep=capture.id)
            result = self.analysis(capture.id)
        except CaptureError as error:
            with self._lock:
                del self.captures[capture.id]
            stored.unlink(missing_ok=True)
            raise UploadRefused(f"{name}: cannot be analysed: {str(error).replace(str(stored), name)}") from None
        finally:
            self._release(capture.id)
        self.prune_uploads(keep=capture.id)  # what concurrent uploads kept while in use goes now
        return capture, result

    def prune_uploads(self, keep=None):
        """Forgets and deletes uploads older than upload_max_age_s and all but the newest kept_uploads
        (never `keep`, the one just made, nor one a request is reading: the next prune takes it)."""
        now = time.monotonic()
        with self._lock:
            uploads = [c for c in self.captures.values() if c.uploaded and c.id != keep]
            fresh = [c for c in uploads if now - c.created <= self.upload_max_age_s]
            keep_count = max(self.kept_uploads - (keep is not None), 0)
            kept = set(c.id for c in fresh[max(len(fresh) - keep_count, 0):]) if keep_count else set()
            gone = [c for c in uploads if c.id not in kept and not self._in_use[c.id]]
            for c in gone:
                del self.captures[c.id]
                self._findings.pop(c.id, None)
                for key in [k for k in self._analyses if k[0] == c.id]:
                    del self._analyses[key]
        for c in gone:
            Path(c.path).unlink(missing_ok=True)
        return [c.id for c in gone]

    def close(self):
        if self._own_dir:
            shutil.rmtree(self.upload_dir, ignore_errors=True)


def _size(count: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024


def findings(analysis, path):
    """(table, source): the conformance checker's findings when this build has the checker, else
    the reader's own malformed-packet findings with a note saying so. Columns: rule, severity,
    direction, frames (list of int, the breaking frame last), message."""
    import nrsack.analyzer as analyzer

    check = getattr(analyzer, "check", None)
    if check is not None:
        table = check(path)
        return pd.DataFrame({"rule": table["rule"], "severity": table["severity"],
                             "direction": table["direction"].fillna("").astype(str),
                             "frames": [[int(x) for x in f] for f in table["frames"]], "message": table["message"]}), "checker"
    table = analysis.findings
    return pd.DataFrame({"rule": table["rule"], "severity": table["severity"], "direction": "",
                         "frames": [[int(f)] for f in table["frame"]], "message": table["message"]},
                        columns=["rule", "severity", "direction", "frames", "message"]), "reader"
