#!/usr/bin/env bash
# maybe_run.sh - runs the real-containerd tests (on containerd 1.6 and 1.7:
# run_test.sh) when this machine can (root, containerd, runc and the CNI
# plugins installed); otherwise says why it skips. With PODS_API_REQUIRE_REAL_CRI=1 (CI) a skip is a failure.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
why=""
[ "$(id -u)" = 0 ] || why="not root"
for bin in containerd runc ctr; do
  command -v "$bin" >/dev/null 2>&1 || why="${why:+$why, }$bin not installed"
done
[ -x /usr/lib/cni/bridge ] || why="${why:+$why, }containernetworking-plugins not installed"
if [ -n "$why" ]; then
  if [ "${PODS_API_REQUIRE_REAL_CRI:-0}" = 1 ]; then
    echo "real containerd tests required but cannot run: $why" >&2
    exit 1
  fi
  echo "skipping real containerd tests: $why (see README, Development)"
  exit 0
fi
exec bash "$HERE/run_test.sh"
