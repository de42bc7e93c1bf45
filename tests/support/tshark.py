"""One way to run tshark (4.0 natively, 4.4 and 4.6 in Debian chroots) with an nrsack plugin, shared by
the C plugin's tests and the Lua plugin's parity tests. Stable interface (both plugins' suites
rely on it: change it in both at once):

    Plugin                      which plugin a run loads: Plugin.c(folder), Plugin.lua(script), Plugin.none()
    c_plugin_folder(so_path)    lays out a WIRESHARK_PLUGIN_DIR folder (DIR/<release>/epan/nrsack.so) for a built .so
    build_c_plugin(...)         cmake-configures and builds dissector/ into build/ (idempotent), returns the .so
    run_tshark(args, plugin, prefs=None, pcap=None, ...)   -> subprocess.CompletedProcess (text)
    run_tshark_measured(args, plugin, ..., cap_mb=0)   -> (CompletedProcess, peak RSS MB, CPU s) of that tshark alone
    NRSACK_FIELDS               the ordered list of nrsack fields every golden file has, one column each
    GOLDEN_PREFS                the pinned preferences of golden runs (plus nrsack.sndbuf, given per capture)
    golden_output(pcap, plugin, sndbuf=0, two_pass=False, display_filter=None) -> str   (format below)
    parse_golden(text) -> Golden(columns, rows, expert)
    expert_findings(pcap, plugin, sndbuf=0) -> list[(frame, rule ID)]  the nrsack rule findings of a run

Which Wireshark: NRSACK_WIRESHARK=trixie (Debian 13, 4.4) or =forky (Debian testing, 4.6) runs tshark and
builds the C plugin inside that suite's chroot (scripts/wireshark-chroot.sh: made and cached on first use,
the clone and /tmp bind-mounted at the same paths); unset or "native", the host's. WIRESHARK_TARGET names
it, WIRESHARK_RELEASE is its "major.minor", target_unavailable() says why it cannot run here (or None).
From 4.4 on tshark prints booleans as True/False: golden_output writes them as 1/0 as 4.0 does.

Running tshark: as root, tshark ignores WIRESHARK_PLUGIN_DIR and personal plugin folders, so the run
drops to uid/gid 65534 with setpriv, a fresh empty HOME and TZ=UTC; the capture is copied into a
world-readable temporary folder first. WIRESHARK_PLUGIN_DIR always points at the plugin's folder (an
empty one for Lua and baseline runs), so a system-wide installed nrsack.so is never loaded by accident.

Golden file format (text, UTF-8, tab-separated):
    # nrsack golden v1
    # prefs: name:value ...                 (the pinned preferences of the run)
    frame.number<TAB><each of NRSACK_FIELDS>
    <one line per frame: values of -T fields -E occurrence=a, several occurrences joined by ",">
    # expert: frame<TAB>rule<TAB>severity   (every nrsack finding, frame order, then rule order)
    <frame><TAB><rule ID e.g. NR-03><TAB><error|warning|note>
    # expert summary (-z expert): rule<TAB>count
    <rule ID><TAB><count>
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DISSECTOR_SRC = REPO / "dissector"
BUILD_DIR = REPO / "build" / "dissector"
BUILD_DIR_SANITIZE = REPO / "build" / "dissector-asan"
CHROOT_SCRIPT = REPO / "scripts" / "wireshark-chroot.sh"
CHROOT_SUITES = {"trixie": "4.4", "forky": "4.6"}  # suite -> the Wireshark release it ships
WIRESHARK_TARGET = os.environ.get("NRSACK_WIRESHARK", "native") or "native"
if WIRESHARK_TARGET != "native":
    BUILD_DIR = BUILD_DIR.with_name(f"dissector-{WIRESHARK_TARGET}")
    BUILD_DIR_SANITIZE = BUILD_DIR_SANITIZE.with_name(f"dissector-asan-{WIRESHARK_TARGET}")


def target_unavailable() -> str | None:
    """Why WIRESHARK_TARGET cannot run on this machine (a skip reason), or None."""
    if WIRESHARK_TARGET == "native":
        return None if shutil.which("tshark") else "tshark is not installed"
    if WIRESHARK_TARGET not in CHROOT_SUITES:
        return f"NRSACK_WIRESHARK={WIRESHARK_TARGET}: not one of native, {', '.join(CHROOT_SUITES)}"
    if os.geteuid() != 0:
        return f"Wireshark {CHROOT_SUITES[WIRESHARK_TARGET]} runs in a Debian {WIRESHARK_TARGET} chroot: needs root"
    if not shutil.which("debootstrap") and not shutil.which("debootstrap", path="/usr/sbin:/sbin"):
        return f"Wireshark {CHROOT_SUITES[WIRESHARK_TARGET]} runs in a Debian {WIRESHARK_TARGET} chroot: needs debootstrap"
    return None


def prepare_target() -> None:
    """Makes (or unpacks) WIRESHARK_TARGET's chroot; raises with the script's message when it cannot."""
    if WIRESHARK_TARGET == "native":
        return
    proc = subprocess.run([str(CHROOT_SCRIPT), "ensure", WIRESHARK_TARGET], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the Debian {WIRESHARK_TARGET} chroot could not be made:\n{proc.stderr[-3000:]}")


def in_target(cmd: list[str], as_nobody: bool = False) -> list[str]:
    """`cmd` as it runs in WIRESHARK_TARGET: unchanged natively, else inside the suite's chroot."""
    if WIRESHARK_TARGET == "native":
        return cmd
    return [str(CHROOT_SCRIPT), "exec", WIRESHARK_TARGET, *(["--user"] if as_nobody else []), "--", *cmd]


