-- One Faultline comment per pull request, edited in place (issue 32). The
-- row is both the comment's identity (GitHub's id once created) and its own
-- small outbox: a finished run of the PR's head commit, or a later passing
-- run, marks it dirty; a deliverer claims dirty rows (SKIP LOCKED, a
-- time-limited lock), renders the comment from the stored analyses and
-- writes it, with retries scheduled here.
CREATE TABLE pr_comments (
    repository       text NOT NULL,
    pr_number        bigint NOT NULL CHECK (pr_number > 0),
    head_branch      text,
    -- The commit whose failed jobs the comment shows, and when its newest
    -- event arrived (an older commit's late run does not take it back).
    head_sha         text NOT NULL,
    head_at          timestamptz NOT NULL,
    -- A later commit of the pull request whose run passed, and which job.
    passed_sha       text,
    passed_job       text,
    comment_id       bigint,
    -- SHA-256 of the body last written: another body there is a human edit.
    body_sha256      text,
    human_edits      integer NOT NULL DEFAULT 0,
    recreated        integer NOT NULL DEFAULT 0,
    thumbs_up        integer NOT NULL DEFAULT 0,
    thumbs_down      integer NOT NULL DEFAULT 0,
    writes           integer NOT NULL DEFAULT 0,
    -- Bumped by every change to show; a write that rendered an older
    -- version leaves the row dirty.
    version          bigint NOT NULL DEFAULT 0,
    dirty            boolean NOT NULL DEFAULT true,
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    locked_by        text,
    locked_until     timestamptz,
    last_error       text,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, pr_number)
);
CREATE INDEX pr_comments_due ON pr_comments (next_attempt_at) WHERE dirty;
CREATE INDEX pr_comments_branch ON pr_comments (repository, head_branch);
-- The comment reads every analysed job of one commit.
CREATE INDEX failure_events_commit ON failure_events (repository, commit_sha)
    WHERE commit_sha IS NOT NULL;
