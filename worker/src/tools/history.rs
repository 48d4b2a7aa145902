//! `failure_history`: how a job or a test has fared over time — outcomes,
//! consecutive failures, flakiness (a commit that both passed and failed),
//! first seen and the last passing commit. Without arguments it reads the
//! history of the failing job and test.

use faultline_shared::{
    storage::{
        events,
        history::{self, HistoryError},
    },
    tool::{self, History, Outcome},
};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Tool, ToolContext, ToolError, ToolName, timestamp};

/// Outcomes listed in an observation.
const RECENT: i64 = 20;

pub struct FailureHistory;

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
    fn local(&self) -> bool {
        true
    }
    fn description(&self) -> &'static str {
        "History of a CI job and/or test: recent outcomes, consecutive failures, whether it is flaky \
         (passed and failed on the same commit), first seen, last passing commit. Defaults to the failing job and test."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Args,
    ) -> BoxFuture<'a, Result<tool::FailureHistory, ToolError>> {
        Box::pin(async move {
            let (mut job, mut test) = (args.job, args.test);
            let event = events::get(&ctx.pool, ctx.event_id).await?;
            if job.is_none() && test.is_none() {
                job = event.as_ref().and_then(|e| e.job_name.clone());
                test = event.as_ref().and_then(|e| e.test_name.clone());
            }
            // The failure's own repository, up to the failure: another
            // repository's job of the same name is not this job's history,
            // and what failed after this failure is not "before" it.
            let scope = history::Scope {
                repository: event.as_ref().and_then(|e| e.repository.as_deref()),
                until: event.as_ref().map(|e| e.received_at),
            };
            let h = history::history_in(&ctx.pool, job.as_deref(), test.as_deref(), scope, RECENT)
                .await
                .map_err(|e| match e {
                    HistoryError::Database(db) => ToolError::from(db),
                    HistoryError::NoSubject => ToolError::Invalid(
                        "the failure names no job or test: pass \"job\" or \"test\"".into(),
                    ),
                    other => ToolError::Failed(other.to_string()),
                })?;
            let commit = event.and_then(|e| e.commit_sha);
            Ok(tool::FailureHistory {
                job,
                test,
                commit,
                history: observed(h),
            })
        })
    }
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
