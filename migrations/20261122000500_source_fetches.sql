-- Outbound APIs (GitHub, Jenkins) blocked by their own rate limit: every
-- worker waits until `blocked_until` instead of spending requests that would
-- be refused (GitHub: x-ratelimit-remaining 0 until x-ratelimit-reset).
CREATE TABLE api_rate_limits (
    api            text PRIMARY KEY,
    blocked_until  timestamptz NOT NULL,
    reason         text NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- A webhook event's log fetched by a worker (issue 5), at most once per
-- event: the row is written in the transaction that stores the log chunks,
-- so a resumed or retried run finds it and does not fetch again.
CREATE TABLE log_fetches (
    event_id    uuid PRIMARY KEY REFERENCES failure_events (id) ON DELETE CASCADE,
    run_id      uuid NOT NULL REFERENCES analysis_runs (id) ON DELETE CASCADE,
    source      text NOT NULL,
    bytes       bigint NOT NULL,
    truncated   boolean NOT NULL,
    -- Which URLs / jobs were read, for the trace.
    detail      jsonb NOT NULL,
    worker_id   text NOT NULL,
    fetched_at  timestamptz NOT NULL DEFAULT now()
);
