-- The review console (issue 17): a browser signs in with an API token of
-- role reviewer or admin and gets a server-side session. Only the SHA-256
-- of the session's cookie value is stored. A session ends at expires_at,
-- at sign-out, or the moment its token is revoked or expires (every
-- request reads the token with the session).
CREATE TABLE console_sessions (
    id_sha256  text PRIMARY KEY,
    token_id   uuid NOT NULL REFERENCES api_tokens (id) ON DELETE CASCADE,
    -- The form token of this session (double-submitted in every POST).
    csrf       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- Review actions taken in the console are audited as such.
ALTER TABLE review_audit DROP CONSTRAINT review_audit_via_check;
ALTER TABLE review_audit ADD CONSTRAINT review_audit_via_check
    CHECK (via IN ('api', 'cli', 'console'));

-- Live queue: every statement that changes review items announces it on
-- `faultline_review` (empty payload: Postgres folds the notifications of
-- one transaction into one). The console's pages listen and refresh.
CREATE FUNCTION faultline_review_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('faultline_review', '');
    RETURN NULL;
END
$$;
CREATE TRIGGER review_items_changed AFTER INSERT OR UPDATE ON review_items
    FOR EACH STATEMENT EXECUTE FUNCTION faultline_review_changed();

-- Live traces: while a client streams a run's events, the run is watched
-- and its checkpoints notify `faultline_run_steps` (storage::runs::watch).
-- Unwatched runs (nearly all) never notify: a NOTIFY serialises commits.
ALTER TABLE analysis_runs ADD COLUMN watched_until timestamptz;
