#!/usr/bin/env bash
# Installs everything nrsack needs on Debian 12 (run as root; safe to run again).
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
  tshark wireshark-dev libwireshark-dev libglib2.0-dev libgcrypt20-dev libpcap-dev cmake gcc make pkg-config binutils wireshark-common
  lua5.2 tcpdump libusrsctp-dev iproute2 nftables util-linux
  chromium chromium-driver
  debootstrap zstd lz4
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

python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -c constraints.txt -e ".[test,bench]"
