-- A second deduplication key of an event, from what its source authenticated
-- (issue 14, finding 6). GitHub's X-GitHub-Delivery is not covered by the
-- webhook signature, so the same signed body replayed under new delivery ids
-- must still be one event: GitHub events carry `github:run|job:<repo>:<id>:<attempt>`.
ALTER TABLE failure_events ADD COLUMN content_key text UNIQUE;
