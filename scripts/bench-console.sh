#!/usr/bin/env bash
# The review console with a big queue: 10,000 open review items in 2,500
# failure groups (4 items each) on a scratch database, `faultline serve`,
# a signed-in session, then 50 requests each of the queue's first page, its
# last page and an item page, timed by curl (time to the last byte).
# Prints p50 / p99 / max per page (target: the first page well under 100 ms).
#   usage: scripts/bench-console.sh [BIN_DIR]   (default ./target/release)
set -euo pipefail
BIN=${1:-./target/release}
ITEMS=${BENCH_CONSOLE_ITEMS:-10000}
GROUP=${BENCH_CONSOLE_GROUP:-4}
N=${BENCH_CONSOLE_REQUESTS:-50}
source "$(dirname "$0")/lib/scratch.sh"
scratch_db faultline_bench_console
psql "$URL" -q -v ON_ERROR_STOP=1 -v items="$ITEMS" -v per="$GROUP" <<'SQL' >/dev/null
WITH e AS (
    INSERT INTO failure_events (id, dedup_key, source, job_name, build_number, repository, log_name, received_at)
    SELECT gen_random_uuid(), 'bench:' || g, 'api', 'job-' || (g % 40), g::text, 'org/repo-' || (g % 7),
           'build.log', now() - make_interval(secs => :items - g)
    FROM generate_series(1, :items) g RETURNING id, received_at, build_number),
r AS (
    INSERT INTO analysis_runs (id, event_id, status, max_iterations, max_attempts, category, confidence,
                               result, fingerprint, created_at, finished_at)
    SELECT gen_random_uuid(), e.id, 'needs_review', 5, 5, 'INFRA_ERROR', 0.6,
           '{"category": "INFRA_ERROR", "root_cause": "runner lost", "fix": "retry", "evidence": []}',
           'fp-' || (e.build_number::int % (:items / :per)), e.received_at, e.received_at
    FROM e RETURNING id, finished_at)
INSERT INTO review_items (id, run_id, reason, category, confidence, created_at)
SELECT gen_random_uuid(), r.id, 'low confidence 0.60 (auto-accept needs 0.85)', 'INFRA_ERROR', 0.6, r.finished_at FROM r;
ANALYZE;
SQL
TOKEN=$(DATABASE_URL=$URL "$BIN/faultline" token create --role reviewer --name bench 2>/dev/null)
scratch_serve
JAR="$WORK/cookies"
CSRF=$(curl -fsS -c "$JAR" "$BASE/ui/login" | grep -o 'name="csrf" value="[^"]*"' | head -n 1 | cut -d'"' -f4)
curl -fsS -b "$JAR" -c "$JAR" -o /dev/null --data-urlencode "token=$TOKEN" --data-urlencode "csrf=$CSRF" \
  --data-urlencode "next=/ui/review" "$BASE/ui/login"
ITEM=$(psql "$URL" -tAc "SELECT id FROM review_items ORDER BY created_at LIMIT 1")
LAST=$(( (ITEMS / GROUP + 49) / 50 ))
echo "== review console: $ITEMS open items in $((ITEMS / GROUP)) groups, $N requests each (ms to the last byte)"
for page in "/ui/review" "/ui/review?page=$LAST" "/ui/review/$ITEM" "/ui/groups"; do
  curl -fsS -b "$JAR" -o "$WORK/page.html" "$BASE$page"
  grep -q 'data-page=' "$WORK/page.html" || { echo "not a console page: $page"; exit 1; }
  # Warm-up: the first requests prepare the statements on a connection.
  for _ in 1 2 3 4 5; do curl -fsS -b "$JAR" -o /dev/null "$BASE$page"; done
  for _ in $(seq 1 "$N"); do
    curl -fsS -b "$JAR" -o /dev/null -w '%{time_total}\n' "$BASE$page"
  done | sort -n | awk -v page="$page" '{ t[NR] = $1 * 1000 } END {
      printf "%-28s p50 %6.1f  p99 %6.1f  max %6.1f\n", page, t[int(NR * 0.5 + 0.5)], t[int(NR * 0.99 + 0.5)], t[NR] }'
done
