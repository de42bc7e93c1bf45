"""The "nrsack" configuration profile (wireshark/profile/, installed by `nrsack wireshark install`) as
tshark loads it with `-C nrsack`, on every Wireshark release under test:

- its columns show RtxQ bytes (NR-SACK and SACK semantics), what each packet's NR-SACK freed and the
  blocked flag, with the values of the golden files;
- its colouring rules mark each frame with the highest severity of its nrsack findings (error, then
  warning), else as send-buffer blocked, else as a note: the golden files' findings say which.
"""

import shutil
import tempfile
from pathlib import Path

import pytest

from support import tshark
from support.samples import PCAPS, golden_path, golden_sndbuf

pytestmark = pytest.mark.tshark

PROFILE = tshark.REPO / "wireshark" / "profile"
COLUMNS = ["nrsack.rtxq.bytes", "nrsack.rtxq.sack_bytes", "nrsack.freed_bytes", "nrsack.blocked"]
RULE_NAMES = {"error": "NR-SACK rule error", "warning": "NR-SACK rule warning", "blocked": "NR-SACK send buffer blocked",
              "note": "NR-SACK rule note"}


@pytest.fixture(scope="module")
def config_dir():
    """A personal configuration folder holding only the profile (WIRESHARK_CONFIG_DIR), world-readable."""
    folder = Path(tempfile.mkdtemp(prefix="nrsack-config-"))
    shutil.copytree(PROFILE, folder / "profiles" / "nrsack")
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def with_profile(args, plugin, config_dir, pcap):
    return tshark.run_tshark(["-C", "nrsack", *args], plugin, pcap=pcap, prefs={"nrsack.sndbuf": golden_sndbuf(pcap)},
                             env_extra={"WIRESHARK_CONFIG_DIR": str(config_dir)}).stdout


def golden(pcap):
    return tshark.parse_golden(golden_path(pcap).read_text())


def as_golden(values):
    """Column text as golden files write it: occurrences joined by ",", booleans as 1/0 (columns print
    True/False on every release)."""
    return ",".join(tshark.BOOLEAN_TEXT.get(v, v) for v in values if v)


def pick(predicate):
    return next(p for p in PCAPS if predicate(golden(p)))


def expected_colour(g, frame):
    severities = {s for f, _, s in g.expert if f == frame}
    for severity in ("error", "warning"):
        if severity in severities:
            return RULE_NAMES[severity]
    if g.row(frame)["nrsack.blocked"] == ["1"]:
        return RULE_NAMES["blocked"]
    return RULE_NAMES["note"] if "note" in severities else ""


def test_columns_show_the_golden_values(nrsack_c_plugin, config_dir):
    pcap = pick(lambda g: any(r["nrsack.blocked"] == ["1"] for r in g.rows) and
                any(r["nrsack.freed_bytes"] not in ([], ["0"]) for r in g.rows))
    g = golden(pcap)
    lines = with_profile(["-T", "tabs"], nrsack_c_plugin, config_dir, pcap).splitlines()
    assert len(lines) == len(g.rows)
    for frame, line in enumerate(lines, 1):
        # ... Protocol, the four nrsack columns, Info: counted from the end, as addresses add an arrow column
        shown = [as_golden(c.strip().split(",")) for c in line.split("\t")[-5:-1]]
        assert shown == [as_golden(g.row(frame)[c]) for c in COLUMNS], frame


@pytest.mark.parametrize("kind", ["error", "warning", "note", "blocked"])
def test_colouring_rules_follow_the_findings(nrsack_c_plugin, config_dir, kind):
    if kind == "blocked":
        pcap = pick(lambda g: any(r["nrsack.blocked"] == ["1"] for r in g.rows))
    else:
        pcap = pick(lambda g: any(s == kind for _, _, s in g.expert))
    g = golden(pcap)
    out = with_profile(["--color", "-T", "fields", "-e", "frame.number", "-e", "frame.coloring_rule.name"],
                       nrsack_c_plugin, config_dir, pcap)
    got = {int(f): name for f, name in (line.split("\t") for line in out.splitlines())}
    want = {frame: expected_colour(g, frame) for frame in range(1, len(g.rows) + 1)}
    assert got == want
    assert RULE_NAMES[kind] in got.values()
