#!/usr/bin/env bash
# Coverage-guided fuzzing of the code that reads untrusted input (fuzz/).
#
#   scripts/fuzz.sh                      build, then fuzz every target FUZZ_SECONDS each
#   scripts/fuzz.sh run [target...]      the same for some targets
#   scripts/fuzz.sh repro <target> <file>  run one input once, with a backtrace
#   scripts/fuzz.sh tmin <target> <file>   minimise a crashing input (afl-tmin)
#
# Environment: FUZZ_SECONDS (60) per target, FUZZ_SECONDS_<target> for one
# target (FUZZ_SECONDS_github_payload=1800); FUZZ_JOBS (1) targets fuzzed at
# once (each AFL++ instance uses one core); FUZZ_TIMEOUT_MS (2000) above
# which one input counts as a hang.
#
# Engine: AFL++ through cargo-afl (stable Rust; rustc's sancov passes do
# the instrumentation). Each run starts from the committed seeds
# (fuzz/seeds/<target>) with a dictionary (fuzz/dicts); AFL++ state goes to
# fuzz/out/<target>, crashing and hanging inputs are copied to
# fuzz/artifacts/<target>/. Prints seconds, execs, crashes and hangs per
# target; exits 1 if any target crashed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
FUZZ="$ROOT/fuzz"
SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS=${FUZZ_JOBS:-1}
TIMEOUT_MS=${FUZZ_TIMEOUT_MS:-2000}
TARGET_DIR=${FUZZ_TARGET_DIR:-$FUZZ/target}
# Every target under fuzz/fuzz_targets/, in this order, then the rest.
TARGETS_ALL=()
for t in clean_line excerpt diagnose llm_reply github_payload jenkins_payload jenkins_path \
  $(cd "$FUZZ/fuzz_targets" && ls -- *.rs | sed 's/\.rs$//'); do
  if [[ -f "$FUZZ/fuzz_targets/$t.rs" && " ${TARGETS_ALL[*]} " != *" $t "* ]]; then
    TARGETS_ALL+=("$t")
  fi
done

# The worker's crates compile SQL-checking macros: never against a database.
export SQLX_OFFLINE=true
# AFL++ in a container or on a shared machine: no CPU-governor check, no
# core binding, no core-dump check, no curses UI.
export AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1

dict_of() {
  case "$1" in
    llm_reply | github_payload | jenkins_payload) echo "$FUZZ/dicts/json.dict" ;;
    *) echo "$FUZZ/dicts/log.dict" ;;
  esac
}

ensure_cargo_afl() {
  if ! cargo afl --version >/dev/null 2>&1; then
    echo "installing cargo-afl (AFL++ is built with the system C compiler)" >&2
    cargo install --locked cargo-afl
  fi
  # Builds AFL++ and its runtime for this rustc once; a no-op afterwards.
  cargo afl config --build >/dev/null 2>&1 || true
}

feature_of() { # target -> the fuzz crate feature it needs, if any
  case "$1" in
    llm_reply | jenkins_path) echo worker ;;
    github_payload | jenkins_payload) echo payloads ;;
  esac
}

build() { # targets: only those, with only the features they need
  ensure_cargo_afl
  local features=() bins=()
  for t in "$@"; do
    bins+=(--bin "$t")
    features+=($(feature_of "$t"))
  done
  (cd "$FUZZ" && cargo afl build --release --locked --target-dir "$TARGET_DIR" \
    --no-default-features --features "${features[*]:-}" "${bins[@]}")
}

stat_of() { # file key
  sed -n "s/^$2 *: *//p" "$1" | head -n 1
}