def _release() -> str:
    if WIRESHARK_TARGET != "native":
        return CHROOT_SUITES.get(WIRESHARK_TARGET, "")
    out = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout if shutil.which("tshark") else ""
    m = re.search(r"TShark \(Wireshark\) (\d+\.\d+)", out)
    return m.group(1) if m else "4.0"


WIRESHARK_RELEASE = _release()  # plugin folders are scanned as DIR/<release>/epan/

NOBODY = 65534

# Which B nrsack.blocked used and how (docs/fields.md): not golden columns, since their evidence moves with
# the estimator's rules (core/sndbuf.c); tests/test_plugin_sndbuf.py holds both plugins to the analyzer's.
SNDBUF_FIELDS = ["nrsack.sndbuf.bytes", "nrsack.sndbuf.source", "nrsack.sndbuf.verdict", "nrsack.sndbuf.reason",
                 "nrsack.sndbuf.waits"]

# Every other field of docs/fields.md (both plugins register them all), in golden-column order.
NRSACK_FIELDS = [
    "nrsack.stream",
    "nrsack.direction",
    "nrsack.rtxq.bytes",
    "nrsack.rtxq.sack_bytes",
    "nrsack.rtxq.nr_acked_bytes",
    "nrsack.rtxq.nr_bytes",
    "nrsack.rtxq.sacked_bytes",
    "nrsack.rtxq.whatif_bytes",
    "nrsack.freed_bytes",
    "nrsack.blocked",
    "nrsack.gap_open",
    "nrsack.revoked",
    "nrsack.fsack.type",
    "nrsack.fsack.timestamp",
    "nrsack.fsack.address_v4",
    "nrsack.fsack.address_v6",
    "nrsack.fsack.rtt_ms",
    "nrsack.sctp.ext_nr_sack",
    "nrsack.sctp.ext_fsack",
    "nrsack.tcp.exid",
    "nrsack.tcp.permitted",
    "nrsack.tcp.flags",
    "nrsack.tcp.never_renege",
    "nrsack.tcp.block_count",
    "nrsack.tcp.block.left",
    "nrsack.tcp.block.right",
    "nrsack.mptcp.capable",
    "nrsack.mptcp.wide",
    "nrsack.mptcp.block_count",
    "nrsack.mptcp.block.start",
    "nrsack.mptcp.block.end",
]

