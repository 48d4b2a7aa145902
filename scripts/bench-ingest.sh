#!/usr/bin/env bash
# Webhook ingest under load: `faultline serve` on a scratch database, driven
# by wrk (Debian package `wrk`) with signed GitHub workflow_job deliveries,
# each a different job with a unique delivery id (every request stores
# an event). Prints wrk's throughput and latency
# percentiles. Rate: CONNECTIONS·1000/(DELAY_MS+latency): 12 connections pausing 17 ms
# give ≈ 560 req/s at 4 ms latency (wrk has no fixed-rate mode; its
# "Requests/sec" line is the rate achieved).
#   usage: scripts/bench-ingest.sh [BIN_DIR]   (default ./target/release)
set -euo pipefail
BIN=${1:-./target/release}
DURATION=${BENCH_INGEST_DURATION:-20s}
CONNECTIONS=${BENCH_INGEST_CONNECTIONS:-12}
THREADS=2
DELAY_MS=${BENCH_INGEST_DELAY_MS:-17}
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
# Distinct failed jobs (job id and URL varied), each body signed: the
# producer deduplicates by what the signature covers, so one body resent
# would store one event and measure only the duplicate path. 16,000 cover
# the most the default pacing can send in 20 s (12·1000/17 req/s); a wrk
# thread that runs out starts over, and "events stored" shows it.
python3 - tests/fixtures/http/github-workflow-job-timed-out.json "$SECRET" "$WORK" "${BENCH_INGEST_BODIES:-16000}" <<'PY'
import hashlib, hmac, json, sys
src, secret, work, n = sys.argv[1], sys.argv[2].encode(), sys.argv[3], int(sys.argv[4])
doc = json.load(open(src))
job = doc["workflow_job"]
first, url = job["id"], job["url"]
with open(f"{work}/bodies", "w") as bodies, open(f"{work}/sigs", "w") as sigs:
    for i in range(n):
        job["id"] = first + i
        job["url"] = url.replace(str(first), str(first + i))
        body = json.dumps(doc, separators=(",", ":"))
        bodies.write(body + "\n")
        sigs.write("sha256=" + hmac.new(secret, body.encode(), hashlib.sha256).hexdigest() + "\n")
PY
scratch_serve GITHUB_WEBHOOK_SECRET="$SECRET"
echo "== webhook ingest: wrk -t$THREADS -c$CONNECTIONS -d$DURATION, ${DELAY_MS} ms pause per connection (target ≥ 500 req/s, p99 < 20 ms)"
BODIES_FILE="$WORK/bodies" SIGS_FILE="$WORK/sigs" THREADS="$THREADS" DELAY_MS="$DELAY_MS" \
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s scripts/wrk-github-delivery.lua "$BASE"
echo "events stored: $(psql "$URL" -tAc 'SELECT count(*) FROM failure_events')"
