-- A Jenkins build of a GitHub repository (issue 32) joins the pull
-- request's comment beside the GitHub Actions jobs of the same commit. A
-- GitHub (or API-submitted) event's repository is `owner/name`; a Jenkins
-- event's is its SCM URL, which the server ties to `owner/name` (payload
-- `jenkins.github_repository`) when it is a repository of the configured
-- GitHub. The comment reads a commit's jobs by this column.
ALTER TABLE failure_events ADD COLUMN github_repository text
    GENERATED ALWAYS AS (CASE WHEN source = 'jenkins' THEN payload #>> '{jenkins,github_repository}'
                              ELSE repository END) STORED;
CREATE INDEX failure_events_github_commit ON failure_events (github_repository, commit_sha)
    WHERE github_repository IS NOT NULL AND commit_sha IS NOT NULL;
DROP INDEX failure_events_commit;
