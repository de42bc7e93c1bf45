"""The rules of Wireshark's own dissector checks that matter most here, as the project's tests (no
Wireshark scripts needed; `make wireshark-checks WIRESHARK_TOOLS=DIR` runs the whole battery): no C
library allocator in the plugin or the core it links, American spelling with the protocol's word list,
and a licence line in every C and Lua file (issue 30)."""

import re
import subprocess
import sys

import pytest

from support.paths import REPO

PLUGIN_C = sorted((REPO / "dissector" / "src").glob("*.[ch]")) + sorted((REPO / "core").glob("*.[ch]"))
PLUGIN_TEXT = PLUGIN_C + [REPO / "lua" / "nrsack.lua"] + sorted((REPO / "dissector").glob("*.md")) + \
    sorted((REPO / "lua").glob("*.md"))
WORDS = REPO / "dissector" / "spelling-words.txt"

# What Wireshark's checkAPIs.pl prohibits for memory: GLib's or wmem's allocators instead.
C_ALLOCATORS = re.compile(r"(?<![\w.>])(malloc|calloc|realloc|free|strdup|strndup)\s*\(")
# British spellings of words this code uses or is likely to (Wireshark's strings and comments are American).
BRITISH = re.compile(
    r"\b(?:analys|amortis|normalis|initialis|serialis|recognis|organis|optimis|finalis|summaris|prioritis|"
    r"minimis|maximis|utilis|customis|synchronis|visualis|categoris|characteris)(?:e|ed|es|er|ers|ing|ation|ations)\b"
    r"|\b(?:behaviour|colour|favour|honour|neighbour)\w*"
    r"|\b(?:centre|licence|learnt|labelled|modelled|signalled|travelled|cancelled|catalogue)\b",
    re.I)


def strip_c_comments_and_strings(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


@pytest.mark.parametrize("path", PLUGIN_C, ids=lambda p: str(p.relative_to(REPO)))
def test_plugin_and_core_c_use_no_c_library_allocator(path):
    code = strip_c_comments_and_strings(path.read_text())
    assert not C_ALLOCATORS.findall(code), "Wireshark code allocates with GLib or wmem (core: core_realloc/core_free)"


def test_the_core_allocates_through_its_seam_only():
    """core/ names no allocator of its own: each build's nrsack_core_alloc.h supplies core_realloc/core_free
    (the analyzer's: the C library, as macros; the plugin's: GLib)."""
    assert not list((REPO / "core").glob("nrsack_core_alloc.h"))
    analyzer = (REPO / "analyzer" / "nrsack_core_alloc.h").read_text()
    plugin = (REPO / "dissector" / "src" / "nrsack_core_alloc.h").read_text()
    assert "#define core_realloc(p, size) realloc((p), (size))" in analyzer
    assert "#define core_realloc(p, size) g_try_realloc((p), (size))" in plugin
    for path in (REPO / "core").glob("*.c"):
        text = path.read_text()
        assert ("core_realloc" in text or "core_free" in text) == ('#include "nrsack_core_alloc.h"' in text), path


@pytest.mark.parametrize("path", PLUGIN_TEXT, ids=lambda p: str(p.relative_to(REPO)))
def test_american_spelling(path):
    found = BRITISH.findall(path.read_text())
    assert not found, f"British spelling: {sorted(set(found))}"


def test_word_list_is_sorted_lowercase_and_every_word_is_used():
    words = WORDS.read_text().split()
    assert words == sorted(set(words)) and all(w == w.lower() for w in words)
    text = "\n".join(p.read_text() for p in PLUGIN_C + [REPO / "lua" / "nrsack.lua"]).lower()
    unused = [w for w in words if not re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", text)]
    assert not unused, f"words no source uses any more: {unused}"


@pytest.mark.parametrize("path", sorted(p for pattern in ("**/*.c", "**/*.h", "**/*.lua") for p in REPO.glob(pattern)
                                        if not {"build", ".git"} & set(p.relative_to(REPO).parts)),
                         ids=lambda p: str(p.relative_to(REPO)))
def test_every_c_and_lua_file_names_its_licence(path):
    rel = path.relative_to(REPO)
    want = "GPL-2.0-or-later" if rel.parts[0] in ("dissector", "lua", "core") else "MIT"
    first = path.read_text().split("\n", 1)[0]
    assert re.fullmatch(rf"(/\* |-- )SPDX-License-Identifier: {re.escape(want)}( \*/)?", first), first


def test_the_battery_refuses_to_start_without_its_spelling_checker(tmp_path):
    """Wireshark's check_dissector.py goes on past a check that cannot start, so a python3 without
    pyspellchecker would give a clean-looking run with no spelling checked: one line, exit 2, nothing run."""
    bare = tmp_path / "bare"  # a python3 with nothing but its standard library
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "check_dissector.py").write_text("raise SystemExit('ran')\n")
    run = subprocess.run([str(REPO / "scripts" / "wireshark-checks.sh"), str(tools)], capture_output=True, text=True,
                         env={"PATH": f"{bare / 'bin'}:/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert run.returncode == 2 and run.stdout == "", (run.stdout, run.stderr)
    (line,) = run.stderr.splitlines()
    assert line.startswith("wireshark-checks: cannot run every check without: ") and "pip install pyspellchecker" in line
