#!/usr/bin/env bash
# The end-to-end demo behind `make run`: start two workers, analyse every
# bundled sample log, print each result and the review queue, stop the
# workers; then serve the review console and print its URL and a reviewer
# token made for the demo. The server keeps running in the background
# (CI=true: it is checked and stopped). DEMO_BIND picks its address
# (default 127.0.0.1:8080, or a free port when that one is taken).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-./target/release}
workers=()
# Waits for the workers only: a bare `wait` would also wait for the console
# left serving in the background, and `make run` would never return.
cleanup() {
  for pid in "${workers[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${workers[@]}"; do wait "$pid" 2>/dev/null || true; done
}
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

echo
echo "== the pull-request comment these analyses make (NOTIFY_GITHUB_PR_COMMENTS; \`faultline pr-comment --markdown\` prints what is posted)"
"$BIN/faultline" pr-comment --recent "$(ls samples/*.log | wc -l)"

echo
echo "== review console"
bind=${DEMO_BIND:-127.0.0.1:8080}
if (exec 3<>"/dev/tcp/${bind%:*}/${bind##*:}") 2>/dev/null; then
  bind="${bind%:*}:0"
fi
token=$("$BIN/faultline" token create --role reviewer --name "demo-reviewer-$(date +%Y%m%d-%H%M%S)" --expires-in 7d 2>/dev/null)
setsid nohup "$BIN/faultline" serve --bind "$bind" >target/demo/serve.out 2>target/demo/serve.log </dev/null &
serve_pid=$!
disown "$serve_pid"
url=""
for _ in $(seq 1 100); do
  url=$(sed -n 's/^listening on //p' target/demo/serve.out 2>/dev/null | head -n 1)
  [ -n "$url" ] && break
  kill -0 "$serve_pid" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$url" ] || ! curl -fsS -o /dev/null "$url/ui/login"; then
  echo "the console did not start; see target/demo/serve.log" >&2
  cat target/demo/serve.log >&2 || true
  exit 1
fi
echo "open $url/ui/ and sign in with this reviewer token (valid 7 days):"
echo "  $token"
case "${CI:-}" in
  true | 1 | yes)
    kill -TERM "$serve_pid" 2>/dev/null || true
    echo "(CI: the console answered and was stopped)"
    ;;
  *) echo "(the server runs in the background, pid $serve_pid; stop it with: kill $serve_pid)" ;;
esac
exit $status
