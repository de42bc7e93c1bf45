"""The analyzer's subpackages follow the data (docs/architecture.md): a module imports only from its own
stage or the ones before it, so data flows one way and no module reaches forward."""

import ast

from support.paths import REPO

STAGES = ["_native", "read", "state", "results", "rules", "views"]
ANALYZER = REPO / "analyzer"


def stage(module: str):
    parts = module.split(".")
    if parts[:2] != ["nrsack", "analyzer"] or len(parts) < 3 or parts[2] not in STAGES:
        return None  # outside the analyzer, or its public face (nrsack.analyzer itself)
    return STAGES.index(parts[2])


def imported(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_every_analyzer_module_sits_in_a_stage():
    loose = [p.name for p in ANALYZER.glob("*.py") if p.stem not in ("__init__", *STAGES)]
    assert loose == [], "a module outside the stages: move it into read/, state/, rules/ or views/"


def test_imports_point_one_way():
    backwards = []
    for path in sorted(ANALYZER.rglob("*.py")):
        module = ".".join(["nrsack", "analyzer", *path.relative_to(ANALYZER).with_suffix("").parts])
        mine = stage(module)
        if mine is None:
            continue
        backwards += [f"{module} imports {name}" for name in imported(ast.parse(path.read_text()))
                      if (theirs := stage(name)) is not None and theirs > mine]
    assert backwards == []


def test_the_staleness_check_watches_every_compiled_file():
    """conftest refuses a build older than its sources; a C file it does not watch (the core, the lab's
    UDP half) could change under the tests unnoticed."""
    import subprocess

    from conftest import compiled_sources

    watched = {f for files in compiled_sources().values() for f in files}
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "analyzer", "core", "generator", "lab"],
                             capture_output=True, text=True, check=True).stdout.split()
    c_files = {f for f in tracked if f.endswith((".c", ".h"))}
    assert c_files and c_files - watched == set()


def test_one_run_driver_reads_captures_for_every_analysis():
    """The in-memory API, the streamed files, the live table and the checker drive the pipeline through
    state/run.py's Run; a second loop over read_chunks would drift from it (notes, the no-flows error)."""
    readers = []
    for path in sorted(ANALYZER.rglob("*.py")):
        calls = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)]
        if any(getattr(call.func, "attr", getattr(call.func, "id", None)) in ("read_chunks", "no_flows")
               for call in calls):
            readers.append(str(path.relative_to(ANALYZER)))
    assert readers == ["read/events.py", "state/run.py"]


def test_each_compiled_type_sits_in_the_stage_of_its_first_user():
    """A type of the compiled half lives in the folder of the earliest stage whose Python uses it (the Reader
    in read/, the Board in state/, the checker's NrLedger in rules/), and a C file includes no header from a
    later stage's folder: the compiled half follows the stages as the Python does."""
    import re

    defined = {}  # type name -> the stage of the C file that defines it
    for path in ANALYZER.rglob("*.c"):
        folder = path.relative_to(ANALYZER).parts[0] if path.parent != ANALYZER else "_native"
        text = path.read_text()
        for name in re.findall(r'\.tp_name\s*=\s*"nrsack\.analyzer\._native\.(\w+)"', text):
            defined[name] = STAGES.index(folder)
        for header in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            parts = header.split("/")
            assert len(parts) == 1 or STAGES.index(parts[0]) <= STAGES.index(folder), (path, header)
    assert {"Reader", "Board", "NrLedger"} <= set(defined)
    users = {}
    for path in sorted(ANALYZER.rglob("*.py")):
        module = "nrsack.analyzer." + ".".join(path.relative_to(ANALYZER).with_suffix("").parts)
        mine = stage(module)
        for name in set(re.findall(r"_native\.(\w+)\(", path.read_text())) & set(defined):
            if mine is not None:
                users[name] = min(users.get(name, mine), mine)
    misplaced = {name: (STAGES[defined[name]], STAGES[first]) for name, first in users.items() if defined[name] != first}
    assert misplaced == {}, "a compiled type outside its first user's stage: (where it is, where it belongs)"
