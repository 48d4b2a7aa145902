# Faultline — every target does its own set-up (services, database, build).
#   make run     install/start Postgres + Redis if needed, build, migrate, analyse the bundled samples, serve the review console
#   make test    same set-up (plus Chromium for the console's browser tests and, in target/pytools, the pinned Python tools the tests run: scripts/pytools.txt), then every test (unit + black-box against real Postgres)
#   make bench   engine overhead: checkpointed steps/s and step-commit latency, both brokers, 1-8 workers, vs pgbench; webhook ingest under wrk; the review console with 10,000 open items
#   make bench-latency  the engine at 2 s model latency: 1x64, 1x256, 1x1000, 4x250 slots; efficiency, calls paid twice, connections, RSS, step overhead
#   make chaos   4 workers, 300 runs, SIGKILL every 2 s, one Postgres restart, one Redis FLUSHALL; checks I1-I4
#   make eval    `faultline eval` (the real pipeline) on ../shared/data/logchunks-dev (else the bundled samples): excerpt, category, review share, calibration, tokens, wall time, by repository half
#   make train   the diagnosis model (analysis/model/diagnosis.json) from $(SHARED)/data, with its repository-grouped out-of-fold figures
#   make lint    rustfmt + clippy (warnings are errors) + every YAML file under deploy/ parses and agrees with the code
#   make image   the container image faultline:local (needs Docker; not part of CI)
#   make fuzz    AFL++ fuzz targets (logs, LLM replies, webhook payloads), FUZZ_SECONDS each (default 60); not part of test or CI

SHELL := /bin/bash
export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/faultline
export REDIS_URL ?= redis://127.0.0.1:6379
# apalis-postgres checks its SQL at compile time: against DATABASE_URL when
# that is set, which on a fresh machine is an empty database. Its crate ships
# the checked queries (.sqlx), so build offline and never depend on the
# state of the database being built against.
export SQLX_OFFLINE ?= true
# Black-box tests create one database per test on this server.
export FAULTLINE_TEST_ADMIN_URL ?= $(shell echo "$(DATABASE_URL)" | sed -E 's#/[^/?]+(\?.*)?$$#/postgres\1#')
CARGO ?= cargo
SHARED ?= ../shared

IMAGE ?= faultline:local

.PHONY: setup build build-release migrate run test bench bench-latency chaos eval train lint image fuzz clean-test-dbs

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
	@NEED_BROWSER=1 bash scripts/setup-services.sh
	@bash scripts/pytools.sh
	@bash scripts/test.sh

# Loopback: TLS to the local Postgres only costs CPU (~10 % of steps/s
# measured); set PGSSLMODE to measure with it.
bench: setup build-release migrate
	PGSSLMODE=$${PGSSLMODE:-disable} ./target/release/faultline-bench
	@bash scripts/bench-ingest.sh ./target/release
	@bash scripts/bench-console.sh ./target/release

bench-latency: setup build-release migrate
	PGSSLMODE=$${PGSSLMODE:-disable} BENCH_MODE=latency ./target/release/faultline-bench

# Restarts the local Postgres cluster once per broker and FLUSHALLs Redis:
# run it on a development machine or in CI, not next to other work.
chaos: setup build-release
	QUEUE_BACKEND=postgres ./target/release/faultline-chaos
	QUEUE_BACKEND=redis ./target/release/faultline-chaos

# `faultline eval` (scratch database, workers, every labelled log ingested
# as `faultline analyze` does) on $(SHARED)/data/logchunks-dev, or on the
# bundled samples when that folder is absent; scripts/eval.py adds excerpt
# P/R/F1 and every figure (category accuracy, auto-completed share and
# precision, reliability) for both repository halves. EVAL_ARGS="--reasoner
# openai:MODEL" evaluates a model instead of the heuristic.
#
# Then the blind check ($(SHARED)/eval/score_blind.sh: 25 repositories
# nobody here has read, aggregate figures only) and the learned model's
# repository-grouped out-of-fold figures (faultline-train --check, which
# also fails when the shipped model is not what the data trains).
eval: setup build-release
	@python3 scripts/eval.py --data $(SHARED)/data/logchunks-dev --bin ./target/release $(EVAL_ARGS)
	@if [ -f $(SHARED)/eval/score_blind.sh ]; then \
		echo "== the blind check (the honest figures): $(SHARED)/eval/score_blind.sh"; \
		bash $(SHARED)/eval/score_blind.sh ./target/release; \
	else echo "== no blind check: $(SHARED)/eval/score_blind.sh is absent"; fi
	@echo "== the readable unseen set (data/unseen-readable: 58 logs of 54 other projects, self-labelled; read while writing rules since session 27)"
	@d=$$(mktemp -d) && python3 data/unseen-readable/to_logchunks.py $$d && \
		./target/release/faultline eval $$d 2>&1 | grep -v -E '^\s*$$' | grep -v -E 'logs?/|\.log' ; \
		if [ -f $(SHARED)/eval/score_excerpts.py ]; then \
			printf 'excerpt: '; python3 $(SHARED)/eval/score_excerpts.py $$d './target/release/faultline excerpt {path}' | tail -1; \
		fi; rm -rf $$d
	@if [ -d $(SHARED)/data/bugswarm-train ]; then \
		echo "== the diagnosis model, out of fold (grouped by repository)"; \
		./target/release/faultline-train $(SHARED)/data --check; \
		echo "== the passing log as a baseline, on the real fail/pass pairs"; \
		python3 scripts/eval_pairs.py --data $(SHARED)/data/bugswarm-train --bin ./target/release; \
	else echo "== no training data: $(SHARED)/data/bugswarm-train is absent"; fi

# The diagnosis model from the labelled sets beside the project
# (deterministic: the same data writes the same file, byte for byte).
train: build-release
	./target/release/faultline-train $(SHARED)/data --out analysis/model/diagnosis.json

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	$(CARGO) test --locked -p faultline-tests --test deploy

image:
	docker build -f deploy/Dockerfile -t $(IMAGE) .

# Coverage-guided fuzzing with AFL++ through cargo-afl (fuzz/, its own crate
# and lock file; scripts/fuzz.sh): each target FUZZ_SECONDS, one after the
# other (FUZZ_JOBS=2 runs two at once), from fuzz/seeds. Prints seconds,
# execs, crashes per target; exits 1 on a crash (inputs in fuzz/artifacts/).
# Long by design: not part of test, lint or CI.
FUZZ_SECONDS ?= 60
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash scripts/fuzz.sh run $(FUZZ_TARGETS)

clean-test-dbs:
	@psql "$(FAULTLINE_TEST_ADMIN_URL)" -tAc "select datname from pg_database where datname like 'faultline_t_%'" \
	  | while read -r db; do psql "$(FAULTLINE_TEST_ADMIN_URL)" -qc "drop database if exists $$db with (force)"; done
