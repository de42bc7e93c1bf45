#!/usr/bin/env bash
# tshark with the freshly built nrsack C plugin, without installing it: usage as tshark's.
# Wireshark ignores WIRESHARK_PLUGIN_DIR when run as root, so as root tshark runs as nobody.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build/dissector"
[ -f "$build/nrsack.so" ] || make -s -C "$repo/dissector" build >/dev/null
plugins="$(mktemp -d /tmp/nrsack-plugins.XXXXXX)"
trap 'rm -rf "$plugins"' EXIT
mkdir -p "$plugins/4.0/epan"
cp "$build/nrsack.so" "$plugins/4.0/epan/"
chmod -R a+rX "$plugins"
export WIRESHARK_PLUGIN_DIR="$plugins"
if [ "$(id -u)" = 0 ]; then
  home="$(mktemp -d /tmp/nrsack-home.XXXXXX)"; chmod 777 "$home"
  HOME="$home" setpriv --reuid=65534 --regid=65534 --clear-groups tshark "$@"
  rm -rf "$home"
else
  tshark "$@"
fi
