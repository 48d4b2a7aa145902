-- Compress the journal's large values with lz4 instead of pglz.
--
-- A step's observation (a log excerpt is several KiB), its model metadata
-- and a run's result are TOASTed and compressed as they are written, on the
-- checkpoint's path. At 2 s model latency and a thousand runs in flight on
-- a 2-core machine, pglz_compress was 5 % of Postgres's CPU (perf,
-- `make bench-latency`); lz4 compresses several times faster for about the
-- same size. Only values written from now on change; old ones stay
-- readable. A server built without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE run_steps
        ALTER COLUMN observation SET COMPRESSION lz4,
        ALTER COLUMN llm SET COMPRESSION lz4,
        ALTER COLUMN action_input SET COMPRESSION lz4,
        ALTER COLUMN thought SET COMPRESSION lz4;
    ALTER TABLE analysis_runs ALTER COLUMN result SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available on this server: the journal keeps pglz';
END
$$;
