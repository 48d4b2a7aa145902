-- LLM reasoning is journaled per iteration: which reasoner decided, the
-- provider's tool-call id (so a resumed conversation carries matching ids),
-- the raw request/response exchange, and token usage and cost.
ALTER TABLE run_steps
    ADD COLUMN reasoner     text NOT NULL DEFAULT 'heuristic',
    ADD COLUMN call_id      text,
    ADD COLUMN llm          jsonb,
    ADD COLUMN tokens_in    integer NOT NULL DEFAULT 0,
    ADD COLUMN tokens_out   integer NOT NULL DEFAULT 0,
    ADD COLUMN cost_usd     double precision NOT NULL DEFAULT 0;

ALTER TABLE analysis_runs
    ADD COLUMN tokens_in    bigint NOT NULL DEFAULT 0,
    ADD COLUMN tokens_out   bigint NOT NULL DEFAULT 0,
    ADD COLUMN cost_usd     double precision NOT NULL DEFAULT 0;
