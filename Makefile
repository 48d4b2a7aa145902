# Faultline — every target does its own set-up (services, database, build).
#   make run     install/start Postgres + Redis if needed, build, migrate, analyse the bundled samples
#   make test    same set-up, then every test (unit + black-box against real Postgres)
#   make bench   engine overhead: checkpointed steps/s and step-commit latency
#   make eval    excerpt F1 on ../shared/data/logchunks-dev (when that folder is present)
#   make lint    rustfmt + clippy, warnings are errors

SHELL := /bin/bash
export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/faultline
export REDIS_URL ?= redis://127.0.0.1:6379
# Black-box tests create one database per test on this server.
export FAULTLINE_TEST_ADMIN_URL ?= $(shell echo "$(DATABASE_URL)" | sed -E 's#/[^/?]+(\?.*)?$$#/postgres\1#')
CARGO ?= cargo
SHARED ?= ../shared

.PHONY: setup build build-release migrate run test bench eval lint clean-test-dbs

setup:
	@bash scripts/setup-services.sh

build-release:
	$(CARGO) build --release --locked --bins

build:
	$(CARGO) build --locked --bins --tests

migrate: setup build-release
	./target/release/faultline migrate

run: setup build-release migrate
	@bash scripts/run-demo.sh ./target/release

test: setup build
	@bash scripts/test.sh

bench: setup build-release migrate
	./target/release/faultline-bench

eval: build-release
	@if [ -d "$(SHARED)/data/logchunks-dev" ]; then \
	  python3 $(SHARED)/eval/score_excerpts.py $(SHARED)/data/logchunks-dev './target/release/faultline excerpt {path}'; \
	else echo "eval: $(SHARED)/data/logchunks-dev is absent; nothing to score"; fi

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

clean-test-dbs:
	@psql "$(FAULTLINE_TEST_ADMIN_URL)" -tAc "select datname from pg_database where datname like 'faultline_t_%'" \
	  | while read -r db; do psql "$(FAULTLINE_TEST_ADMIN_URL)" -qc "drop database if exists $$db with (force)"; done
