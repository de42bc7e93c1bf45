#!/usr/bin/env bash
# Installs everything nrsack needs on Debian 12 (run as root; safe to run again, and quick then).
#
# Python: a virtual environment of Debian's own python3 (PEP 668: nothing is pip-installed into the
# system's Python, whichever python3 comes first on PATH), in a folder every user can read
# (NRSACK_PREFIX, default /opt/nrsack), with `nrsack` linked into NRSACK_BIN_DIR (default
# /usr/local/bin) so that every user has it: the Wireshark plugins are for a normal user, not root.
# nrsack is installed editable from this clone: every user runs this clone's code, so keep the clone
# where they can read it (setup warns otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

PREFIX="${NRSACK_PREFIX:-/opt/nrsack}"
VENV="$PREFIX/venv"
BIN_DIR="${NRSACK_BIN_DIR:-/usr/local/bin}"
SYSTEM_PYTHON=/usr/bin/python3   # Debian's, whatever else this machine has

DEBIAN_PACKAGES=(
  tshark wireshark-dev libwireshark-dev libglib2.0-dev libgcrypt20-dev libpcap-dev cmake gcc make pkg-config binutils wireshark-common
  lua5.2 tcpdump libusrsctp-dev iproute2 nftables util-linux
  chromium chromium-driver
  wireshark-qt xvfb x11-apps x11-utils xdotool   # the GUI tests: Wireshark under Xvfb, screenshots, menu keys
  debootstrap zstd lz4 gzip
  python3 python3-venv python3-dev
)

missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  # Capturing stays a root-only matter: don't make dumpcap setuid.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -q
  apt-get install -y -q "${missing[@]}"
fi

# The environment, made once; made anew when its Python is gone (an upgrade) or is not Debian's.
if ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.base_prefix != "/usr")' 2>/dev/null; then
  echo "setup: virtual environment $VENV (Debian's python3)"
  rm -rf "$VENV"
  mkdir -p "$PREFIX"
  "$SYSTEM_PYTHON" -m venv "$VENV"
fi
pip=("$VENV/bin/python" -m pip -q --disable-pip-version-check)

# The dependencies at constraints.txt's versions: only when pyproject.toml or constraints.txt changed
# since the last time (a second run, CI's included, skips the resolver and the downloads).
wanted="$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
if [ "$(cat "$VENV/.nrsack-dependencies" 2>/dev/null)" != "$wanted" ]; then
  echo "setup: installing nrsack's dependencies into $VENV"
  "${pip[@]}" install -c constraints.txt -e ".[test,bench]"
  echo "$wanted" >"$VENV/.nrsack-dependencies"
else
  # nrsack itself, from this clone (it may be another clone than last time), and its compiled parts
  "${pip[@]}" install --no-deps --no-build-isolation -e .
fi

mkdir -p "$BIN_DIR"
ln -sfn "$VENV/bin/nrsack" "$BIN_DIR/nrsack"
chmod -R a+rX "$PREFIX"

# Every user runs this clone's code: say so when they cannot read it (a clone in /root, say).
if [ "$(id -u)" = 0 ] && ! setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$repo/nrsack/cli.py" 2>/dev/null; then
  echo "setup: warning: other users cannot read $repo, so only root can run nrsack; clone it where they" \
       "can (e.g. under /opt or /srv)" >&2
fi
