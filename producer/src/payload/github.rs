//! GitHub Actions deliveries (`workflow_run`, `workflow_job`): the body of a
//! delivery whose signature has already been checked, to a [`Delivery`].

use serde::{Deserialize, Serialize};

use super::{PayloadError, from_json};

/// Conclusions that start an analysis.
pub const FAILED: [&str; 2] = ["failure", "timed_out"];
/// The conclusion recorded as a pass in the failure history (no analysis).
pub const PASSED: &str = "success";

/// What a delivery asks of ingest.
#[derive(Debug)]
pub enum Delivery {
    /// `ping`: answer `{"pong": true}`.
    Ping,
    /// Well-formed but not analysed; the reason says why, precisely.
    Ignored(String),
    /// A completed run or job that succeeded: a pass in the failure history.
    Passed(GithubTarget),
    /// A completed run or job that failed or timed out: analyse it.
    Failed(GithubTarget),
}

/// Parses the body of a delivery of event `event` (`X-GitHub-Event`).
pub fn parse(event: &str, body: &[u8]) -> Result<Delivery, PayloadError> {
    let target = match event {
        "ping" => return Ok(Delivery::Ping),
        "workflow_run" => from_json::<WorkflowRunEvent>(body)?.target(),
        "workflow_job" => from_json::<WorkflowJobEvent>(body)?.target(),
        other => {
            return Ok(Delivery::Ignored(format!(
                "event {other:?} is not analysed (only workflow_run and workflow_job)"
            )));
        }
    };
    if target.action != "completed" {
        return Ok(Delivery::Ignored(format!(
            "{event} action {:?} is not analysed (only \"completed\")",
            target.action
        )));
    }
    let conclusion = target.conclusion.as_deref().unwrap_or("null");
    if conclusion == PASSED {
        return Ok(Delivery::Passed(target));
    }
    if !FAILED.contains(&conclusion) {
        return Ok(Delivery::Ignored(format!(
            "{event} conclusion {conclusion:?} is not a failure (only \"failure\" and \"timed_out\")"
        )));
    }
    Ok(Delivery::Failed(target))
}

/// What the worker needs to fetch a failed run's or job's log from GitHub.
#[derive(Debug, Serialize)]
pub struct GithubTarget {
    /// `workflow_run` or `workflow_job`.
    pub kind: &'static str,
    #[serde(skip)]
    pub action: String,
    pub conclusion: Option<String>,
    /// `owner/name`.
    pub repository: String,
    /// The repository's API URL (`https://api.github.com/repos/owner/name`, or GHES).
    pub repository_api_url: String,
    pub run_id: u64,
    pub run_attempt: Option<u64>,
    pub run_number: Option<u64>,
    pub workflow_name: String,
    /// The workflow's id (`workflow_run` deliveries carry it; for a job the
    /// worker reads it from the run): where its last green run is looked up.
    pub workflow_id: Option<u64>,
    pub job_id: Option<u64>,
    pub job_name: Option<String>,
    /// Steps of a job that ended `failure` or `timed_out`.
    pub failed_steps: Vec<String>,
    pub head_sha: String,
    pub head_branch: Option<String>,
    /// API URL of the log (a zip for a run, plain text for a job).
    pub logs_url: String,
    pub html_url: Option<String>,
}

impl GithubTarget {
    /// The job's name in the failure history: `workflow / job`, or the workflow.
    pub fn job_label(&self) -> String {
        match &self.job_name {
            Some(job) => format!("{} / {job}", self.workflow_name),
            None => self.workflow_name.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct Repository {
    full_name: String,
    url: String,
}

/// A `workflow_run` delivery (only the fields we use; GitHub sends many more).
#[derive(Debug, Deserialize)]
struct WorkflowRunEvent {
    action: String,
    workflow_run: WorkflowRun,
    repository: Repository,
}

#[derive(Debug, Deserialize)]
struct WorkflowRun {
    id: u64,
    name: Option<String>,
    workflow_id: Option<u64>,
    run_number: Option<u64>,
    run_attempt: Option<u64>,
    head_sha: String,
    head_branch: Option<String>,
    conclusion: Option<String>,
    logs_url: String,
    html_url: Option<String>,
}

impl WorkflowRunEvent {
    fn target(self) -> GithubTarget {
        let run = self.workflow_run;
        GithubTarget {
            kind: "workflow_run",
            action: self.action,
            conclusion: run.conclusion,
            repository: self.repository.full_name,
            repository_api_url: self.repository.url,
            run_id: run.id,
            run_attempt: run.run_attempt,
            run_number: run.run_number,
            workflow_name: run.name.unwrap_or_else(|| "workflow".into()),
            workflow_id: run.workflow_id,
            job_id: None,
            job_name: None,
            failed_steps: Vec::new(),
            head_sha: run.head_sha,
            head_branch: run.head_branch,
            logs_url: run.logs_url,
            html_url: run.html_url,
        }
    }
}

/// A `workflow_job` delivery.
#[derive(Debug, Deserialize)]
struct WorkflowJobEvent {
    action: String,
    workflow_job: WorkflowJob,
    repository: Repository,
}

#[derive(Debug, Deserialize)]
struct WorkflowJob {
    id: u64,
    run_id: u64,
    run_attempt: Option<u64>,
    name: String,
    workflow_name: Option<String>,
    head_sha: String,
    head_branch: Option<String>,
    conclusion: Option<String>,
    html_url: Option<String>,
    #[serde(default)]
    steps: Vec<JobStep>,
}

#[derive(Debug, Deserialize)]
struct JobStep {
    name: String,
    conclusion: Option<String>,
}

impl WorkflowJobEvent {
    fn target(self) -> GithubTarget {
        let job = self.workflow_job;
        let logs_url = format!("{}/actions/jobs/{}/logs", self.repository.url, job.id);
        GithubTarget {
            kind: "workflow_job",
            action: self.action,
            conclusion: job.conclusion,
            repository: self.repository.full_name,
            repository_api_url: self.repository.url,
            run_id: job.run_id,
            run_attempt: job.run_attempt,
            run_number: None,
            workflow_name: job.workflow_name.unwrap_or_else(|| "workflow".into()),
            workflow_id: None,
            job_id: Some(job.id),
            job_name: Some(job.name),
            failed_steps: job
                .steps
                .into_iter()
                .filter(|s| s.conclusion.as_deref().is_some_and(|c| FAILED.contains(&c)))
                .map(|s| s.name)
                .collect(),
            head_sha: job.head_sha,
            head_branch: job.head_branch,
            logs_url,
            html_url: job.html_url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_of_the_wrong_type_is_named_by_its_path() {
        let body = br#"{"action": "completed", "workflow_run": {"id": "7"}, "repository": {}}"#;
        let err = parse("workflow_run", body).unwrap_err().to_string();
        assert!(err.starts_with("workflow_run.id: invalid type"), "{err}");
        assert!(matches!(
            parse("workflow_run", b"{\"action\""),
            Err(PayloadError::Syntax(_))
        ));
        assert!(matches!(parse("ping", b"not json"), Ok(Delivery::Ping)));
    }
}
