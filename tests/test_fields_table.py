"""docs/fields.md is the one table of the nrsack fields (names, types, labels, descriptions, expert
severities): both plugins, as `tshark -G fields` and `-G plugins` list them, must match it word for word,
so every field is described and the C and Lua labels are the same (issue 30, "Every field described")."""

import re

import pytest

from support.paths import REPO, SAMPLES
from support.tshark import LUA_PLUGIN, Plugin, run_tshark, target_unavailable

pytestmark = [pytest.mark.tshark, pytest.mark.skipif(target_unavailable() is not None, reason=str(target_unavailable()))]

FIELDS_MD = REPO / "docs" / "fields.md"
CONFORMANCE = SAMPLES / "conformance"
# docs/fields.md's type words -> Wireshark's field types
TYPES = {"uint8": "FT_UINT8", "uint16": "FT_UINT16", "uint32": "FT_UINT32", "uint64": "FT_UINT64",
         "bool": "FT_BOOLEAN", "IPv4": "FT_IPv4", "IPv6": "FT_IPv6", "string": "FT_STRING"}
SEVERITY = {"PI_ERROR": "error", "PI_WARN": "warning", "PI_NOTE": "note"}


def doc_tables() -> tuple[dict, dict]:
    """(ordinary fields: name -> (type, label, description), expert fields: name -> (severity, label,
    description)), told apart by their tables' headers."""
    tables = {"type": {}, "severity": {}}
    table = None
    for line in FIELDS_MD.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "field":
            table = tables[cells[1]]
        elif cells[0].startswith("nrsack."):
            table[cells[0]] = tuple(cells[1:])
    return tables["type"], tables["severity"]


def registered(plugin: Plugin) -> dict:
    """name -> (type, label, description) of every nrsack field `tshark -G fields` lists, each listed
    once (the Lua plugin's expert fields are listed through their ProtoField stand-ins only)."""
    out = run_tshark(["-G", "fields"], plugin).stdout
    rows = [line.split("\t") for line in out.splitlines() if line.startswith("F\t")]
    rows = [r for r in rows if r[4] == "nrsack"]
    names = [r[2] for r in rows]
    assert len(names) == len(set(names)), f"listed more than once: {sorted({n for n in names if names.count(n) > 1})}"
    return {r[2]: (r[3], r[1], r[7] if len(r) > 7 else "") for r in rows}


@pytest.fixture(scope="module")
def c_fields(nrsack_c_plugin):
    return registered(nrsack_c_plugin)


@pytest.fixture(scope="module")
def lua_fields():
    return registered(LUA_PLUGIN)


def test_the_table_covers_every_golden_column_and_rule():
    from support.tshark import NRSACK_FIELDS, SNDBUF_FIELDS
    fields, experts = doc_tables()
    assert set(NRSACK_FIELDS) | set(SNDBUF_FIELDS) == set(fields)
    # every rule of rules.md the plugins raise (the analyzer-only ones aside)
    rules = [rule for rule, text in re.findall(r"^\| ((?:NR|TN|MN|FS|GEN)-\d\d) \|(.*)$", (REPO / "docs" / "rules.md").read_text(), re.M)
             if "Analyzer-only" not in text]
    assert {f"nrsack.rule.{r.replace('-', '')}" for r in rules} == {n for n in experts if not n.endswith(".note")}


@pytest.mark.parametrize("which", ["c", "lua"])
def test_each_plugin_registers_the_tables_fields_labels_and_descriptions(which, c_fields, lua_fields):
    got = c_fields if which == "c" else lua_fields
    fields, experts = doc_tables()
    assert set(got) == set(fields) | set(experts), "fields missing from docs/fields.md or from the plugin"
    assert not [name for name, (_, _, description) in got.items() if not description], "fields with no description"
    for name, (kind, label, description) in fields.items():
        assert description, f"{name}: no description in docs/fields.md"
        assert got[name] == (TYPES[kind], label, description), name
    for name, (_, label, description) in experts.items():
        # Wireshark's Lua drops a ProtoField description equal to its label (wslua_proto_field.c)
        assert description and description != label, f"{name}: description missing or the label in docs/fields.md"
        assert got[name] == ("FT_NONE", label, description), name


def test_the_lua_expert_stand_ins_leave_the_packets_to_the_expert_fields(nrsack_c_plugin):
    """The ProtoField stand-ins (decisions.md 68) describe the expert fields but are never put on a packet:
    a display filter on a rule still finds exactly the frames the C plugin marks."""
    def frames(plugin):
        return run_tshark(["-Y", "nrsack.rule.NR03", "-T", "fields", "-e", "frame.number"], plugin,
                          pcap=CONFORMANCE / "nr03-revocation.pcap").stdout.split()
    assert frames(LUA_PLUGIN) == frames(nrsack_c_plugin) != []


def test_expert_severities_are_the_tables():
    _, experts = doc_tables()
    want = {name: severity for name, (severity, _, _) in experts.items()}
    c_source = (REPO / "dissector" / "src" / "packet-nrsack.c").read_text()
    c = {name: SEVERITY[s] for name, s in re.findall(r'\{"(nrsack\.rule\.[\w.]+)", PI_\w+, (PI_\w+),', c_source)}
    assert c == want
    # the Lua rule table: {"NR-01", E.severity.ERROR, E.group.PROTOCOL, <has a note variant>, ...}; notes are PI_NOTE
    lua = {}
    for rule, level, has_note in re.findall(r'\{"([A-Z]+-\d\d)", E\.severity\.(\w+), E\.group\.\w+, (true|false),',
                                           (REPO / "lua" / "nrsack.lua").read_text()):
        name = f"nrsack.rule.{rule.replace('-', '')}"
        lua[name] = SEVERITY["PI_" + level]
        if has_note == "true":
            lua[name + ".note"] = "note"
    assert lua == want


def test_the_lua_plugin_shows_the_repository_version():
    out = run_tshark(["-G", "plugins"], LUA_PLUGIN).stdout
    (line,) = [line for line in out.splitlines() if line.split("\t")[0].endswith("nrsack.lua")]
    assert line.split("\t")[1] == (REPO / "VERSION").read_text().strip()
