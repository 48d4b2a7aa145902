//! GitHub Actions deliveries (`workflow_run`, `workflow_job`): the body of a
//! delivery whose signature has already been checked, to a [`Delivery`].

use serde::{Deserialize, Serialize};

use super::{MAX_NAME, MAX_URL, PayloadError, check_opt, check_text, from_json};

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
    target.check()?;
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

/// Checks `X-GitHub-Delivery` (a GUID from GitHub): 1 to 128 characters of
/// `A-Z a-z 0-9 . _ : -`, so it fits the dedup key's index.
pub fn check_delivery(delivery: &str) -> Result<&str, PayloadError> {
    let ok = (1..=128).contains(&delivery.len())
        && delivery
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
    if ok {
        Ok(delivery)
    } else {
        Err(PayloadError::Invalid {
            field: "X-GitHub-Delivery",
            reason: "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -".into(),
        })
    }
}

/// Checks `owner/name` by GitHub's rules: the owner is 1 to 39 of
/// `A-Z a-z 0-9 -`, the name 1 to 100 of `A-Z a-z 0-9 . _ -` and not `.` or
/// `..`. Anything else could make the URLs built from it reach other API paths.
pub fn check_repository(full_name: &str) -> Result<(), PayloadError> {
    let invalid = |reason: String| PayloadError::Invalid {
        field: "repository.full_name",
        reason,
    };
    let (owner, name) = full_name
        .split_once('/')
        .ok_or_else(|| invalid(format!("{full_name:?} is not owner/name")))?;
    let owner_ok = (1..=39).contains(&owner.len())
        && owner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let name_ok = (1..=100).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && name != "."
        && name != "..";
    if owner_ok && name_ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "{full_name:?} is not owner/name (owner: A-Z a-z 0-9 -; name: A-Z a-z 0-9 . _ -, not . or ..)"
        )))
    }
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
    /// The pull requests a `workflow_run` names (their numbers; empty for a
    /// job, and for a pull request from a fork).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_requests: Vec<u64>,
    /// The branch the change is to land on: the first pull request's base
    /// (`workflow_run.pull_requests[].base.ref`), else the repository's
    /// default branch. "Already failing" is measured there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_branch: Option<String>,
    /// API URL of the log (a zip for a run, plain text for a job).
    pub logs_url: String,
    pub html_url: Option<String>,
}

impl GithubTarget {
    /// The delivery's identity from what the signature covers: repository,
    /// run or job id and attempt. `X-GitHub-Delivery` is not signed, so a
    /// replayed body under a new delivery id must still be the same event.
    pub fn signed_key(&self) -> String {
        let attempt = self.run_attempt.unwrap_or(1);
        match self.job_id {
            Some(job) => format!("github:job:{}:{job}:{attempt}", self.repository),
            None => format!("github:run:{}:{}:{attempt}", self.repository, self.run_id),
        }
    }

    /// Refuses what cannot be stored or safely used: a repository that is
    /// not `owner/name`, NUL characters, overlong names or URLs.
    fn check(&self) -> Result<(), PayloadError> {
        check_repository(&self.repository)?;
        check_text("repository.url", &self.repository_api_url, MAX_URL)?;
        check_text("workflow.name", &self.workflow_name, MAX_NAME)?;
        check_opt("workflow_job.name", self.job_name.as_deref(), MAX_NAME)?;
        check_text("head_sha", &self.head_sha, 64)?;
        check_opt("head_branch", self.head_branch.as_deref(), 255)?;
        check_opt("target_branch", self.target_branch.as_deref(), 255)?;
        check_text("logs_url", &self.logs_url, MAX_URL)?;
        check_opt("html_url", self.html_url.as_deref(), MAX_URL)?;
        check_opt("conclusion", self.conclusion.as_deref(), 64)?;
        check_text("action", &self.action, 64)?;
        for step in &self.failed_steps {
            check_text("workflow_job.steps.name", step, MAX_NAME)?;
        }
        Ok(())
    }

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
    default_branch: Option<String>,
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
    #[serde(default)]
    pull_requests: Vec<PullRequestRef>,
}

/// An entry of `workflow_run.pull_requests`.
#[derive(Debug, Deserialize)]
struct PullRequestRef {
    number: u64,
    base: Option<BranchRef>,
}

/// A pull request's `base` (or `head`): the branch by name.
#[derive(Debug, Deserialize)]
struct BranchRef {
    #[serde(rename = "ref")]
    name: Option<String>,
}

impl WorkflowRunEvent {
    fn target(self) -> GithubTarget {
        let run = self.workflow_run;
        let base = run
            .pull_requests
            .iter()
            .find_map(|p| p.base.as_ref().and_then(|b| b.name.clone()));
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
            pull_requests: run
                .pull_requests
                .iter()
                .map(|p| p.number)
                .take(20)
                .collect(),
            target_branch: base.or(self.repository.default_branch),
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
            pull_requests: Vec::new(),
            target_branch: self.repository.default_branch,
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

    #[test]
    fn repositories_follow_githubs_naming_rules() {
        for good in ["octo-org/ledger-api", "o/r", "a-1/x.y_z", "o/.github"] {
            assert!(check_repository(good).is_ok(), "{good}");
        }
        for bad in [
            "octo/repo/../../../user/repos",
            "o/..",
            "o/.",
            "o",
            "/r",
            "o/",
            "o_o/r",
            "o/r?x=1",
            "o/r%2f",
            "o/r\0",
        ] {
            assert!(check_repository(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn delivery_ids_are_short_guids() {
        assert!(check_delivery("72d3162e-cc78-11e3-81ab-4c9367dc0958").is_ok());
        assert!(check_delivery(&"a".repeat(4000)).is_err());
        assert!(check_delivery("a b").is_err());
    }
}