fuzz_one() { # target -> one summary line on stdout
  local t=$1 out="$FUZZ/out/$1" art="$FUZZ/artifacts/$1" own="FUZZ_SECONDS_$1"
  local seconds=${!own:-$SECONDS_EACH}
  rm -rf "$out"
  mkdir -p "$out" "$art"
  cargo afl fuzz -V "$seconds" -t "$TIMEOUT_MS" -m none \
    -i "$FUZZ/seeds/$t" -o "$out" -x "$(dict_of "$t")" \
    -- "$TARGET_DIR/release/$t" >"$out/afl.log" 2>&1 || {
    echo "$t: afl-fuzz failed, see $out/afl.log:" >&2
    tail -n 20 "$out/afl.log" >&2
    printf '%-16s %s\n' "$t" "ERROR (afl-fuzz did not run)"
    return
  }
  local stats="$out/default/fuzzer_stats" stamp
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
  for kind in crashes hangs; do
    for f in "$out/default/$kind"/id:*; do
      [[ -e "$f" ]] && cp "$f" "$art/$stamp-${kind%es}-$(basename "$f" | cut -d, -f1 | tr : _)"
    done
  done
  printf '%-16s %8s %12s %10s %8s %8s %10s\n' "$t" \
    "$(stat_of "$stats" run_time)" "$(stat_of "$stats" execs_done)" \
    "$(stat_of "$stats" execs_per_sec)" "$(stat_of "$stats" saved_crashes)" \
    "$(stat_of "$stats" saved_hangs)" "$(stat_of "$stats" corpus_count)"
}

run() {
  local targets=("$@")
  [[ ${#targets[@]} -gt 0 ]] || targets=("${TARGETS_ALL[@]}")
  # One build per target: a target whose code does not compile is reported
  # and the others still run.
  local ok=() failed=()
  for t in "${targets[@]}"; do
    if build "$t"; then ok+=("$t"); else failed+=("$t"); fi
  done
  targets=("${ok[@]}")
  echo "fuzzing ${targets[*]}: ${SECONDS_EACH}s each (unless FUZZ_SECONDS_<target>), $JOBS at a time" >&2
  local summary="$FUZZ/out/summary.txt"
  mkdir -p "$FUZZ/out"
  printf '%-16s %8s %12s %10s %8s %8s %10s\n' target seconds execs execs/s crashes hangs corpus >"$summary"
  for t in "${failed[@]}"; do printf '%-16s %s\n' "$t" "ERROR (does not build)" >>"$summary"; done
  if [[ $JOBS -le 1 ]]; then
    for t in "${targets[@]}"; do fuzz_one "$t" >>"$summary"; done
  else
    local running=0
    for t in "${targets[@]}"; do
      fuzz_one "$t" >"$FUZZ/out/$t.summary" &
      running=$((running + 1))
      if [[ $running -ge $JOBS ]]; then wait -n || true; running=$((running - 1)); fi
    done
    wait
    for t in "${targets[@]}"; do cat "$FUZZ/out/$t.summary" >>"$summary"; done
  fi
  cat "$summary"
  if awk 'NR > 1 && ($5 != "0" || $2 == "ERROR") { bad = 1 } END { exit !bad }' "$summary"; then
    echo "crashes (or a failed run): inputs under fuzz/artifacts/; reproduce with scripts/fuzz.sh repro <target> <file>" >&2
    exit 1
  fi
}

repro() { # target file
  # Outside afl-fuzz the instrumented binary runs its input from stdin once.
  local t=$1 file=$2
  build "$t" >&2
  RUST_BACKTRACE=1 "$TARGET_DIR/release/$t" <"$file"
}

tmin() { # target file
  local t=$1 file=$2
  build "$t"
  cargo afl tmin -t "$TIMEOUT_MS" -m none -i "$file" -o "$file.min" -- "$TARGET_DIR/release/$t"
  echo "minimised: $file.min" >&2
}

case "${1:-run}" in
  run) shift || true; run "$@" ;;
  repro) repro "$2" "$3" ;;
  tmin) tmin "$2" "$3" ;;
  build)
    shift
    [[ $# -gt 0 ]] || set -- "${TARGETS_ALL[@]}"
    build "$@"
    ;;
  *) echo "usage: $0 [run [target...] | repro <target> <file> | tmin <target> <file> | build]" >&2; exit 2 ;;
esac
