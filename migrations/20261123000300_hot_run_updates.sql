-- Let a run's frequent updates be HOT (heap-only: no new index entries).
--
-- A live run's kept checkpoint (status stays 'running', the lease expiry
-- moves) and every lease renewal changed an indexed column only because of
-- analysis_runs_expired_leases. The reconciler finds expired leases among
-- the running runs — at most one per worker slot in the whole fleet — which
-- analysis_runs_status (status, created_at) already narrows to; so the
-- index goes, and the table leaves room in each page for the new row
-- versions. tool_invocations rows are closed (finished_at, ok) right after
-- they are written: the same room makes that update HOT too.
DROP INDEX analysis_runs_expired_leases;
ALTER TABLE analysis_runs SET (fillfactor = 80);
ALTER TABLE tool_invocations SET (fillfactor = 85);

