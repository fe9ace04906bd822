#!/usr/bin/env bash
# Runs the reliability checks (tests/reliability/) and collects their figures.
#
#   scripts/reliability/run.sh            # the CI-sized run (also part of `deno task test`)
#   scripts/reliability/run.sh --long     # PODS_API_LONG=1: 1 000 000 fuzz inputs, 10 000 cycles, 600 load rounds
#
# Figures go to stdout and, one JSON line per check, to $PODS_API_RELIABILITY_REPORT
# (default: reliability-figures.jsonl in a temp dir, printed at the end).
# The access check needs root (it runs `useradd`/`groupadd` and `setpriv`); as
# another user it is skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [[ "${1:-}" == "--long" ]]; then
  export PODS_API_LONG=1
fi
export PODS_API_RELIABILITY_REPORT="${PODS_API_RELIABILITY_REPORT:-$(mktemp -d)/reliability-figures.jsonl}"
: >"$PODS_API_RELIABILITY_REPORT"
DENO="${DENO:-npx -y deno@2.9.3}"
start=$(date +%s)
$DENO test --frozen --allow-read --allow-write --allow-net --allow-env --allow-sys --allow-run \
  tests/reliability/
echo "reliability checks took $(($(date +%s) - start)) s; figures in $PODS_API_RELIABILITY_REPORT"
cat "$PODS_API_RELIABILITY_REPORT"
