#!/usr/bin/env bash
# run_tests.sh - runs every test file in one deno test process.
#
# One run, one verdict: a run whose Deno runtime aborts (exit 134 or 139) is
# a failed run like any other, because production would see the same abort.
set -uo pipefail
DENO=${DENO:-npx -y deno@2.9.3}
#
# tests/real_cri/ needs a private containerd: scripts/real_cri/maybe_run.sh
# runs it (or says why it cannot), so it is not counted here as ignored.
# shellcheck disable=SC2086
exec $DENO test --frozen --allow-read --allow-write --allow-net --allow-env --allow-sys --allow-run \
  --ignore=tests/real_cri/ tests/
