-- Error library, text tier: the normalised failure text of a run (its key
-- lines after fingerprint normalisation), so failures whose fingerprints
-- differ can still be found by trigram similarity or full-text search.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

ALTER TABLE analysis_runs ADD COLUMN failure_text text;
CREATE INDEX analysis_runs_failure_text_trgm ON analysis_runs
    USING gin (failure_text gin_trgm_ops) WHERE failure_text IS NOT NULL;
CREATE INDEX analysis_runs_failure_text_fts ON analysis_runs
    USING gin (to_tsvector('english', failure_text)) WHERE failure_text IS NOT NULL;

-- Failure history: CI outcomes that are not analysed (passes above all), so
-- a test's or job's history can tell flaky from broken. Failures come from
-- `failure_events`; a row here never duplicates one of those.
CREATE TABLE ci_outcomes (
    id            bigserial PRIMARY KEY,
    dedup_key     text NOT NULL UNIQUE,
    source        text NOT NULL,
    job_name      text,
    test_name     text,
    repository    text,
    commit_sha    text,
    build_number  text,
    outcome       text NOT NULL CHECK (outcome IN ('success', 'failure')),
    recorded_at   timestamptz NOT NULL DEFAULT now(),
    CHECK (job_name IS NOT NULL OR test_name IS NOT NULL)
);
CREATE INDEX ci_outcomes_job ON ci_outcomes (job_name, recorded_at) WHERE job_name IS NOT NULL;
CREATE INDEX ci_outcomes_test ON ci_outcomes (test_name, recorded_at) WHERE test_name IS NOT NULL;
CREATE INDEX failure_events_job ON failure_events (job_name, received_at) WHERE job_name IS NOT NULL;
CREATE INDEX failure_events_test ON failure_events (test_name, received_at) WHERE test_name IS NOT NULL;
