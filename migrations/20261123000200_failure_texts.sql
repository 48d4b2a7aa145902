-- The error library's text tier moves out of analysis_runs. A run's row is
-- updated twice per checkpointed step (claim and commit) and those updates
-- change `status`, so none of them is HOT: each one inserted the run's
-- failure text into both GIN indexes again (dozens of trigrams per update).
-- The text is written once per run, so it gets a table of its own.
CREATE TABLE run_failure_texts (
    run_id       uuid PRIMARY KEY REFERENCES analysis_runs (id) ON DELETE CASCADE,
    failure_text text NOT NULL
);
INSERT INTO run_failure_texts (run_id, failure_text)
    SELECT id, failure_text FROM analysis_runs WHERE failure_text IS NOT NULL;
CREATE INDEX run_failure_texts_trgm ON run_failure_texts USING gin (failure_text gin_trgm_ops);
CREATE INDEX run_failure_texts_fts ON run_failure_texts USING gin (to_tsvector('english', failure_text));
DROP INDEX analysis_runs_failure_text_trgm;
DROP INDEX analysis_runs_failure_text_fts;
ALTER TABLE analysis_runs DROP COLUMN failure_text;

-- (event_id) is the prefix of analysis_runs_event_created: one index less
-- to maintain on every run update.
DROP INDEX analysis_runs_event;
