#!/usr/bin/env bash
# Webhook ingest under load: `faultline serve` on a scratch database, driven
# by wrk (Debian package `wrk`) with signed GitHub workflow_job deliveries,
# each with a unique delivery id. Prints wrk's throughput and latency
# percentiles. Rate: CONNECTIONS·1000/(DELAY_MS+latency): 12 connections pausing 20 ms
# give ≈ 520 req/s at 3 ms latency (wrk has no fixed-rate mode; its
# "Requests/sec" line is the rate achieved).
#   usage: scripts/bench-ingest.sh [BIN_DIR]   (default ./target/release)
set -euo pipefail
BIN=${1:-./target/release}
DURATION=${BENCH_INGEST_DURATION:-20s}
CONNECTIONS=${BENCH_INGEST_CONNECTIONS:-12}
DELAY_MS=${BENCH_INGEST_DELAY_MS:-20}
if ! command -v wrk >/dev/null; then
  # Like setup-services.sh: install what is missing when we can.
  SUDO=""; [[ $EUID -eq 0 ]] || SUDO="sudo -n"
  if command -v apt-get >/dev/null && { [[ $EUID -eq 0 ]] || sudo -n true 2>/dev/null; }; then
    echo "bench-ingest: installing wrk (apt-get)..."
    { $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends wrk; } >/dev/null 2>&1 || true
  fi
  if ! command -v wrk >/dev/null; then
    echo "bench-ingest: wrk is not installed and could not be installed (apt-get install wrk); skipping the webhook ingest benchmark"
    exit 0
  fi
fi
SECRET=bench-secret
source "$(dirname "$0")/lib/scratch.sh"
scratch_db faultline_bench_ingest
cp tests/fixtures/http/github-workflow-job-timed-out.json "$WORK/body.json"
SIGNATURE="sha256=$(openssl dgst -sha256 -hmac "$SECRET" -r "$WORK/body.json" | cut -d' ' -f1)"
scratch_serve GITHUB_WEBHOOK_SECRET="$SECRET"
echo "== webhook ingest: wrk -t2 -c$CONNECTIONS -d$DURATION, ${DELAY_MS} ms pause per connection (target ≥ 500 req/s, p99 < 20 ms)"
BODY_FILE="$WORK/body.json" SIGNATURE="$SIGNATURE" DELAY_MS="$DELAY_MS" \
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s scripts/wrk-github-delivery.lua "$BASE"
echo "events stored: $(psql "$URL" -tAc 'SELECT count(*) FROM failure_events')"
