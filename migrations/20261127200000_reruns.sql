-- Re-runs of transient failures (issue 32 item 5): the journal of each
-- re-run request Faultline made to a CI system. One row per failure it
-- re-ran, keyed so that a failure is never re-run twice: a GitHub workflow
-- run (its failed jobs re-run as a new attempt of the same run id), a
-- Jenkins job at one commit. The row is written before the request goes out
-- ('requested') and answered after ('done' or 'refused'); a deliverer that
-- finds 'requested' after a crash asks the CI system whether the re-run
-- happened before asking for it again.
CREATE TABLE reruns (
    key           text PRIMARY KEY,
    -- The analysis whose verdict asked for it.
    run_id        uuid NOT NULL,
    source        text NOT NULL,
    repository    text,
    commit_sha    text,
    origin        text NOT NULL,
    confidence    real NOT NULL,
    -- Method and URL of the request (no credentials).
    request       text NOT NULL,
    state         text NOT NULL DEFAULT 'requested'
                  CHECK (state IN ('requested', 'done', 'refused')),
    http_status   integer,
    detail        text,
    tries         integer NOT NULL DEFAULT 0,
    requested_at  timestamptz NOT NULL DEFAULT now(),
    answered_at   timestamptz
);
CREATE INDEX reruns_run ON reruns (run_id);
