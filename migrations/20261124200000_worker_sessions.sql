-- Worker liveness tied to a database session (issue 16). Each worker process
-- holds a session-level advisory lock (pg_try_advisory_lock(space, lock_key))
-- on its lease-renewal connection for as long as it lives; Postgres releases
-- it the moment the process dies. The reconciler marks a session whose lock
-- is gone (absent_since) and, after a short grace, takes over that worker's
-- runs without waiting for their timed leases, which stay the fence.
CREATE SEQUENCE worker_session_keys AS integer MINVALUE 1 CYCLE;

CREATE TABLE worker_sessions (
    owner        text PRIMARY KEY,
    lock_key     integer NOT NULL DEFAULT nextval('worker_session_keys'),
    started_at   timestamptz NOT NULL DEFAULT now(),
    absent_since timestamptz
);