# Absolute TSNs and sequence numbers, so golden values are the wire values.
GOLDEN_PREFS = {
    "sctp.relative_tsns": "FALSE",
    "tcp.relative_sequence_numbers": "FALSE",
    "mptcp.relative_sequence_numbers": "FALSE",
}

RULE_RE = re.compile(r"^((?:NR|TN|MN|FS|GEN)-\d\d)\b")
SEVERITY = {0x00800000: "error", 0x00600000: "warning", 0x00400000: "note", 0x00200000: "chat", 0x00100000: "comment"}
# Splits occurrences of one field; a character no expert message contains.
AGGREGATOR = "\x1f"


@dataclass(frozen=True)
class Plugin:
    """The plugin of a run: kind "c" (folder = a WIRESHARK_PLUGIN_DIR), "lua" (script) or "none"."""

    kind: str
    path: Path | None = None

    @staticmethod
    def c(folder) -> "Plugin":
        return Plugin("c", Path(folder))

    @staticmethod
    def lua(script) -> "Plugin":
        return Plugin("lua", Path(script))

    @staticmethod
    def none() -> "Plugin":
        return Plugin("none")

    def tshark_args(self) -> list[str]:
        return ["-X", f"lua_script:{self.path}"] if self.kind == "lua" else []

    def plugin_dir(self, scratch: Path) -> Path:
        if self.kind == "c":
            return self.path
        empty = scratch / "no-plugins"
        empty.mkdir(exist_ok=True)
        return empty


LUA_PLUGIN = Plugin.lua(REPO / "lua" / "nrsack.lua")


def _world_readable(path: Path) -> None:
    for root, dirs, files in os.walk(path):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)


def c_plugin_folder(so_path, folder=None) -> Path:
    """Lays out a plugin folder as Wireshark scans it (FOLDER/<release>/epan/nrsack.so), world-readable.
    FOLDER's parents must be traversable by uid 65534 (a fresh folder under /tmp when not given)."""
    folder = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="nrsack-plugin-"))
    epan = folder / WIRESHARK_RELEASE / "epan"
    epan.mkdir(parents=True, exist_ok=True)
    shutil.copy2(so_path, epan / "nrsack.so")
    _world_readable(folder)
    return folder


