//! Delivering the notification outbox: a small loop next to the step
//! consumer. Rows are written by the final checkpoint's transaction
//! (`storage::outbox`); this loop claims due rows (`SKIP LOCKED`, a
//! time-limited lock), sends each to every configured target that does not
//! have it yet, and records the attempt: delivered, retry at a backoff
//! computed in Postgres, or dead after `NOTIFY_MAX_ATTEMPTS`.

pub mod config;
mod deliver;
pub mod pr_comment;
pub mod rerun;

use std::{sync::Arc, time::Duration};

use faultline_shared::storage::{
    events, feedback,
    outbox::{self, AfterAttempt, Attempt, Claimed, RetryPolicy},
    pr_comments::{self, PrComment},
    reruns,
    runs::{self, FINISHED_CHANNEL},
};
use serde_json::Value;
use sqlx::{PgPool, postgres::PgListener};
use tokio::sync::watch;
use tracing::{info, warn};

pub use self::config::NotifyConfig;
pub use self::deliver::{GITHUB, PR_COMMENT, RERUN, SLACK, WEBHOOK, signature};

/// Rows claimed per pass.
const BATCH: i64 = 16;

struct Notifier {
    pool: PgPool,
    config: NotifyConfig,
    http: reqwest::Client,
    owner: String,
    /// When the reactions sweep last ran ([`Notifier::sweep_reactions`]).
    last_sweep: std::sync::Mutex<Option<tokio::time::Instant>>,
}

/// The reactions sweep reads comments of commits of this many days, this
/// many per sweep (how often: `NOTIFY_REACTION_SWEEP`).
const SWEEP_DAYS: i32 = 14;
const SWEEP_LIMIT: i64 = 20;

