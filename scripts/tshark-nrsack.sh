#!/usr/bin/env bash
# tshark with the freshly built nrsack C plugin, without installing it: usage as tshark's.
# Wireshark ignores WIRESHARK_PLUGIN_DIR when run as root, so as root tshark runs as nobody.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build/dissector"
[ -f "$build/nrsack.so" ] || make -s -C "$repo/dissector" build >/dev/null
# every exit path removes what this run made: tshark failing (set -e), a signal, a normal end
plugins="" home="" child=""
trap '[ -z "$child" ] || kill "$child" 2>/dev/null || true; rm -rf "$plugins" "$home"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
tmp="${TMPDIR:-/tmp}"
plugins="$(mktemp -d "$tmp/nrsack-plugins.XXXXXX")"
mkdir -p "$plugins/4.0/epan"
cp "$build/nrsack.so" "$plugins/4.0/epan/"
chmod -R a+rX "$plugins"
export WIRESHARK_PLUGIN_DIR="$plugins"
# tshark runs in the background and the script waits: a signal then reaches the trap at once, not
# after tshark ends (bash defers traps while a foreground command runs); stdin stays tshark's
run() { "$@" <&0 & child=$!; wait "$child"; }
if [ "$(id -u)" = 0 ]; then
  home="$(mktemp -d "$tmp/nrsack-home.XXXXXX")"; chmod 777 "$home"
  HOME="$home" run setpriv --reuid=65534 --regid=65534 --clear-groups tshark "$@"
else
  run tshark "$@"
fi
