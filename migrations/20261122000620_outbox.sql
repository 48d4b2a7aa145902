-- Notifications of finished runs, written in the same transaction as the
-- run's final checkpoint and delivered later with retries. The row id is the
-- delivery id receivers deduplicate on. `delivered_to` records each target
-- that accepted it, so a retry never re-sends to a target that already has it.
-- Retry schedule lives here (attempts, next_attempt_at); a worker holds a row
-- only for locked_until while it delivers, so a crashed deliverer's rows return.
CREATE TABLE notification_outbox (
    id               uuid PRIMARY KEY,
    run_id           uuid NOT NULL UNIQUE REFERENCES analysis_runs (id) ON DELETE CASCADE,
    kind             text NOT NULL CHECK (kind IN ('completed', 'needs_review')),
    status           text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'delivered', 'skipped', 'dead')),
    delivered_to     text[] NOT NULL DEFAULT '{}',
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    locked_by        text,
    locked_until     timestamptz,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
);
CREATE INDEX notification_outbox_due ON notification_outbox (next_attempt_at) WHERE status = 'pending';
