#!/usr/bin/env bash
# Debian chroots with another Wireshark release, to build and test the nrsack plugins against it.
#   scripts/wireshark-chroot.sh ensure SUITE          make (or reuse) the chroot, print its folder
#   scripts/wireshark-chroot.sh exec SUITE [--user] -- CMD...
#                                                     run CMD inside; --user drops to uid/gid 65534
#   scripts/wireshark-chroot.sh version SUITE         the chroot's Wireshark version (e.g. 4.4.9)
#   scripts/wireshark-chroot.sh fresh SUITE DIR       a throwaway copy of the cached chroot in DIR
# SUITE: trixie (Debian 13, Wireshark 4.4) or forky (Debian testing, Wireshark 4.6); bookworm is a stock
# Debian 12 as a newcomer has it (make and ca-certificates added, no Wireshark), to run the README's
# commands in (tests/test_setup_stock_debian.py). Needs root and debootstrap. The chroot is cached
# outside the clone (NRSACK_CHROOT_CACHE, default /var/cache/nrsack) as a tarball named after its
# package list, so CI re-runs on one machine and fresh clones reuse it.
# In `exec`, the clone and /tmp are bind-mounted at the same paths (a private mount namespace, so
# nothing stays mounted), and paths mean the same inside and outside.
set -euo pipefail

CACHE="${NRSACK_CHROOT_CACHE:-/var/cache/nrsack}"
REPO="$(cd "$(dirname "$0")/.." && pwd)"
PACKAGES=(tshark wireshark-dev libgcrypt20-dev cmake gcc make libc6-dev pkg-config util-linux)
STOCK_PACKAGES=(make ca-certificates)  # bookworm: what the README's reader adds to a fresh Debian 12

die() { echo "wireshark-chroot: $*" >&2; exit 2; }

mirror() {
  # The host's Debian mirror (deb822 URIs: or one-line deb entries), deb.debian.org otherwise.
  local uri
  uri="$(grep -hoE '^URIs: *http[^ ]*/debian/?$' /etc/apt/sources.list.d/* 2>/dev/null | head -n1 | sed 's/^URIs: *//')" || true
  [ -n "$uri" ] || uri="$(grep -hoE '^deb +http[^ ]*/debian/? ' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
    | head -n1 | awk '{print $2}')" || true
  echo "${uri:-http://deb.debian.org/debian}"
}

suite_ok() {
  case "$1" in trixie|forky) ;; bookworm) PACKAGES=("${STOCK_PACKAGES[@]}") ;; *) die "unknown suite '$1' (trixie, forky or bookworm)";; esac
}

stamp() {  # names a cache entry after what is inside it, so a changed package list makes a new one
  echo "$1-$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -c1-12)"
}

run_inside() {  # run_inside DIR USER_FLAG CMD... : private mount namespace, binds, chroot
  local dir="$1" user="$2"; shift 2
  local drop=()
  [ "$user" = 1 ] && drop=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  exec unshare --mount --propagation private -- /bin/sh -euc '
    dir="$1" repo="$2"; shift 2
    mount -t proc proc "$dir/proc"
    mount --rbind /dev "$dir/dev"
    mkdir -p "$dir$repo"
    mount --bind "$repo" "$dir$repo"
    mount --bind /tmp "$dir/tmp"
    exec chroot "$dir" "$@"' sh "$dir" "$REPO" "${drop[@]}" "$@"
}

create() {  # create SUITE DIR: debootstrap, then the packages
  local suite="$1" dir="$2" script=()
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  # Older debootstraps have no forky script; testing is bootstrapped like sid.
  [ "$suite" = forky ] && [ ! -e "/usr/share/debootstrap/scripts/forky" ] && script=(/usr/share/debootstrap/scripts/sid)
  rm -rf "$dir"
  echo "wireshark-chroot: debootstrap $suite from $(mirror) (a few minutes)" >&2
  # in a private mount namespace: the /proc and /sys it mounts inside go away with it, even if interrupted
  unshare --mount --propagation private -- \
    debootstrap --variant=minbase "$suite" "$dir" "$(mirror)" "${script[@]}" >"$dir.log" 2>&1 \
    || { tail -n 20 "$dir.log" >&2; die "debootstrap $suite failed (log: $dir.log)"; }
  # Testing's Release files can be older than their Valid-Until on a lagging mirror.
  echo 'Acquire::Check-Valid-Until "false";' >"$dir/etc/apt/apt.conf.d/99nrsack"
  echo 'APT::Install-Recommends "false";' >>"$dir/etc/apt/apt.conf.d/99nrsack"
  ( run_inside "$dir" 0 /usr/bin/env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      sh -ec "apt-get update -q && apt-get install -y -q ${PACKAGES[*]} && apt-get clean" ) >>"$dir.log" 2>&1 \
    || { tail -n 20 "$dir.log" >&2; die "installing ${PACKAGES[*]} in $suite failed (log: $dir.log)"; }
}

ensure() {  # prints the ready chroot folder of SUITE
  local suite="$1" name dir tarball
  [ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot)"
  name="$(stamp "$suite")"; dir="$CACHE/$name"; tarball="$CACHE/$name.tar.zst"
  mkdir -p "$CACHE"
  exec 9>"$CACHE/$suite.lock"
  flock 9  # parallel test workers: one creates, the others wait and reuse
  if [ ! -e "$dir/.nrsack-ready" ]; then
    if [ -s "$tarball" ]; then
      rm -rf "$dir"; mkdir -p "$dir"
      tar --zstd -xf "$tarball" -C "$dir"
    else
      create "$suite" "$dir"
      tar --zstd -cf "$tarball.part" -C "$dir" --exclude=./proc/* --exclude=./dev/* . && mv "$tarball.part" "$tarball"
    fi
    touch "$dir/.nrsack-ready"
  fi
  echo "$dir"
}

[ $# -ge 2 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
command="$1" suite="$2"; shift 2
suite_ok "$suite"
case "$command" in
  ensure) ensure "$suite" ;;
  exec)
    user=0
    [ "${1:-}" = --user ] && { user=1; shift; }
    [ "${1:-}" = -- ] && shift
    [ $# -gt 0 ] || die "exec needs a command"
    dir="$(ensure "$suite")"
    run_inside "$dir" "$user" "$@" ;;
  fresh)
    [ $# = 1 ] || die "fresh needs a folder"
    ensure "$suite" >/dev/null
    mkdir -p "$1"
    tar --zstd -xf "$CACHE/$(stamp "$suite").tar.zst" -C "$1" ;;
  version)
    dir="$(ensure "$suite")"
    chroot "$dir" dpkg-query -W -f='${Version}' tshark | sed -E 's/^[0-9]+://; s/-.*//' ;;
  *) die "unknown command '$command' (ensure, exec, fresh or version)" ;;
esac
