-- Nightly bulk reprocessing. A batch is identified by its window and filters
-- (batch_key), and creates at most one run per event (the unique index), so
-- rerunning the same reprocess resumes it and never duplicates a run. The new
-- run links to the run it re-analyses; the original keeps its result.
CREATE TABLE reprocess_batches (
    id          uuid PRIMARY KEY,
    batch_key   text NOT NULL UNIQUE,
    since       timestamptz NOT NULL,
    until       timestamptz NOT NULL,
    category    text,
    status      text,
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE analysis_runs
    ADD COLUMN reprocess_batch uuid REFERENCES reprocess_batches (id),
    ADD COLUMN reprocess_of    uuid REFERENCES analysis_runs (id);

CREATE UNIQUE INDEX analysis_runs_reprocess_once ON analysis_runs (reprocess_batch, event_id)
    WHERE reprocess_batch IS NOT NULL;
CREATE INDEX analysis_runs_event_created ON analysis_runs (event_id, created_at DESC);
