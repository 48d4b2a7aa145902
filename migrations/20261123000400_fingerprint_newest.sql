-- The error library's first tier asks for the newest finished analyses of a
-- fingerprint. A recurring failure (a flaky test, a broken mirror) collects
-- thousands of runs under one fingerprint; with the index on fingerprint
-- alone every look-up read and sorted all of them. Ordered by finished_at,
-- the look-up reads the newest few and stops.
CREATE INDEX analysis_runs_fingerprint_newest
    ON analysis_runs (fingerprint, finished_at DESC NULLS LAST)
    WHERE fingerprint IS NOT NULL;
DROP INDEX analysis_runs_fingerprint;
