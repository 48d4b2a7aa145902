-- Review-queue operations: who claimed an item and when, who closed it, an
-- audit trail of every action, and the error library's human tier (answers a
-- reviewer confirmed or corrected, keyed by the failure's fingerprint).
--
-- A claim expires at claim_expires_at: queries treat an expired claim as
-- open, so an abandoned item returns to the queue without a background job.
ALTER TABLE review_items
    ADD COLUMN claimed_at  timestamptz,
    ADD COLUMN closed_by   text,
    ADD COLUMN closed_at   timestamptz;

CREATE INDEX review_items_claimable ON review_items (created_at)
    WHERE status IN ('open', 'claimed');

-- One row per review action; `before` and `after` are the item's state.
CREATE TABLE review_audit (
    id        bigserial PRIMARY KEY,
    item_id   uuid NOT NULL REFERENCES review_items (id) ON DELETE CASCADE,
    actor     text NOT NULL,
    via       text NOT NULL CHECK (via IN ('api', 'cli')),
    action    text NOT NULL CHECK (action IN ('claim', 'resolve', 'dismiss')),
    before    jsonb NOT NULL,
    after     jsonb NOT NULL,
    comment   text,
    at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX review_audit_item ON review_audit (item_id, id);

-- Human-confirmed answers: the next failure with the same fingerprint is
-- answered from here first (similar_failures, source "review_resolution").
CREATE TABLE review_resolutions (
    id           uuid PRIMARY KEY,
    fingerprint  text NOT NULL,
    item_id      uuid NOT NULL REFERENCES review_items (id) ON DELETE CASCADE,
    run_id       uuid NOT NULL REFERENCES analysis_runs (id) ON DELETE CASCADE,
    accepted     boolean NOT NULL,
    category     text NOT NULL,
    root_cause   text NOT NULL,
    fix          text NOT NULL,
    comment      text,
    resolved_by  text NOT NULL,
    resolved_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX review_resolutions_fingerprint ON review_resolutions (fingerprint, resolved_at DESC);
