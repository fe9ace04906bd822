#!/usr/bin/env bash
# run_test.sh - the real-containerd end-to-end tests, start to finish (as root),
# on each containerd in turn: Debian 12's 1.6 (installed; no event stream) and
# Debian 13's 1.7.24 (fetched and unpacked by fetch_containerd17.sh, not
# installed; streams GetContainerEvents with statuses). For each, it starts a
# private containerd (up.sh) with that containerd first on PATH, runs
# tests/real_cri/, and tears it down (down.sh --purge) whatever the outcome.
# Each run says which version it used. Exit status: 0 when every run passed.
#
# Usage: scripts/real_cri/run_test.sh [DIR]   (DIR: where sockets and state go,
#        one subdirectory per runtime; default: a new directory under /tmp)
#
# Knobs: PODS_API_REAL_CRI_RUNTIMES (default "1.6 1.7"),
#        PODS_API_CONTAINERD17_DIR (where the 1.7 package is unpacked; default
#        /var/cache/pods-api/containerd-trixie, kept between runs).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DENO=${DENO:-npx -y deno@2.9.3}
case "${1:-}" in
  -*) printf 'usage: %s [DIR]   (no options; see the header)\n' "$0" >&2; exit 2 ;;
esac
DIR=${1:-$(mktemp -d /tmp/pods-api-real-cri.XXXXXX)}
RUNTIMES=${PODS_API_REAL_CRI_RUNTIMES:-1.6 1.7}
mkdir -p "$DIR"

say() { printf '[real-cri] %s\n' "$*" >&2; }

# Prints the PATH under which `containerd` is the runtime named $1.
path_for() {
  case "$1" in
    1.6) printf '%s' "$PATH" ;;
    1.7)
      local usr
      # (called in a condition, where set -e does not apply)
      usr=$(bash "$HERE/fetch_containerd17.sh" "${PODS_API_CONTAINERD17_DIR:-/var/cache/pods-api/containerd-trixie}") ||
        return 1
      [ -x "$usr/bin/containerd" ] || return 1
      printf '%s' "$usr/bin:$PATH"
      ;;
    *) say "unknown runtime \"$1\" (known: 1.6 1.7)"; return 1 ;;
  esac
}

SOCK=""
STATE=""
cleanup() {
  if [ -n "$SOCK" ]; then
    PATH=$RUN_PATH bash "$HERE/down.sh" "$SOCK" "$STATE" --purge || true
    rmdir "$(dirname "$SOCK")" "$(dirname "$(dirname "$SOCK")")" 2>/dev/null || true
  fi
  SOCK=""
}
trap cleanup EXIT

summary=()
rc=0
for rt in $RUNTIMES; do
  if ! RUN_PATH=$(path_for "$rt"); then
    # Debian's archive out of reach: a failure where the real runtimes are
    # required (CI), else a skip that says so.
    if [ "${PODS_API_REQUIRE_REAL_CRI:-0}" = 1 ]; then
      summary+=("containerd $rt: FAILED (not available)")
      rc=1
    else
      summary+=("containerd $rt: skipped (not available; PODS_API_REAL_CRI_RUNTIMES=1.6 runs 1.6 alone)")
    fi
    continue
  fi
  version=$(PATH=$RUN_PATH containerd --version | awk '{print $3}')
  # The socket has a directory of its own, named containerd.sock as on a node:
  # the image test mounts that directory at /run/containerd, as the DaemonSet does.
  SOCK=$DIR/$rt/run/containerd.sock
  STATE=$DIR/$rt/state
  mkdir -p "$DIR/$rt/run"
  say "containerd $version ($rt): starting"
  PATH=$RUN_PATH bash "$HERE/up.sh" "$SOCK" "$STATE" >/dev/null
  set +e
  # PATH too: a test that restarts containerd (up.sh) must restart this one.
  # On 1.7 the event tests must run: a runtime without the stream fails them.
  expect_events=0
  [ "$rt" = 1.7 ] && expect_events=1
  # All permissions: the process-lookup tests read the host's /proc (the
  # daemon's index and the test's own walk), which Deno opens only under
  # --allow-all, whatever --allow-read names.
  # shellcheck disable=SC2086
  (cd "$REPO" && PATH=$RUN_PATH PODS_API_REAL_CRI_SOCKET=$SOCK PODS_API_REAL_CRI_STATE=$STATE \
    PODS_API_REAL_CRI_EXPECT_EVENTS=$expect_events \
    $DENO test --frozen --allow-all \
    tests/real_cri/)
  test_rc=$?
  set -e
  cleanup
  if [ "$test_rc" = 0 ]; then
    summary+=("containerd $version: passed")
  else
    summary+=("containerd $version: FAILED")
    rc=1
  fi
done
for line in "${summary[@]}"; do say "$line"; done
rmdir "$DIR" 2>/dev/null || true
exit "$rc"
