-- One LLM rate limit shared by every worker process: concurrent-call slots
-- (a crashed holder's slot expires) and a sliding one-minute request window.
CREATE TABLE llm_slots (
    slot        integer PRIMARY KEY,
    holder      text,
    expires_at  timestamptz
);

CREATE TABLE llm_requests (
    id  bigserial PRIMARY KEY,
    at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_requests_at ON llm_requests (at);
