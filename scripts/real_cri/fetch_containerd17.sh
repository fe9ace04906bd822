#!/usr/bin/env bash
# fetch_containerd17.sh - puts Debian 13's containerd (1.7.24) in a directory
# without installing it: the package is fetched by name from Debian's archive
# with a private apt state (its own sources list and lists directory, so the
# machine's apt configuration and package lists are left as they are), then
# unpacked with dpkg -x. It runs on Debian 12: it needs only libc6 >= 2.34 and
# bookworm's runc.
#
# Usage: scripts/real_cri/fetch_containerd17.sh [DIR]
#        (default DIR: /var/cache/pods-api/containerd-trixie)
#
# Prints the directory whose bin/ holds containerd, ctr and the runc shim.
# Idempotent: a directory already holding the unpacked package is reused.
# Knob: REAL_CRI_DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

say() { printf '[fetch containerd 1.7] %s\n' "$*" >&2; }

DIR=$(readlink -m "${1:-/var/cache/pods-api/containerd-trixie}")
MIRROR=${REAL_CRI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOT=$DIR/root
if [ -x "$ROOT/usr/bin/containerd" ] && "$ROOT/usr/bin/containerd" --version >/dev/null 2>&1; then
  echo "$ROOT/usr"
  exit 0
fi

APT=$DIR/apt
mkdir -p "$APT/lists/partial" "$APT/archives/partial" "$APT/etc"
cat >"$APT/etc/trixie.sources" <<SRC
Types: deb
URIs: $MIRROR
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
# Only this one source, only this lists directory and package cache.
opts=(
  -o "Dir::Etc::sourcelist=-"
  -o "Dir::Etc::sourceparts=$APT/etc"
  -o "Dir::State::Lists=$APT/lists"
  -o "Dir::Cache::archives=$APT/archives"
  -o "Dir::Cache::pkgcache=$APT/pkgcache.bin"
  -o "Dir::Cache::srcpkgcache=$APT/srcpkgcache.bin"
  -o "APT::Architecture=$(dpkg --print-architecture)"
  -o "Acquire::Languages=none"
  -o "APT::Sandbox::User=root"
)
say "apt-get update (trixie only, state in $APT)"
apt-get "${opts[@]}" update -qq >&2
say "apt-get download containerd/trixie"
rm -f "$APT"/archives/containerd_*.deb
(cd "$APT/archives" && apt-get "${opts[@]}" download containerd/trixie >&2)
deb=$(ls -t "$APT"/archives/containerd_*.deb | head -n1)
rm -rf "$ROOT"
dpkg -x "$deb" "$ROOT"
version=$("$ROOT/usr/bin/containerd" --version)
case "$version" in
  *" 1.7."*) ;;
  *) say "unexpected containerd in $(basename "$deb"): $version"; exit 1 ;;
esac
say "unpacked $(basename "$deb"): $version"
echo "$ROOT/usr"
