#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Wireshark's own dissector checks (tools/check_dissector.py and the scripts it runs) on the C plugin.
#
#   scripts/wireshark-checks.sh TOOLS    (or: make wireshark-checks WIRESHARK_TOOLS=TOOLS)
#
# TOOLS is a copy of the tools/ folder of Wireshark's source (check_dissector.py, checkAPIs.pl, checkhf.pl,
# checkfiltername.pl, check_*.py, fix-encoding-args.pl, cppcheck/, wireshark_words.txt) and, if the copy
# has it, epan/tfs.c beside them (check_tfs.py reads ../epan/tfs.c). The scripts are Wireshark's, not
# ours, so the repository does not carry them. They expect Wireshark's layout and to run from its top, so
# the plugin's sources are laid out in a scratch tree as plugins/epan/nrsack/, where check_dissector.py
# selects them, and our word list (dissector/spelling-words.txt) is added to Wireshark's. The scoreboard
# core (core/) is a library the plugin links, not a dissector: it gets the checks Wireshark runs on its
# libraries' C (checkAPIs.pl, check_spelling.py, cppcheck), not the field and filter-name ones.
# Needs perl, python3 with pyspellchecker (check_spelling.py) and cppcheck.
set -euo pipefail

tools="${1:-${WIRESHARK_TOOLS:-}}"
if [ -z "$tools" ] || [ ! -f "$tools/check_dissector.py" ]; then
  echo "usage: $0 TOOLS   (TOOLS: a copy of Wireshark's tools/ folder, holding check_dissector.py)" >&2
  exit 2
fi
tools="$(cd "$tools" && pwd)"
# check_dissector.py goes on past a check that cannot start (a traceback, then the next check), so a
# missing prerequisite would look like a clean run: refuse up front instead.
missing=()
command -v perl >/dev/null || missing+=("perl")
command -v cppcheck >/dev/null || missing+=("cppcheck (apt-get install cppcheck)")
python3 -c 'import spellchecker' 2>/dev/null || missing+=("pyspellchecker in $(command -v python3) (pip install pyspellchecker)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "wireshark-checks: cannot run every check without: $(IFS=';'; echo "${missing[*]}" | sed 's/;/, /g')" >&2
  exit 2
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"

tree="$(mktemp -d "${TMPDIR:-/tmp}/nrsack-wireshark-checks.XXXXXX")"
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/tools" "$tree/epan" "$tree/plugins/epan/nrsack"
# Everything of TOOLS goes to tools/, except an epan/ folder (tfs.c), which is Wireshark's epan/.
for item in "$tools"/*; do
  if [ "$(basename "$item")" = epan ]; then cp -r "$item"/. "$tree/epan/"; else cp -r "$item" "$tree/tools/"; fi
done
{ echo; cat "$repo/dissector/spelling-words.txt"; } >>"$tree/tools/wireshark_words.txt"
plugin="$tree/plugins/epan/nrsack"
mkdir -p "$tree/core"
cp "$repo"/dissector/src/*.[ch] "$plugin/"
cp "$repo"/core/*.[ch] "$tree/core/"
(cd "$tree" && ls plugins/epan/nrsack/*.c) >"$tree/files.txt"

cd "$tree"
for tool in $(sed -n "s/^ *('\(tools\/[^ ']*\).*/\1/p" tools/check_dissector.py); do
  [ "$tool" = tools/check_static.py ] && continue  # runs only with --build-folder
  [ -e "$tool" ] || echo "(this copy of Wireshark's tools has no $tool: check_dissector.py reports it as not found)"
done
echo "== the plugin: tools/check_dissector.py"
python3 tools/check_dissector.py --file-list files.txt 2>&1 | sed "s|$tree/||g"
echo "== the core (a library): checkAPIs.pl, check_spelling.py, cppcheck"
perl tools/checkAPIs.pl core/*.c
python3 tools/check_spelling.py --comments --no-wikipedia $(printf -- '--file %s ' core/*.c)
tools/cppcheck/cppcheck.sh core/*.c
