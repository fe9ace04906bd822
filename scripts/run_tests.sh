#!/usr/bin/env bash
# run_tests.sh - runs every test file in one deno test process.
#
# Deno 2.9.6's node:http2 can abort the whole process (exit 134, or 139)
# inside nghttp2 when a connection whose streams were cancelled is closed
# (denoland/deno#36788; RELIABILITY.md). The tests open and close hundreds of
# gRPC connections in this one process, so such an abort ends the run
# without any test having failed. Then, and only then, the run is repeated
# (at most three runs in all), loudly. A test that fails (exit 1) is never
# retried.
set -uo pipefail
DENO=${DENO:-npx -y deno@2.9.6}
run() {
  # shellcheck disable=SC2086
  $DENO test --frozen --allow-read --allow-write --allow-net --allow-env --allow-sys --allow-run tests/
}
run
rc=$?
for attempt in 2 3; do
  [ "$rc" = 134 ] || [ "$rc" = 139 ] || break
  echo "run_tests: the Deno runtime aborted (exit $rc, denoland/deno#36788), not a test failure; run $attempt of 3" >&2
  run
  rc=$?
done
exit "$rc"
