//! `failure_history`: how a job or a test has fared over time — outcomes,
//! consecutive failures, flakiness (a commit that both passed and failed),
//! first seen and the last passing commit. Without arguments it reads the
//! history of the failing job and test.

use faultline_shared::storage::{
    events,
    history::{self, HistoryError},
};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};

/// Outcomes listed in an observation.
const RECENT: i64 = 20;

pub struct FailureHistory;

impl Tool for FailureHistory {
    fn name(&self) -> &'static str {
        super::FAILURE_HISTORY
    }
    fn local(&self) -> bool {
        true
    }
    fn description(&self) -> &'static str {
        "History of a CI job and/or test: recent outcomes, consecutive failures, whether it is flaky \
         (passed and failed on the same commit), first seen, last passing commit. Defaults to the failing job and test."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "job": {"type": "string", "description": "job name; default: the failing job"},
            "test": {"type": "string", "description": "test name; default: the failing test"}}})
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let (mut job, mut test) = (
                input["job"].as_str().map(str::to_string),
                input["test"].as_str().map(str::to_string),
            );
            if job.is_none() && test.is_none() {
                let event = events::get(&ctx.pool, ctx.event_id).await?;
                job = event.as_ref().and_then(|e| e.job_name.clone());
                test = event.and_then(|e| e.test_name);
            }
            let h = history::history(&ctx.pool, job.as_deref(), test.as_deref(), RECENT)
                .await
                .map_err(|e| match e {
                    HistoryError::Database(db) => ToolError::from(db),
                    HistoryError::NoSubject => ToolError::Invalid(
                        "the failure names no job or test: pass \"job\" or \"test\"".into(),
                    ),
                    other => ToolError::Failed(other.to_string()),
                })?;
            Ok(json!({"job": job, "test": test, "history": h}))
        })
    }
}
