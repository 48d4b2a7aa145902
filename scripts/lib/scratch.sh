# scratch.sh — sourced by the bench scripts: a scratch database and a
# `faultline serve` on it, both gone when the script exits.
#
#   scratch_db NAME          creates and migrates database NAME_<pid> on the
#                            server of FAULTLINE_TEST_ADMIN_URL; sets DB, URL
#                            and WORK (a temporary directory); the EXIT trap
#                            stops the server, drops the database, removes WORK
#   scratch_serve [VAR=V…]   starts `$BIN/faultline serve` on a free port with
#                            DATABASE_URL=$URL and the given variables; sets
#                            SERVE_PID and BASE (http://127.0.0.1:PORT)
# Needs BIN (the directory of the binaries) and psql.

ADMIN=${FAULTLINE_TEST_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}

scratch_cleanup() {
  # Under the caller's `set -e`: no step may end the clean-up early.
  if [[ -n "${SERVE_PID:-}" ]]; then kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
  if [[ -n "${DB:-}" ]]; then psql "$ADMIN" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true; fi
  if [[ -n "${WORK:-}" ]]; then rm -rf "$WORK"; fi
  return 0
}

scratch_db() {
  DB="$1_$$"
  URL="${ADMIN%/*}/$DB"
  WORK=$(mktemp -d)
  trap scratch_cleanup EXIT
  psql "$ADMIN" -qc "CREATE DATABASE $DB" >/dev/null
  DATABASE_URL=$URL "$BIN/faultline" migrate >/dev/null
}

scratch_serve() {
  env DATABASE_URL="$URL" RUST_LOG=warn "$@" \
    "$BIN/faultline" serve --bind 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
  SERVE_PID=$!
  for _ in $(seq 1 100); do
    grep -q "listening on" "$WORK/serve.out" && break
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.1
  done
  BASE=$(sed -n 's/^listening on //p' "$WORK/serve.out")
  [[ -n "$BASE" ]] || { cat "$WORK/serve.err" >&2; exit 1; }
}
