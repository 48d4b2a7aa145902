#!/usr/bin/env bash
# Runs every test of the workspace. Binaries must be built first (make test does).
set -euo pipefail
cd "$(dirname "$0")/.."
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  echo "test: cargo-nextest not found, using cargo test" >&2
  cargo test --workspace --locked --no-fail-fast
fi
