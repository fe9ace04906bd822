#!/usr/bin/env bash
# run_test.sh - the real-containerd end-to-end test, start to finish (as root):
# starts a private containerd (up.sh), runs tests/real_cri/, tears it down
# (down.sh --purge) whatever the outcome. Exit status: the test's.
#
# Usage: scripts/real_cri/run_test.sh [DIR]   (DIR: where socket and state go;
#        default: a new directory under /tmp)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DENO=${DENO:-npx -y deno@2.9.3}
DIR=${1:-$(mktemp -d /tmp/pods-api-real-cri.XXXXXX)}
# The socket has a directory of its own, named containerd.sock as on a node:
# the image test mounts that directory at /run/containerd, as the DaemonSet does.
SOCK=$DIR/run/containerd.sock
mkdir -p "$DIR/run"

cleanup() {
  bash "$HERE/down.sh" "$SOCK" "$DIR/state" --purge || true
  rmdir "$DIR/run" "$DIR" 2>/dev/null || true
}
trap cleanup EXIT
bash "$HERE/up.sh" "$SOCK" "$DIR/state" >/dev/null
cd "$REPO"
# shellcheck disable=SC2086
PODS_API_REAL_CRI_SOCKET=$SOCK PODS_API_REAL_CRI_STATE=$DIR/state \
  $DENO test --frozen --allow-read --allow-write --allow-net --allow-env --allow-sys --allow-run \
  tests/real_cri/
