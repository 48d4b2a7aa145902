#!/usr/bin/env bash
# The end-to-end demo behind `make run`: start two workers, analyse every
# bundled sample log, print each result and the review queue, stop the workers.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-./target/release}
workers=()
cleanup() { for pid in "${workers[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
mkdir -p target/demo
for i in 1 2; do
  # /metrics, /healthz, /readyz on a free port each (logged as "health and metrics on ...").
  WORKER_HTTP_ADDR=${WORKER_HTTP_ADDR:-127.0.0.1:0} FAULTLINE_WORKER_ID="demo-worker-$i" RUST_LOG=${RUST_LOG:-warn} "$BIN/faultline-worker" 2>"target/demo/worker-$i.log" &
  workers+=($!)
done
echo "== started ${#workers[@]} workers (logs in target/demo/)"
status=0
for log in samples/*.log; do
  echo
  echo "== $log"
  # Exit codes: 0 completed, 2 needs review, anything else is a failure of the demo.
  "$BIN/faultline" analyze "$log" --timeout 120 || { code=$?; [ "$code" -eq 2 ] || status=$code; }
done
echo
echo "== review queue"
"$BIN/faultline" review list
exit $status
