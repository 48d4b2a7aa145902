//! `failure_history`: how a job or a test has fared over time — outcomes,
//! consecutive failures, flakiness (a commit that both passed and failed),
//! first seen and the last passing commit. Without arguments it reads the
//! history of the failing job and test.

use std::sync::Arc;

use faultline_shared::{
    storage::{
        events,
        events::EventRow,
        history::{self, HistoryError},
    },
    tool::{self, History, Outcome},
};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, ToolName, timestamp};
use crate::sources::{
    github::{GithubClient, parse_repo},
    jenkins::JenkinsClient,
};
use faultline_shared::text::truncate_chars;

/// Outcomes listed in an observation.
const RECENT: i64 = 20;

/// How near in time (either way) another repository's failure with the
/// same fingerprint counts as "at the same time".
pub const SAME_TIME_MINUTES: i32 = 60;

/// Most paths of a change read with the history: a change of more is
/// read as its first this many (`truncated`).
pub const MAX_CHANGED_FILES: usize = 1000;

/// Reads the history from Faultline's own database and, when GitHub is
/// configured, the files the change under test touched.
#[derive(Default)]
pub struct FailureHistory {
    pub github: Option<Arc<GithubClient>>,
    pub jenkins: Option<Arc<JenkinsClient>>,
}

/// The arguments of `failure_history`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    #[schemars(description = "job name; default: the failing job")]
    job: Option<String>,
    #[schemars(description = "test name; default: the failing test")]
    test: Option<String>,
}

impl Tool for FailureHistory {
    type Args = Args;
    type Observation = tool::FailureHistory;
    fn name(&self) -> ToolName {
        ToolName::FailureHistory
    }
    /// Local unless it also asks GitHub or Jenkins for the change's files.
    fn local(&self) -> bool {
        self.github.is_none() && self.jenkins.is_none()
    }
    fn description(&self) -> &'static str {
        "History of a CI job and/or test: recent outcomes, consecutive failures, whether it is flaky \
         (passed and failed on the same commit), first seen, last passing commit. Defaults to the failing job and test; then it also says how many other \
         repositories failed the same way within the hour and, with GitHub or Jenkins configured, which \
         files the change under test touched."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Args,
    ) -> BoxFuture<'a, Result<tool::FailureHistory, ToolError>> {
        Box::pin(async move {
            let (mut job, mut test) = (args.job, args.test);
            // The event and its stored payload, in one statement: the
            // payload names the branches and, for Jenkins, the build.
            let (event, payload) = match events::get_with_payload(&ctx.pool, ctx.event_id).await? {
                Some((e, p)) => (Some(e), p.unwrap_or_default()),
                None => (None, serde_json::Value::Null),
            };
            let own = job.is_none() && test.is_none();
            if own {
                job = event.as_ref().and_then(|e| e.job_name.clone());
                test = event.as_ref().and_then(|e| e.test_name.clone());
            }
            // The failure's own repository, up to the failure: another
            // repository's job of the same name is not this job's history,
            // and what failed after this failure is not "before" it.
            let scope = history::Scope {
                repository: event.as_ref().and_then(|e| e.repository.as_deref()),
                until: event.as_ref().map(|e| e.received_at),
                branch: None,
            };
            let h = read(ctx, job.as_deref(), test.as_deref(), scope).await?;
            // The failure's branch and the one its change is to land on, as
            // its source sent them; the job's history there is what
            // "already failing" is measured on.
            let (branch, target_branch) = if own {
                branches(&payload)
            } else {
                (None, None)
            };
            // A Jenkins multibranch pipeline names each branch's job after
            // the branch (`PR-12`, `main`): there the job on the target
            // branch is the one named after it.
            let multibranch = event
                .as_ref()
                .is_some_and(|e| e.source == "jenkins" && branch.is_some() && e.job_name == branch);
            let target = match &target_branch {
                Some(b) => Some(tool::BranchHistory {
                    branch: b.clone(),
                    job: multibranch.then(|| b.clone()),
                    history: observed(
                        read(
                            ctx,
                            if multibranch { Some(b) } else { job.as_deref() },
                            test.as_deref(),
                            history::Scope {
                                branch: Some(b),
                                ..scope
                            },
                        )
                        .await?,
                    ),
                }),
                None => None,
            };
            // The change's files, for the failure's own history only (a
            // model asking about another job reads no change).
            let change = match &event {
                Some(e) if own => {
                    // A push's change is every commit since the job last
                    // passed, on its target branch when that is known.
                    let since = target
                        .as_ref()
                        .and_then(|t| t.history.last_passing_commit.clone())
                        .or_else(|| h.last_passing_commit.clone());
                    self.changed_files(e, &payload, since.as_deref()).await
                }
                _ => None,
            };
            // The same failure in other repositories at the same time.
            let elsewhere = if own {
                let s = history::spread(&ctx.pool, ctx.run_id, SAME_TIME_MINUTES).await?;
                (s.repositories > 0).then_some(tool::Elsewhere {
                    repositories: s.repositories,
                    failures: s.failures,
                    within_minutes: SAME_TIME_MINUTES.into(),
                })
            } else {
                None
            };
            let commit = event.and_then(|e| e.commit_sha);
            Ok(tool::FailureHistory {
                job,
                test,
                commit,
                history: observed(h),
                change,
                elsewhere,
                branch,
                target,
            })
        })
    }
}

