-- The branch of a failure and of a recorded outcome (issue 32): "already
-- failing" means failing on the change's target branch (the pull request's
-- base, else the repository's default branch), so history is read per
-- branch. A failure's branch is what its source sent (GitHub's
-- `head_branch`, Jenkins's `scm.branch`), kept in the stored payload: the
-- column is derived from it, so rows stored before this migration have it
-- too.
ALTER TABLE failure_events ADD COLUMN branch text
    GENERATED ALWAYS AS (coalesce(payload #>> '{github,head_branch}', payload #>> '{jenkins,branch}')) STORED;
ALTER TABLE ci_outcomes ADD COLUMN branch text;
CREATE INDEX failure_events_job_branch ON failure_events (job_name, branch, received_at)
    WHERE job_name IS NOT NULL AND branch IS NOT NULL;
CREATE INDEX ci_outcomes_job_branch ON ci_outcomes (job_name, branch, recorded_at)
    WHERE job_name IS NOT NULL AND branch IS NOT NULL;
