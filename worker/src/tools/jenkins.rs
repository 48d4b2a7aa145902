//! `jenkins_console`: the head or tail of a Jenkins build's console text,
//! streamed and cut to `JENKINS_CONSOLE_MAX_BYTES` on line boundaries. The
//! build defaults to the failure's own; only builds of the failure's own
//! job are read (issue 14, finding 2): another job is refused before any
//! request.

use std::sync::Arc;

use faultline_shared::{
    storage::events::{self, EventRow},
    tool::{self, ConsolePart, Line},
};
use futures::future::BoxFuture;
use reqwest::Url;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::{OUT_OF_SCOPE, Tool, ToolContext, ToolError, ToolName};
use crate::sources::jenkins::{JenkinsClient, Keep};

/// Highest build number a call may name (the schema's bound).
const MAX_BUILD: u64 = 1 << 53;

pub struct JenkinsConsole(pub Arc<JenkinsClient>);

/// The arguments of `jenkins_console`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    part: Option<Part>,
    #[schemars(range(min = 1024, max = 1_073_741_824_u64))]
    max_bytes: Option<u64>,
    #[schemars(
        length(max = 1024),
        description = "the failing job's name, folders separated by / (the only job read); may be omitted"
    )]
    job: Option<String>,
    #[schemars(
        range(min = 1, max = MAX_BUILD),
        description = "build number of the failing job; default: the failing build"
    )]
    build: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Part {
    Head,
    Tail,
}

impl Tool for JenkinsConsole {
    type Args = Args;
    type Observation = tool::JenkinsConsole;
    fn name(&self) -> ToolName {
        ToolName::JenkinsConsole
    }
    fn description(&self) -> &'static str {
        "Read a Jenkins build's console text (part=tail for the end, head for the start), cut to a size cap. Defaults to the failing build."
    }
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Args,
    ) -> BoxFuture<'a, Result<tool::JenkinsConsole, ToolError>> {
        Box::pin(async move {
            let jenkins = &self.0;
            let event = events::get(&ctx.pool, ctx.event_id).await?;
            let payload = events::payload(&ctx.pool, ctx.event_id)
                .await?
                .unwrap_or_default();
            let url = console_url(jenkins, &args, event.as_ref(), &payload)?;
            let keep = if args.part == Some(Part::Head) {
                Keep::Head
            } else {
                Keep::Tail
            };
            let cap = args.max_bytes.map_or(jenkins.console_max_bytes(), |n| {
                (n.min(usize::MAX as u64) as usize).min(jenkins.console_max_bytes())
            });
            let capped = jenkins.console(&url, keep, cap).await?;
            let lines: Vec<Line> = capped
                .text
                .lines()
                .enumerate()
                .map(|(i, text)| Line {
                    n: capped.first_line + i as u64,
                    text: text.to_string(),
                })
                .collect();
            Ok(tool::JenkinsConsole {
                url: url.as_str().to_string(),
                part: if keep == Keep::Head {
                    ConsolePart::Head
                } else {
                    ConsolePart::Tail
                },
                max_bytes: cap as u64,
                total_bytes: capped.total_bytes,
                truncated: capped.truncated,
                lines,
            })
        })
    }
}

/// The console a call reads: the failing build (the default), another
/// build of the failing job, or that job named again; any other job is out
/// of scope.
fn console_url(
    jenkins: &JenkinsClient,
    args: &Args,
    event: Option<&EventRow>,
    payload: &Value,
) -> Result<Url, ToolError> {
    let own = own_job(jenkins, event, payload);
    let out_of_scope = |what: String| {
        ToolError::Invalid(match &own {
            Some(job) => format!(
                "{OUT_OF_SCOPE} jenkins_console reads only the failing job ({}), not \
                 {what} (omit \"job\"; pass only \"build\" for another build of the \
                 same job)",
                job.as_str()
            ),
            None => format!(
                "{OUT_OF_SCOPE} jenkins_console reads only the failing job, and this \
                 failure names none; {what} is not it"
            ),
        })
    };
    let url = match (args.job.as_deref(), args.build) {
        (Some(job), Some(build)) => {
            let url = jenkins
                .console_url(job, build)
                .map_err(ToolError::Invalid)?;
            if own.as_ref() != Some(&job_of(&url)) {
                return Err(out_of_scope(format!("job {job:?}")));
            }
            url
        }
        (None, Some(build)) => match &own {
            Some(job) => build_of(job, build),
            None => return Err(out_of_scope(format!("build {build}"))),
        },
        (None, None) => {
            let console = payload["jenkins"]["console_url"].as_str();
            let number = event.and_then(|e| e.build_number.as_deref());
            match (console, &own, number.and_then(|n| n.parse::<u64>().ok())) {
                (Some(console), _, _) => jenkins.resolve(console).map_err(ToolError::Failed)?,
                (None, Some(job), Some(build)) if build > 0 => build_of(job, build),
                _ => {
                    return Err(ToolError::Invalid(
                        "the failure is not a Jenkins build: jenkins_console reads only the failing job's builds"
                            .into(),
                    ));
                }
            }
        }
        (Some(_), None) => {
            return Err(ToolError::Invalid(
                "pass \"build\" with \"job\", or neither".into(),
            ));
        }
    };
    Ok(url)
}

/// The console of the failing build itself (the notification's console
/// URL, else its job and build number), under `JENKINS_URL`.
pub(super) fn failing_console(
    jenkins: &JenkinsClient,
    event: Option<&EventRow>,
    payload: &Value,
) -> Option<Url> {
    console_url(jenkins, &Args::default(), event, payload).ok()
}

/// The failure's own job under `JENKINS_URL` (`…/job/a/job/b`), from the
/// notification's console URL, else its job URL, else the event's job
/// name. Every URL here is built by the client's validated builders, so
/// two names of one job compare equal.
fn own_job(jenkins: &JenkinsClient, event: Option<&EventRow>, payload: &Value) -> Option<Url> {
    let notified = &payload["jenkins"];
    notified["console_url"]
        .as_str()
        .and_then(|u| jenkins.resolve(u).ok())
        .or_else(|| {
            notified["job_url"]
                .as_str()
                .and_then(|u| jenkins.last_success_url(u).ok())
        })
        .or_else(|| {
            let name = event?.job_name.as_deref()?;
            jenkins.console_url(name, 1).ok()
        })
        .map(|url| job_of(&url))
}

/// The job of a build's console URL: without `<build>/consoleText`.
fn job_of(console: &Url) -> Url {
    let mut job = console.clone();
    if let Ok(mut path) = job.path_segments_mut() {
        path.pop().pop();
    }
    job
}

/// `<job>/<build>/consoleText`.
fn build_of(job: &Url, build: u64) -> Url {
    let mut url = job.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.push(&build.to_string()).push("consoleText");
    }
    url
}