def build_c_plugin(build_dir=None, sanitize: bool = False, jobs: int = 2) -> Path:
    """Configures and builds dissector/ with CMake (incremental) for WIRESHARK_TARGET, warnings as errors
    (a deprecation on any supported release fails the tests), returns the path of nrsack.so."""
    build_dir = Path(build_dir or (BUILD_DIR_SANITIZE if sanitize else BUILD_DIR))
    build_dir.mkdir(parents=True, exist_ok=True)
    configure = in_target(["cmake", "-S", str(DISSECTOR_SRC), "-B", str(build_dir), "-DNRSACK_WERROR=ON",
                           f"-DNRSACK_SANITIZE={'ON' if sanitize else 'OFF'}"])
    # pytest-xdist workers (and other test runs) share the build folder: one build at a time
    with open(build_dir / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(configure, capture_output=True, text=True)
        if not proc.returncode:
            proc = subprocess.run(in_target(["cmake", "--build", str(build_dir), "-j", str(jobs)]),
                                  capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"building the nrsack plugin failed:\n{proc.stdout}\n{proc.stderr}")
    return build_dir / "nrsack.so"


def asan_runtime() -> str | None:
    """The libasan a sanitizer build needs preloaded into tshark (a dlopen'ed plugin cannot bring it)."""
    proc = subprocess.run(in_target(["sh", "-c", 'realpath "$(gcc -print-file-name=libasan.so)"']),
                          capture_output=True, text=True)
    path = proc.stdout.strip()
    return path if proc.returncode == 0 and os.path.isabs(path) else None


def run_tshark(args, plugin: Plugin, prefs: dict | None = None, pcap=None, timeout: float = 600,
               env_extra: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Runs tshark with `plugin` loaded. `pcap` (optional) is copied somewhere readable and passed as -r;
    `prefs` become -o name:value; `-G ...` args stay first as tshark requires."""
    scratch = Path(tempfile.mkdtemp(prefix="nrsack-tshark-"))
    try:
        home = scratch / "home"
        home.mkdir()
        args = list(args)
        extra = plugin.tshark_args()
        for name, value in (prefs or {}).items():
            extra += ["-o", f"{name}:{value}"]
        if pcap is not None:
            copy = scratch / ("input" + Path(pcap).suffix)
            shutil.copyfile(pcap, copy)
            extra += ["-r", str(copy)]
        args = (args[:2] + extra + args[2:]) if args and args[0] == "-G" else extra + args
        env = {
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": str(home),
            "TZ": "UTC",
            "LC_ALL": "C.UTF-8",
            "WIRESHARK_PLUGIN_DIR": str(plugin.plugin_dir(scratch)),
        }
        env.update(env_extra or {})
        _world_readable(scratch)
        os.chmod(home, 0o777)
        cmd = ["tshark", *args]
        if WIRESHARK_TARGET != "native":
            # the environment goes inside only: an LD_PRELOAD of the chroot's libasan must not reach the host tools
            cmd = in_target(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *cmd], as_nobody=True)
            env = {"PATH": env["PATH"]}
        elif os.geteuid() == 0:
            cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, errors="replace")
        if check and proc.returncode != 0:
            raise RuntimeError(f"tshark failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-4000:]}")
        return proc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_tshark_measured(args, plugin: Plugin, prefs: dict | None = None, pcap=None, cap_mb: int = 0,
                        timeout: float = 3600) -> tuple[subprocess.CompletedProcess, float, float]:
    """run_tshark (check=False) in a fresh Python process, so that the peak RSS of its children is that
    tshark's alone: -> (the run, its peak RSS in MB, its CPU seconds). cap_mb: the run's address space limit (RLIMIT_AS;
    0 none), so that a run gone wrong fails instead of taking the machine's memory."""
    import json
    import sys
    request = json.dumps({"args": list(map(str, args)), "kind": plugin.kind, "path": str(plugin.path or ""),
                          "prefs": prefs, "pcap": str(pcap) if pcap else None, "cap_mb": cap_mb, "timeout": timeout})
    child = subprocess.run([sys.executable, "-c", _MEASURED_CHILD, str(REPO / "tests"), request], capture_output=True,
                           text=True, check=True, timeout=timeout + 60)
    out = json.loads(child.stdout)
    return (subprocess.CompletedProcess(out["args"], out["returncode"], out["stdout"], out["stderr"]), out["peak_mb"],
            out["cpu_s"])


_MEASURED_CHILD = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from support import tshark
r = json.loads(sys.argv[2])
if r["cap_mb"]:
    resource.setrlimit(resource.RLIMIT_AS, (r["cap_mb"] << 20, r["cap_mb"] << 20))
plugin = tshark.Plugin(r["kind"], tshark.Path(r["path"]) if r["path"] else None)
p = tshark.run_tshark(r["args"], plugin, prefs=r["prefs"], pcap=r["pcap"], timeout=r["timeout"], check=False)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"args": p.args, "returncode": p.returncode, "stdout": p.stdout, "stderr": p.stderr,
                  "peak_mb": u.ru_maxrss / 1024, "cpu_s": u.ru_utime + u.ru_stime}))