impl FailureHistory {
    /// The files the failure's change touched: a GitHub failure's from
    /// GitHub (its repository and commit), a Jenkins failure's from its
    /// build's changes; `None` when its source is not configured or the
    /// failure names too little. What the CI source refused (a 404, a rate
    /// limit past its wait, a job or repository outside the allow-list) is
    /// recorded as the change's `error`, and the history stands without it.
    async fn changed_files(
        &self,
        event: &EventRow,
        payload: &serde_json::Value,
        since: Option<&str>,
    ) -> Option<tool::ChangedFiles> {
        let unread = |source: String, e: crate::sources::ApiError| tool::ChangedFiles {
            source,
            error: Some(e.to_string()),
            ..tool::ChangedFiles::default()
        };
        match (event.source.as_str(), &self.github, &self.jenkins) {
            ("github", Some(gh), _) => {
                let repo = event.repository.as_deref().and_then(parse_repo)?;
                let sha = event.commit_sha.as_deref()?;
                Some(
                    gh.changed_files(&repo, sha, since, MAX_CHANGED_FILES)
                        .await
                        .unwrap_or_else(|e| {
                            unread(format!("commit {}", truncate_chars(sha, 7)), e)
                        }),
                )
            }
            ("jenkins", _, Some(jenkins)) => {
                let console = super::jenkins::failing_console(jenkins, Some(event), payload)?;
                let build = event.build_number.as_deref().unwrap_or("?");
                Some(
                    jenkins
                        .changed_files(&console, MAX_CHANGED_FILES)
                        .await
                        .unwrap_or_else(|e| unread(format!("build {build}"), e)),
                )
            }
            _ => None,
        }
    }
}

/// The history of `job` and/or `test` within `scope`, as a tool's error.
async fn read(
    ctx: &ToolContext,
    job: Option<&str>,
    test: Option<&str>,
    scope: history::Scope<'_>,
) -> Result<history::History, ToolError> {
    history::history_in(&ctx.pool, job, test, scope, RECENT)
        .await
        .map_err(|e| match e {
            HistoryError::Database(db) => ToolError::from(db),
            HistoryError::NoSubject => ToolError::Invalid(
                "the failure names no job or test: pass \"job\" or \"test\"".into(),
            ),
            other => ToolError::Failed(other.to_string()),
        })
}

/// The branch a failure ran on and the one its change is to land on, from
/// its stored payload (GitHub: `head_branch` and the pull request's base or
/// the default branch; Jenkins: `scm.branch` and a `CHANGE_TARGET`
/// parameter), as the `failure_events.branch` column derives the branch
/// (migration 20261128200000). No target without a branch: a failure
/// whose own branch is unknown cannot be told to be on it or not.
fn branches(payload: &serde_json::Value) -> (Option<String>, Option<String>) {
    let source = payload
        .get("github")
        .or_else(|| payload.get("jenkins"))
        .cloned()
        .unwrap_or_default();
    let text = |k: &str| {
        source
            .get(k)
            .and_then(|v| v.as_str())
            .filter(|b| !b.is_empty())
            .map(str::to_string)
    };
    let branch = text("branch").or_else(|| text("head_branch"));
    let target = branch.as_ref().and(text("target_branch"));
    (branch, target)
}

/// The stored history in the observation's shape.
fn observed(h: history::History) -> History {
    History {
        failures: h.failures,
        passes: h.passes,
        first_seen: h.first_seen.as_ref().map(timestamp),
        last_failure: h.last_failure.as_ref().map(timestamp),
        last_pass: h.last_pass.as_ref().map(timestamp),
        last_passing_commit: h.last_passing_commit,
        consecutive_failures: h.consecutive_failures,
        flaky_commits: h.flaky_commits,
        flaky: h.flaky,
        recent: h
            .recent
            .into_iter()
            .map(|o| Outcome {
                at: timestamp(&o.at),
                outcome: o.outcome,
                commit_sha: o.commit_sha,
                build_number: o.build_number,
                source: o.source,
            })
            .collect(),
    }
}
