-- The W3C traceparent of the span that ingested the run's event. Every step
-- span of the run uses it as its parent, so one analysis is one trace even
-- though its steps run on different workers (and after retries or a lease
-- takeover). NULL when tracing was off at ingest.
ALTER TABLE analysis_runs ADD COLUMN traceparent text;
