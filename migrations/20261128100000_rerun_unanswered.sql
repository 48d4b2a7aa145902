-- A re-run whose request got no answer before the notifier gave up on the
-- delivery (NOTIFY_MAX_ATTEMPTS of 429 / 5xx, or a workflow run that never
-- finished): `unanswered`, no longer `requested` for ever.
ALTER TABLE reruns DROP CONSTRAINT reruns_state_check;
ALTER TABLE reruns ADD CONSTRAINT reruns_state_check
    CHECK (state IN ('requested', 'done', 'refused', 'unanswered'));