/// Runs until `shutdown` flips. Woken by run completions (NOTIFY), with a
/// poll for due retries.
pub async fn run(
    pool: PgPool,
    config: NotifyConfig,
    owner: String,
    mut shutdown: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let http = reqwest::Client::builder().timeout(config.timeout).build()?;
    let notifier = Arc::new(Notifier {
        pool: pool.clone(),
        config,
        http,
        owner,
        last_sweep: std::sync::Mutex::new(None),
    });
    let mut listener = match PgListener::connect_with(&pool).await {
        Ok(mut l) => match l.listen(FINISHED_CHANNEL).await {
            Ok(()) => Some(l),
            Err(e) => {
                warn!(error = %e, "notifier cannot LISTEN; polling only");
                None
            }
        },
        Err(e) => {
            warn!(error = %e, "notifier cannot LISTEN; polling only");
            None
        }
    };
    info!(kinds = ?notifier.config.kinds(), "notification delivery started");
    loop {
        if *shutdown.borrow() {
            return Ok(());
        }
        let claimed = match notifier.claim().await {
            Ok(c) => c,
            Err(e) => {
                warn!(error = %e, "claiming notifications failed");
                Vec::new()
            }
        };
        let full = claimed.len() as i64 == BATCH;
        let work = claimed.into_iter().map(|row| {
            let n = notifier.clone();
            async move { n.deliver(row).await }
        });
        futures::future::join_all(work).await;
        let comments_full = notifier.comment_pass().await;
        if full || comments_full {
            continue;
        }
        let wake = async {
            match listener.as_mut() {
                Some(l) => {
                    if l.recv().await.is_err() {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = wake => {}
            _ = tokio::time::sleep(notifier.config.poll_interval) => {}
            _ = shutdown.wait_for(|s| *s) => return Ok(()),
        }
    }
}

impl Notifier {
    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            base: self.config.retry_base,
            max: self.config.retry_max,
            max_attempts: self.config.max_attempts,
        }
    }

    /// Writes the due pull-request comments; whether it claimed a full batch.
    async fn comment_pass(&self) -> bool {
        if self.config.pr_comments.is_empty() || self.config.github.is_none() {
            return false;
        }
        let lock = self.config.timeout * (pr_comment::COMMENT_PAGES + 4) + Duration::from_secs(5);
        let claimed = match pr_comments::claim_due(&self.pool, &self.owner, lock, BATCH).await {
            Ok(c) => c,
            Err(e) => {
                warn!(error = %e, "claiming pull-request comments failed");
                return false;
            }
        };
        let full = claimed.len() as i64 == BATCH;
        futures::future::join_all(claimed.into_iter().map(|c| self.write_comment(c))).await;
        self.sweep_reactions().await;
        full
    }

    /// Every `NOTIFY_REACTION_SWEEP`: reads the reactions of up to
    /// [`SWEEP_LIMIT`] recent comments not read for as long (GitHub sends no
    /// webhook for reactions), and records them as feedback on the
    /// analyses each comment shows. Read only: nothing is written to
    /// GitHub, and a comment someone deleted stays deleted.
    async fn sweep_reactions(&self) {
        {
            let mut last = self.last_sweep.lock().unwrap_or_else(|p| p.into_inner());
            let now = tokio::time::Instant::now();
            if last.is_some_and(|t| now.duration_since(t) < self.config.reaction_sweep) {
                return;
            }
            *last = Some(now);
        }
        let Some((api, token)) = &self.config.github else {
            return;
        };
        let stale = match pr_comments::stale_reactions(
            &self.pool,
            self.config.reaction_sweep,
            SWEEP_DAYS,
            SWEEP_LIMIT,
        )
        .await
        {
            Ok(s) => s,
            Err(e) => {
                warn!(error = %e, "reading comments for the reactions sweep failed");
                return;
            }
        };
        let gh = deliver::GitHub {
            http: &self.http,
            token,
        };
        for comment in stale {
            let pr = format!("{}#{}", comment.repository, comment.pr_number);
            match pr_comment::read_reactions(&gh, api, &comment).await {
                Ok(Some((thumbs, votes))) => {
                    if let Err(e) = pr_comments::set_thumbs(
                        &self.pool,
                        &comment.repository,
                        comment.pr_number,
                        thumbs,
                    )
                    .await
                    {
                        warn!(%pr, error = %e, "recording reactions failed");
                    }
                    if let Some(votes) = votes {
                        let runs = pr_comments::jobs_of_commit(
                            &self.pool,
                            &comment.repository,
                            &comment.head_sha,
                        )
                        .await;
                        match runs {
                            Ok(jobs) => self.record_votes(&pr, &jobs, &votes).await,
                            Err(e) => warn!(%pr, error = %e, "reading a commit's analyses failed"),
                        }
                    }
                }
                Ok(None) => info!(%pr, "the comment is gone; its reactions stay as last read"),
                Err(e) => info!(%pr, error = %e, "reactions not read; next sweep"),
            }
        }
    }

    /// The comment's reactions become the reaction votes of every analysis
    /// it shows (`jobs`: the head commit's).
    async fn record_votes(
        &self,
        pr: &str,
        jobs: &[pr_comments::CommitJob],
        votes: &[(String, bool)],
    ) {
        let runs: Vec<uuid::Uuid> = jobs.iter().map(|j| j.run.id).collect();
        match feedback::replace_reactions(&self.pool, &runs, votes).await {
            Ok(()) => info!(%pr, votes = votes.len(), "reactions recorded as feedback"),
            Err(e) => warn!(%pr, error = %e, "recording reactions as feedback failed"),
        }
    }

    /// Renders and writes one pull request's comment; records how it went.
    async fn write_comment(&self, comment: PrComment) {
        let Some((api, token)) = &self.config.github else {
            return;
        };
        let jobs =
            match pr_comments::jobs_of_commit(&self.pool, &comment.repository, &comment.head_sha)
                .await
            {
                Ok(jobs) => jobs,
                Err(e) => {
                    warn!(error = %e, "reading a commit's analyses failed");
                    return;
                }
            };
        let gh = deliver::GitHub {
            http: &self.http,
            token,
        };
        let pr = format!("{}#{}", comment.repository, comment.pr_number);
        // Who owns the failing files: the repository's CODEOWNERS at the
        // head commit; without one (or unreadable) the comment names none.
        let owners =
            pr_comment::code_owners(&gh, api, &comment.repository, &comment.head_sha).await;
        let owners_of = |path: &str| Some(owners.as_ref()?.owners_of(path)?.described());
        let body = pr_comment::render(
            &comment,
            &jobs,
            &pr_comment::web_base(api),
            self.config.console_url.as_deref(),
            Some(&owners_of),
        );
        let outcome = pr_comment::write(&gh, api, &comment, &body).await;
        let recorded = match &outcome {
            Ok(w) => {
                if w.human_edit {
                    warn!(%pr, "the pull-request comment was edited by someone else; rewritten");
                }
                if w.recreated {
                    warn!(%pr, "the pull-request comment was deleted; posted again");
                }
                faultline_shared::metrics::webhook_delivery("delivered");
                info!(%pr, comment = w.comment_id, jobs = jobs.len(), "pull-request comment written");
                if let Some(votes) = &w.votes {
                    self.record_votes(&pr, &jobs, votes).await;
                }
                pr_comments::written(&self.pool, &comment, &self.owner, w)
                    .await
                    .map(|_| ())
            }
            Err(e) => {
                faultline_shared::metrics::webhook_delivery("retrying");
                warn!(%pr, error = %e, attempt = comment.attempts + 1, "pull-request comment failed");
                pr_comments::failed(&self.pool, &comment, &self.owner, e, self.policy()).await
            }
        };
        if let Err(e) = recorded {
            warn!(%pr, error = %e, "recording a pull-request comment failed");
        }
    }

    /// Target [`PR_COMMENT`] of one run: the comment of every open pull
    /// request of its commit is marked for writing.
    async fn mark_pull_requests(
        &self,
        run: &runs::RunRow,
        event: &events::EventRow,
        payload: &Value,
        repository: &str,
        sha: &str,
    ) -> Result<(), String> {
        let Some((api, token)) = &self.config.github else {
            return Ok(());
        };
        // What the webhook handler stored of the delivery (`GithubTarget`),
        // or of a Jenkins build (`CHANGE_ID`, its branch).
        let (named, branch): (Vec<i64>, _) = if event.source == "jenkins" {
            let payload = &payload["jenkins"];
            (
                payload["pull_request"].as_i64().into_iter().collect(),
                payload["branch"].as_str(),
            )
        } else {
            let payload = &payload["github"];
            (
                payload["pull_requests"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_i64)
                    .collect(),
                payload["head_branch"].as_str(),
            )
        };
        let gh = deliver::GitHub {
            http: &self.http,
            token,
        };
        let pulls = pr_comment::pulls_of(&gh, api, repository, sha, &named).await?;
        if pulls.is_empty() {
            info!(run_id = %run.id, %repository, %sha, "no open pull request of the commit: no comment");
        }
        for n in pulls {
            pr_comments::mark_failed(&self.pool, repository, n, branch, sha, event.received_at)
                .await
                .map_err(|e| format!("database: {e}"))?;
        }
        Ok(())
    }

    /// Target [`RERUN`]: the failed jobs run again once when the verdict
    /// says the failure is transient ([`rerun`]); a comment already written
    /// for the commit says so.
    async fn rerun(
        &self,
        run: &runs::RunRow,
        event: &events::EventRow,
        payload: &Value,
    ) -> Result<(), String> {
        let clients = rerun::Clients {
            pool: &self.pool,
            http: &self.http,
            github: self.config.github.as_ref().map(|(api, token)| {
                (
                    api.as_str(),
                    deliver::GitHub {
                        http: &self.http,
                        token,
                    },
                )
            }),
            jenkins: self.config.jenkins.as_ref(),
            allowed: &self.config.allowed,
        };
        let answered = rerun::deliver(
            &clients,
            run,
            event,
            payload,
            self.config.rerun_min_confidence,
        )
        .await?;
        if answered
            && let (Some(repo), Some(sha)) = (github_repository(event, payload), &event.commit_sha)
            && self.config.pr_comments.contains(repo)
        {
            pr_comments::touch_commit(&self.pool, repo, sha)
                .await
                .map_err(|e| format!("database: {e}"))?;
        }
        Ok(())
    }

    /// The CODEOWNERS entry of the file the run's failure is in (its first
    /// error's, else its first failing test's), read at the failing commit;
    /// `None` without asking GitHub when the log names no such file, and
    /// when the repository has no CODEOWNERS (or one GitHub ignores, or
    /// one that could not be read: the notification goes without it).
    async fn owners(
        &self,
        api: &str,
        token: &faultline_shared::config::SecretString,
        run: &runs::RunRow,
        repository: &str,
        sha: &str,
    ) -> Option<deliver::FileOwners> {
        let result = run.result.as_ref()?;
        let specifics: faultline_shared::specifics::Specifics =
            serde_json::from_value(result["specifics"].clone()).ok()?;
        let path = faultline_shared::pr_comment::failing_file(&specifics)?;
        let gh = deliver::GitHub {
            http: &self.http,
            token,
        };
        let owners = pr_comment::code_owners(&gh, api, repository, sha).await?;
        let o = owners.owners_of(&path)?;
        Some(deliver::FileOwners {
            who: o.described(),
            path,
        })
    }

    /// The GitHub repository (`owner/name`) and commit a run's check run,
    /// owners and pull-request comment are of: a GitHub event's own, a
    /// Jenkins build's when the server tied its SCM to a repository of the
    /// configured GitHub (read from the payload, only when there is a
    /// GitHub to write to).
    async fn github_target(
        &self,
        event: Option<&events::EventRow>,
        cache: &mut Option<Value>,
    ) -> Result<Option<(String, String)>, String> {
        let Some(e) = event else { return Ok(None) };
        let Some(sha) = e.commit_sha.clone() else {
            return Ok(None);
        };
        let repo = match e.source.as_str() {
            "github" => e.repository.clone(),
            "jenkins" if self.config.github.is_some() => {
                let payload = self.payload(e, cache).await?;
                github_repository(e, payload).cloned()
            }
            _ => None,
        };
        Ok(repo.map(|r| (r, sha)))
    }

    /// The event's stored payload, read once per delivery for the targets
    /// that need it (`cache`).
    async fn payload<'c>(
        &self,
        event: &events::EventRow,
        cache: &'c mut Option<Value>,
    ) -> Result<&'c Value, String> {
        if cache.is_none() {
            let read = events::payload(&self.pool, event.id)
                .await
                .map_err(|e| format!("database: {e}"))?;
            *cache = Some(read.unwrap_or_default());
        }
        Ok(cache.get_or_insert_default())
    }

    async fn claim(&self) -> sqlx::Result<Vec<Claimed>> {
        // The lock outlives every request of one attempt, one after the
        // other (the webhook, Slack, and for a check run: the lookup, the
        // create and its annotation updates), with room to record it.
        let lock = self.config.timeout * (deliver::MAX_REQUESTS_PER_ATTEMPT + rerun::REQUESTS + 1)
            + Duration::from_secs(5);
        outbox::claim_due(&self.pool, &self.owner, lock, &self.config.kinds(), BATCH).await
    }

    /// One attempt of one row: every target that does not have it yet.
    async fn deliver(&self, row: Claimed) {
        let attempt = match self.send(&row).await {
            Ok(attempt) => attempt,
            Err(e) => Attempt::Failed {
                delivered: Vec::new(),
                error: format!("database: {e}"),
            },
        };
        match outbox::record_attempt(&self.pool, row.id, &self.owner, &attempt, self.policy()).await
        {
            Ok(AfterAttempt::Delivered) => {
                faultline_shared::metrics::webhook_delivery("delivered");
                info!(run_id = %row.run_id, delivery = %row.id, "notification delivered")
            }
            Ok(AfterAttempt::RetryAt(at)) => {
                faultline_shared::metrics::webhook_delivery("retrying");
                warn!(run_id = %row.run_id, delivery = %row.id, attempt = row.attempts + 1, %at, ?attempt, "notification failed; will retry")
            }
            Ok(AfterAttempt::Dead) => {
                faultline_shared::metrics::webhook_delivery("failed");
                warn!(run_id = %row.run_id, delivery = %row.id, ?attempt, "notification dead-lettered");
                if let Attempt::Failed { error, .. } = &attempt {
                    self.give_up_reruns(&row, error).await;
                }
            }
            Ok(AfterAttempt::LockLost) => {
                warn!(delivery = %row.id, "notification lock lapsed; another deliverer has it")
            }
            Err(e) => {
                warn!(delivery = %row.id, error = %e, "recording a notification attempt failed")
            }
        }
    }

    /// A dead delivery leaves no re-run `requested` for ever: what it was
    /// still waiting for is `unanswered`, and the pull-request comment of
    /// its commit is written again to say so.
    async fn give_up_reruns(&self, row: &Claimed, error: &str) {
        let detail = format!(
            "no answer after {} attempts: {}",
            row.attempts + 1,
            faultline_shared::text::truncate_chars(error, 500)
        );
        let outcome = async {
            if reruns::give_up(&self.pool, row.run_id, &detail).await? == 0 {
                return Ok(());
            }
            let Some(run) = runs::get(&self.pool, row.run_id).await? else {
                return Ok(());
            };
            if let Some((e, payload)) = events::get_with_payload(&self.pool, run.event_id).await?
                && let payload = payload.unwrap_or_default()
                && let (Some(repo), Some(sha)) = (github_repository(&e, &payload), &e.commit_sha)
                && self.config.pr_comments.contains(repo)
            {
                pr_comments::touch_commit(&self.pool, repo, sha).await?;
            }
            Ok::<(), sqlx::Error>(())
        };
        if let Err(e) = outcome.await {
            warn!(run_id = %row.run_id, error = %e, "recording an unanswered re-run failed");
        }
    }

    async fn send(&self, row: &Claimed) -> sqlx::Result<Attempt> {
        let Some(run) = runs::get(&self.pool, row.run_id).await? else {
            return Ok(Attempt::Delivered {
                delivered: Vec::new(),
            });
        };
        let event = events::get(&self.pool, run.event_id).await?;
        let mut delivered = Vec::new();
        let mut errors = Vec::new();
        let pending = |target: &str| !row.delivered_to.iter().any(|t| t == target);
        if let Some((url, secret)) = &self.config.webhook
            && pending(WEBHOOK)
        {
            let body = deliver::payload(row.id, &row.kind, &run, event.as_ref());
            let body = serde_json::to_vec(&body).expect("JSON values serialise");
            match deliver::webhook(&self.http, url, secret, row.id, &row.kind, &body).await {
                Ok(()) => delivered.push(WEBHOOK.to_string()),
                Err(e) => errors.push(e),
            }
        }
        let mut payload = None;
        let github_target = match self.github_target(event.as_ref(), &mut payload).await {
            Ok(target) => target,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let github_target = github_target
            // The token writes only where the operator allows it: a run of a
            // repository outside FAULTLINE_ALLOWED_REPOSITORIES (one that
            // came through `enqueue` or reprocessing) gets no check run.
            .filter(
                |(repo, _)| match self.config.allowed.check_repository(repo) {
                    Ok(()) => true,
                    Err(why) => {
                        info!(run_id = %row.run_id, %why, "no check run");
                        false
                    }
                },
            );
        // Who owns the failing file, for the check run and Slack: read
        // once per attempt, and only when one of them is still to be sent.
        let owners = match (&self.config.github, &github_target) {
            (Some((api, token)), Some((repo, sha)))
                if pending(GITHUB) || (self.config.slack.is_some() && pending(SLACK)) =>
            {
                self.owners(api, token, &run, repo, sha).await
            }
            _ => None,
        };
        if let (Some((api, token)), Some((repo, sha))) = (&self.config.github, &github_target)
            && pending(GITHUB)
        {
            let gh = deliver::GitHub {
                http: &self.http,
                token,
            };
            match deliver::github_check_run(&gh, api, row.id, repo, sha, &run, owners.as_ref())
                .await
            {
                Ok(()) => delivered.push(GITHUB.to_string()),
                Err(e) => errors.push(e),
            }
        }
        // Before the comment is marked, so that its first version says so.
        if let Some(e) = &event
            && e.repository
                .as_deref()
                .is_some_and(|r| self.config.reruns.contains(r))
            && pending(RERUN)
        {
            let outcome = match self.payload(e, &mut payload).await {
                Ok(p) => self.rerun(&run, e, p).await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok(()) => delivered.push(RERUN.to_string()),
                Err(e) => errors.push(e),
            }
        }
        if let (Some(e), Some((repo, sha))) = (&event, &github_target)
            && self.config.pr_comments.contains(repo)
            && pending(PR_COMMENT)
        {
            let outcome = match self.payload(e, &mut payload).await {
                Ok(p) => self.mark_pull_requests(&run, e, p, repo, sha).await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok(()) => delivered.push(PR_COMMENT.to_string()),
                Err(e) => errors.push(e),
            }
        }
        if let Some(url) = &self.config.slack
            && pending(SLACK)
        {
            let body = deliver::slack_message(
                &run,
                event.as_ref(),
                self.config.console_url.as_deref(),
                owners.as_ref(),
            );
            match deliver::slack(&self.http, url, &body).await {
                Ok(()) => delivered.push(SLACK.to_string()),
                Err(e) => errors.push(e),
            }
        }
        Ok(if errors.is_empty() {
            Attempt::Delivered { delivered }
        } else {
            Attempt::Failed {
                delivered,
                error: errors.join("; "),
            }
        })
    }
}

/// The `owner/name` an event's pull-request comment is keyed by: a Jenkins
/// build's `jenkins.github_repository`, any other event's repository (as
/// `failure_events.github_repository` derives it).
fn github_repository<'a>(event: &'a events::EventRow, payload: &'a Value) -> Option<&'a String> {
    match event.source.as_str() {
        "jenkins" => match &payload["jenkins"]["github_repository"] {
            Value::String(s) => Some(s),
            _ => None,
        },
        _ => event.repository.as_ref(),
    }
}
