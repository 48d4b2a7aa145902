-- One sliding-window limiter for every limit shared by the workers: the
-- LLM's requests per minute (key 'llm') and per-tool limits ('tool:<name>',
-- TOOL_RATE_LIMITS). Rows only matter within their window.
ALTER TABLE llm_requests RENAME TO rate_limit_requests;
ALTER TABLE rate_limit_requests ADD COLUMN key text NOT NULL DEFAULT 'llm';
ALTER TABLE rate_limit_requests ALTER COLUMN key DROP DEFAULT;
DROP INDEX llm_requests_at;
CREATE INDEX rate_limit_requests_key_at ON rate_limit_requests (key, at);
