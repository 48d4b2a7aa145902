-- Faultline core schema: events, runs (with lease + retry schedule), the
-- checkpoint journal, attempts history, tool invocation audit, review queue
-- and the knowledge base. Up-only; the step queue lives in the `apalis` schema.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- One row per accepted failure event; dedup_key makes redelivery idempotent.
CREATE TABLE failure_events (
    id            uuid PRIMARY KEY,
    dedup_key     text NOT NULL UNIQUE,
    source        text NOT NULL,
    job_name      text,
    build_number  text,
    test_name     text,
    repository    text,
    commit_sha    text,
    log_name      text,
    log_bytes     bigint NOT NULL DEFAULT 0,
    log_sha256    text,
    payload       jsonb NOT NULL DEFAULT '{}'::jsonb,
    received_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX failure_events_received_at ON failure_events (received_at);

-- The raw log, in gzip-compressed chunks, so any size streams in bounded memory
-- and non-UTF-8 bytes survive untouched.
CREATE TABLE event_log_chunks (
    event_id  uuid NOT NULL REFERENCES failure_events (id) ON DELETE CASCADE,
    seq       integer NOT NULL,
    data_gz   bytea NOT NULL,
    PRIMARY KEY (event_id, seq)
);

-- One analysis of one event. Lifecycle:
--   queued -> running -> (queued | retry_wait)* -> completed | needs_review | failed
-- `iteration` counts committed iterations; `attempts` counts failed attempts of
-- the current iteration; the lease (owner, expiry, epoch) fences commits.
CREATE TABLE analysis_runs (
    id                uuid PRIMARY KEY,
    event_id          uuid NOT NULL REFERENCES failure_events (id),
    status            text NOT NULL DEFAULT 'queued'
                      CHECK (status IN ('queued', 'running', 'retry_wait', 'completed', 'needs_review', 'failed')),
    priority          integer NOT NULL DEFAULT 10,
    reasoner          text NOT NULL DEFAULT 'heuristic',
    iteration         integer NOT NULL DEFAULT 0,
    max_iterations    integer NOT NULL CHECK (max_iterations > 0),
    attempts          integer NOT NULL DEFAULT 0,
    max_attempts      integer NOT NULL CHECK (max_attempts > 0),
    next_attempt_at   timestamptz NOT NULL DEFAULT now(),
    last_error        text,
    lease_owner       text,
    lease_expires_at  timestamptz,
    lease_epoch       bigint NOT NULL DEFAULT 0,
    fingerprint       text,
    category          text,
    confidence        real,
    result            jsonb,
    failure_reason    text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz
);
CREATE INDEX analysis_runs_event ON analysis_runs (event_id);
CREATE INDEX analysis_runs_expired_leases ON analysis_runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX analysis_runs_fingerprint ON analysis_runs (fingerprint) WHERE fingerprint IS NOT NULL;
CREATE INDEX analysis_runs_status ON analysis_runs (status, created_at);

-- The checkpoint journal: exactly one row per committed (run, iteration).
CREATE TABLE run_steps (
    run_id        uuid NOT NULL REFERENCES analysis_runs (id) ON DELETE CASCADE,
    iteration     integer NOT NULL CHECK (iteration >= 1),
    thought       text NOT NULL,
    action        text NOT NULL,
    action_input  jsonb NOT NULL,
    observation   jsonb NOT NULL,
    is_final      boolean NOT NULL DEFAULT false,
    attempt       integer NOT NULL,
    lease_epoch   bigint NOT NULL,
    worker_id     text NOT NULL,
    tool_ms       integer NOT NULL,
    step_ms       integer NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, iteration)
);

-- Every failed attempt of a step, with the backoff chosen for the next one.
CREATE TABLE run_attempts (
    run_id           uuid NOT NULL REFERENCES analysis_runs (id) ON DELETE CASCADE,
    iteration        integer NOT NULL,
    attempt          integer NOT NULL,
    error            text NOT NULL,
    transient        boolean NOT NULL,
    worker_id        text,
    failed_at        timestamptz NOT NULL DEFAULT now(),
    next_attempt_at  timestamptz,
    PRIMARY KEY (run_id, iteration, attempt)
);

-- Audit of tool executions, written before a tool runs (autocommit), so work
-- repeated after a crash is visible and countable.
CREATE TABLE tool_invocations (
    id          bigserial PRIMARY KEY,
    run_id      uuid NOT NULL REFERENCES analysis_runs (id) ON DELETE CASCADE,
    iteration   integer NOT NULL,
    tool        text NOT NULL,
    worker_id   text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    ok          boolean
);
CREATE INDEX tool_invocations_run ON tool_invocations (run_id, iteration);

-- Results the agent is not sure of (and dead-lettered runs) for the ops team.
CREATE TABLE review_items (
    id                uuid PRIMARY KEY,
    run_id            uuid NOT NULL UNIQUE REFERENCES analysis_runs (id) ON DELETE CASCADE,
    reason            text NOT NULL,
    category          text,
    confidence        real,
    status            text NOT NULL DEFAULT 'open'
                      CHECK (status IN ('open', 'claimed', 'resolved', 'dismissed')),
    claimed_by        text,
    claim_expires_at  timestamptz,
    resolution        jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX review_items_open ON review_items (created_at) WHERE status IN ('open', 'claimed');

-- Documented CI failure patterns, searched with Postgres full-text search.
CREATE TABLE knowledge_base (
    slug        text PRIMARY KEY,
    title       text NOT NULL,
    category    text NOT NULL,
    symptoms    text NOT NULL,
    root_cause  text NOT NULL,
    fix         text NOT NULL,
    keywords    text[] NOT NULL DEFAULT '{}',
    signatures  text[] NOT NULL DEFAULT '{}',
    source      text NOT NULL DEFAULT 'builtin',
    search      tsvector NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX knowledge_base_search ON knowledge_base USING gin (search);
