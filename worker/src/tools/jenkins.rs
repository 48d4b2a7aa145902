//! `jenkins_console`: the head or tail of a Jenkins build's console text,
//! streamed and cut to `JENKINS_CONSOLE_MAX_BYTES` on line boundaries. The
//! build defaults to the failure's own.

use std::sync::Arc;

use faultline_shared::storage::events;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};
use crate::sources::jenkins::{JenkinsClient, Keep};

pub struct JenkinsConsole(pub Arc<JenkinsClient>);

impl Tool for JenkinsConsole {
    fn name(&self) -> &'static str {
        super::JENKINS_CONSOLE
    }
    fn description(&self) -> &'static str {
        "Read a Jenkins build's console text (part=tail for the end, head for the start), cut to a size cap. Defaults to the failing build."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "part": {"type": "string", "enum": ["head", "tail"]},
            "max_bytes": {"type": "integer", "minimum": 1024},
            "job": {"type": "string", "description": "job name, folders separated by /; default: the failing job"},
            "build": {"type": "integer", "minimum": 1, "description": "build number; default: the failing build"}}})
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let jenkins = &self.0;
            let url = match (input["job"].as_str(), input["build"].as_u64()) {
                (Some(job), Some(build)) => jenkins
                    .console_url(job, build)
                    .map_err(ToolError::Invalid)?,
                (None, None) => {
                    let payload = events::payload(&ctx.pool, ctx.event_id)
                        .await?
                        .unwrap_or_default();
                    let Some(console) = payload["jenkins"]["console_url"].as_str() else {
                        return Err(ToolError::Invalid(
                            "the failure is not a Jenkins build: pass \"job\" and \"build\"".into(),
                        ));
                    };
                    jenkins.resolve(console).map_err(ToolError::Failed)?
                }
                _ => {
                    return Err(ToolError::Invalid(
                        "pass both \"job\" and \"build\", or neither".into(),
                    ));
                }
            };
            let keep = if input["part"] == "head" {
                Keep::Head
            } else {
                Keep::Tail
            };
            let cap = input["max_bytes"]
                .as_u64()
                .map_or(jenkins.console_max_bytes(), |n| {
                    (n as usize).min(jenkins.console_max_bytes())
                });
            let capped = jenkins.console(&url, keep, cap).await?;
            let lines: Vec<Value> = capped
                .text
                .lines()
                .enumerate()
                .map(|(i, text)| json!({"n": capped.first_line + i as u64, "text": text}))
                .collect();
            Ok(json!({
                "url": url.as_str(), "part": if keep == Keep::Head { "head" } else { "tail" },
                "max_bytes": cap, "total_bytes": capped.total_bytes, "truncated": capped.truncated,
                "lines": lines,
            }))
        })
    }
}
