-- Was an analysis helpful? (issue 32 item 6). One row per analysis, source
-- and person: a 👍 / 👎 on the pull-request comment that showed the
-- analysis (GitHub's reactions API, read when the comment is next written
-- and by a bounded sweep of recent comments; a reaction taken back is
-- removed), or "Helpful" / "Not helpful" on its console page.
CREATE TABLE analysis_feedback (
    run_id      uuid NOT NULL REFERENCES analysis_runs (id) ON DELETE CASCADE,
    source      text NOT NULL CHECK (source IN ('reaction', 'console')),
    -- The GitHub login or the console user.
    actor       text NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
    helpful     boolean NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, source, actor)
);
-- When the comment's reactions were last read: the sweep reads the
-- longest-unread recent comments first.
ALTER TABLE pr_comments ADD COLUMN reactions_read_at timestamptz;
