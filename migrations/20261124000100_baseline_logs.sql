-- The last green log of a failure's job (issue 13): the excerpt leaves out
-- lines that also printed in it. Fetched by the worker once per event, like
-- `log_fetches`: the row is written in the transaction that stores the
-- chunks, fenced by the run's lease, so a resumed run finds it and does not
-- fetch again. A job without a green build (or whose green log could not be
-- had) gets a row too, with `bytes` NULL and the reason, so the run falls
-- back to the plain excerpt and says why.
CREATE TABLE baseline_fetches (
    event_id    uuid PRIMARY KEY REFERENCES failure_events (id) ON DELETE CASCADE,
    run_id      uuid NOT NULL REFERENCES analysis_runs (id) ON DELETE CASCADE,
    -- `github` or `jenkins`.
    source      text NOT NULL,
    -- Bytes stored; NULL when there is no baseline.
    bytes       bigint,
    truncated   boolean NOT NULL DEFAULT false,
    -- Why there is no baseline (NULL when there is one).
    reason      text,
    -- Which run / build / jobs were read, for the trace.
    detail      jsonb NOT NULL,
    worker_id   text NOT NULL,
    fetched_at  timestamptz NOT NULL DEFAULT now(),
    CHECK ((bytes IS NULL) <> (reason IS NULL))
);

-- The green log itself, in the same gzip chunks as `event_log_chunks`.
CREATE TABLE baseline_log_chunks (
    event_id  uuid NOT NULL REFERENCES failure_events (id) ON DELETE CASCADE,
    seq       integer NOT NULL,
    data_gz   bytea NOT NULL,
    PRIMARY KEY (event_id, seq)
);