"""


def golden_prefs(sndbuf: int = 0) -> dict:
    return {**GOLDEN_PREFS, "nrsack.sndbuf": str(sndbuf)}


def _split(value: str) -> list[str]:
    return value.split(AGGREGATOR) if value else []


# 4.4 and later print FT_BOOLEAN fields as True/False where 4.0 prints 1/0.
BOOLEAN_TEXT = {"True": "1", "False": "0"}


def _golden_cell(value: str) -> str:
    return ",".join(BOOLEAN_TEXT.get(v, v) for v in value.split(AGGREGATOR))


def golden_output(pcap, plugin: Plugin, sndbuf: int = 0, two_pass: bool = False, display_filter: str | None = None) -> str:
    """The golden text of a capture: every nrsack field per frame, the nrsack findings, the -z expert summary."""
    prefs = golden_prefs(sndbuf)
    fields = ["frame.number", *NRSACK_FIELDS]
    args = ["-T", "fields", "-E", "header=y", "-E", "occurrence=a", "-E", f"aggregator={AGGREGATOR}",
            "-E", "separator=/t", "-z", "expert"]
    for f in [*fields, "_ws.expert.severity", "_ws.expert.message"]:
        args += ["-e", f]
    if two_pass:
        args.append("-2")
    if display_filter:
        args += ["-Y", display_filter]
    out = run_tshark(args, plugin, prefs=prefs, pcap=pcap).stdout
    lines = out.split("\n")
    n_cols = len(fields) + 2
    table, expert, summary = [], [], {}
    header_seen = False
    for line in lines:
        cols = line.split("\t")
        if len(cols) == n_cols and (header_seen or cols[0] == "frame.number"):
            if not header_seen:
                header_seen = True
                continue
            frame = cols[0]
            for sev, msg in zip(_split(cols[-2]), _split(cols[-1])):
                m = RULE_RE.match(msg)
                if m:
                    expert.append((int(frame), m.group(1), SEVERITY.get(int(sev), sev)))
            table.append("\t".join(_golden_cell(c) for c in cols[:-2]))
            continue
        # -z expert summary lines: "  count  group  NRSACK  NR-03: ..."
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[2] == "NRSACK" and parts[0].isdigit():
            m = RULE_RE.match(parts[3])
            if m:
                summary[m.group(1)] = summary.get(m.group(1), 0) + int(parts[0])
    expert.sort(key=lambda e: (e[0], e[1]))
    text = ["# nrsack golden v1", "# prefs: " + " ".join(f"{k}:{v}" for k, v in prefs.items()),
            "\t".join(fields), *table, "# expert: frame\trule\tseverity"]
    text += [f"{f}\t{r}\t{s}" for f, r, s in expert]
    text.append("# expert summary (-z expert): rule\tcount")
    text += [f"{r}\t{c}" for r, c in sorted(summary.items())]
    return "\n".join(text) + "\n"


@dataclass
class Golden:
    columns: list[str]
    rows: list[dict] = field(default_factory=list)     # column -> list of values (occurrences)
    expert: list[tuple] = field(default_factory=list)  # (frame, rule, severity)
    summary: dict = field(default_factory=dict)        # rule -> count from -z expert

    def row(self, frame: int) -> dict:
        return self.rows[frame - 1]


def parse_golden(text: str) -> Golden:
    lines = text.rstrip("\n").split("\n")
    columns = lines[2].split("\t")
    g = Golden(columns)
    section = "table"
    for line in lines[3:]:
        if line.startswith("# expert summary"):
            section = "summary"
        elif line.startswith("# expert"):
            section = "expert"
        elif section == "table":
            g.rows.append({c: (v.split(",") if v else []) for c, v in zip(columns, line.split("\t"))})
        elif section == "expert":
            f, r, s = line.split("\t")
            g.expert.append((int(f), r, s))
        else:
            r, c = line.split("\t")
            g.summary[r] = int(c)
    return g


def expert_findings(pcap, plugin: Plugin, sndbuf: int = 0) -> list[tuple]:
    """(frame, rule ID) of every nrsack finding of a capture, sorted."""
    g = parse_golden(golden_output(pcap, plugin, sndbuf=sndbuf))
    return [(f, r) for f, r, _ in g.expert]
