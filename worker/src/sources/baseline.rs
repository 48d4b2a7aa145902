//! The last green log of a failure's job (issue 13), fetched before the
//! run's first iteration so that the `log_excerpt` tool can leave out the
//! lines the job also prints when it passes.
//!
//! - GitHub: the latest successful run of the same workflow on the same
//!   branch (`GET …/actions/workflows/{id}/runs?branch=…&status=success`),
//!   the job of that run with the same name as the failed one (`GET
//!   …/actions/runs/{id}/jobs`), its log (`GET …/actions/jobs/{id}/logs`,
//!   a redirect to log storage). For a failed `workflow_run`, the green
//!   jobs named like the failed jobs whose logs were fetched.
//! - Jenkins: `{job}/lastSuccessfulBuild/consoleText` (404: no green build).
//!
//! The log is stored like the failure's own ([`baselines`]: chunked, capped,
//! fenced by the lease, once per event). Whatever keeps it from being had
//! (no green build, an expired log, a source not configured, an API error
//! after the client's retries, the fetch timeout) is recorded as the reason
//! there is none, and the run goes on with the plain excerpt: a baseline
//! never fails a run. Only the database failing retries the step.

use crate::failure::Failure;
use faultline_shared::storage::{
    baselines::{self, Pending},
    events::EventRow,
    log_fetches::{Fetched, Sources},
    runs::Lease,
};
use reqwest::Response;
use serde_json::{Value, json};
use sqlx::PgPool;

use super::{
    ApiError,
    fetch::{LogFetcher, strip_query},
    github::{self, GithubClient},
};

/// Where the last green log of an event's job is.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    Github {
        repo: String,
        run_id: u64,
        workflow_id: Option<u64>,
        branch: Option<String>,
        /// Names of the failed jobs whose green twins are wanted.
        jobs: Vec<String>,
    },
    Jenkins {
        job_url: String,
    },
}

impl Target {
    fn source(&self) -> &'static str {
        match self {
            Target::Github { .. } => "github",
            Target::Jenkins { .. } => "jenkins",
        }
    }
}

/// The baseline to fetch for an event from GitHub or Jenkins. `fetched`
/// is the event's own log fetch: for a whole workflow run, it names the
/// failed jobs.
fn target(event: &EventRow, payload: &Value, fetched: Option<&Value>) -> Option<Target> {
    match event.source.as_str() {
        "github" => {
            let gh = &payload["github"];
            let jobs = match gh["kind"].as_str()? {
                "workflow_job" => vec![gh["job_name"].as_str()?.to_string()],
                _ => fetched
                    .and_then(|d| d["jobs"].as_array())
                    .into_iter()
                    .flatten()
                    .filter(|j| j.get("error").is_none())
                    .filter_map(|j| j["name"].as_str().map(str::to_string))
                    .collect(),
            };
            Some(Target::Github {
                repo: gh["repository"].as_str()?.to_string(),
                run_id: gh["run_id"].as_u64()?,
                workflow_id: gh["workflow_id"].as_u64(),
                branch: gh["head_branch"].as_str().map(str::to_string),
                jobs,
            })
        }
        "jenkins" => Some(Target::Jenkins {
            job_url: payload["jenkins"]["job_url"]
                .as_str()
                .or(event.job_name.as_deref())?
                .to_string(),
        }),
        _ => None,
    }
}

/// Why a fetch ended without a stored baseline.
enum Miss {
    /// There is none to be had: recorded with this reason.
    None(String),
    /// The database failed: the step retries.
    Db(sqlx::Error),
    /// Another worker holds the run now: it fetches (or fetched).
    LeaseLost,
}

impl From<sqlx::Error> for Miss {
    fn from(e: sqlx::Error) -> Self {
        Miss::Db(e)
    }
}

impl From<ApiError> for Miss {
    fn from(e: ApiError) -> Self {
        Miss::None(e.to_string())
    }
}

impl LogFetcher {
    /// Stores the last green log of the event's job, or why there is none,
    /// unless that was recorded already (`sources`: what is recorded for
    /// the event; `log`: its log fetch, if one was made, now included).
    /// Only a database failure (or a lost lease) is an error.
    pub async fn ensure_baseline(
        &self,
        pool: &PgPool,
        lease: &Lease,
        event: &EventRow,
        sources: &Sources,
        log: Option<&Fetched>,
    ) -> Result<(), Failure> {
        let fetched = log.map(|f| &f.detail);
        let Some(target) = target(event, &sources.payload, fetched) else {
            return Ok(());
        };
        if sources.baseline.is_some() {
            return Ok(());
        }
        let source = target.source();
        let work = self.fetch_baseline(pool, lease, event, &target);
        let miss = match tokio::time::timeout(self.timeout, work).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(miss)) => miss,
            Err(_) => Miss::None(format!(
                "fetching it took longer than {}s",
                self.timeout.as_secs()
            )),
        };
        let reason = match miss {
            Miss::None(reason) => reason,
            Miss::Db(e) => return Err(e.into()),
            Miss::LeaseLost => return Err(lease_lost()),
        };
        tracing::info!(event_id = %event.id, source, reason, "no baseline log for this failure");
        let detail = json!({"target": format!("{target:?}")});
        if !baselines::record_none(pool, lease, event.id, source, &reason, &detail).await? {
            return Err(lease_lost());
        }
        Ok(())
    }

    async fn fetch_baseline(
        &self,
        pool: &PgPool,
        lease: &Lease,
        event: &EventRow,
        target: &Target,
    ) -> Result<(), Miss> {
        let Some(mut pending) = baselines::begin(pool, event.id, self.max_bytes).await? else {
            // Another run of this event (its shadow, or its live twin) recorded it.
            return Ok(());
        };
        let mut detail = match target {
            Target::Github {
                repo,
                run_id,
                workflow_id,
                branch,
                jobs,
            } => {
                let gh = self.github.as_deref().ok_or_else(|| {
                    Miss::None("GITHUB_TOKEN is not set, so the worker cannot fetch it".into())
                })?;
                let repo = github::full_name(repo)
                    .ok_or_else(|| Miss::None(format!("{repo:?} is not a repository")))?;
                let branch = branch
                    .as_deref()
                    .ok_or_else(|| Miss::None("the failure names no branch".into()))?;
                let wanted = Wanted {
                    run_id: *run_id,
                    workflow_id: *workflow_id,
                    branch,
                    jobs,
                };
                github_green(gh, &repo, &wanted, &mut pending).await?
            }
            Target::Jenkins { job_url } => {
                let jenkins = self.jenkins.as_deref().ok_or_else(|| {
                    Miss::None("JENKINS_URL is not set, so the worker cannot fetch it".into())
                })?;
                let url = jenkins.last_success_url(job_url).map_err(Miss::None)?;
                let resp = match jenkins.open(&url).await {
                    Err(ApiError::NotFound { .. }) => {
                        return Err(Miss::None(format!(
                            "job {job_url} has no successful build ({url} answered 404)"
                        )));
                    }
                    other => other?,
                };
                stream(&mut pending, resp).await?;
                json!({"console_url": url.as_str()})
            }
        };
        let (bytes, cut) = (pending.bytes(), pending.cut());
        detail["bytes_read"] = json!(bytes);
        detail["bytes_cut"] = json!(cut);
        let source = target.source();
        if !pending.commit(lease, source, &detail).await? {
            return Err(Miss::LeaseLost);
        }
        tracing::info!(event_id = %event.id, source, bytes, cut, "fetched the last green log");
        Ok(())
    }
}

fn lease_lost() -> Failure {
    Failure::transient("lease lost while storing the baseline log")
}

/// The GitHub job(s) whose last green log is wanted.
struct Wanted<'a> {
    run_id: u64,
    workflow_id: Option<u64>,
    branch: &'a str,
    jobs: &'a [String],
}

/// Finds the latest green run of the failure's workflow on its branch and
/// streams the logs of its jobs named like the failed ones.
async fn github_green(
    gh: &GithubClient,
    repo: &(String, String),
    wanted: &Wanted<'_>,
    pending: &mut Pending,
) -> Result<Value, Miss> {
    if wanted.jobs.is_empty() {
        return Err(Miss::None("no failed job is known by name".into()));
    }
    let workflow_id = match wanted.workflow_id {
        Some(id) => id,
        None => gh.run(repo, wanted.run_id).await?.workflow_id,
    };
    let branch = wanted.branch;
    let green = gh
        .last_green_run(repo, workflow_id, branch)
        .await?
        .ok_or_else(|| {
            Miss::None(format!(
                "workflow {workflow_id} has no successful run on branch {branch}"
            ))
        })?;
    let jobs = gh.run_jobs(repo, green.id).await?;
    let twins: Vec<_> = wanted
        .jobs
        .iter()
        .filter_map(|name| {
            jobs.iter()
                .find(|j| &j.name == name && j.conclusion.as_deref() == Some("success"))
        })
        .collect();
    if twins.is_empty() {
        return Err(Miss::None(format!(
            "successful run {} has no successful job named {:?}",
            green.id, wanted.jobs
        )));
    }
    let mut read = Vec::new();
    for job in twins {
        if wanted.jobs.len() > 1 {
            let header = format!(
                "##[group]faultline: log of job {:?} (id {})\n",
                job.name, job.id
            );
            pending.write(header.as_bytes()).await?;
        }
        let before = pending.bytes();
        let resp = gh.job_log(repo, job.id).await?;
        stream(pending, resp).await?;
        read.push(json!({"id": job.id, "name": job.name, "bytes": pending.bytes() - before}));
    }
    Ok(json!({
        "workflow_id": workflow_id,
        "branch": branch,
        "run_id": green.id,
        "run_number": green.run_number,
        "head_sha": green.head_sha,
        "jobs": read,
    }))
}

/// Streams a body into the baseline (head and tail kept under the cap).
async fn stream(pending: &mut Pending, mut resp: Response) -> Result<(), Miss> {
    let url = strip_query(resp.url());
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| Miss::None(format!("reading {url}: {e}")))?
    {
        pending.write(&chunk).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(source: &str) -> EventRow {
        EventRow {
            id: uuid::Uuid::nil(),
            dedup_key: "k".into(),
            source: source.into(),
            job_name: Some("ledger-api".into()),
            build_number: None,
            test_name: None,
            repository: None,
            commit_sha: None,
            log_name: None,
            log_bytes: 0,
            received_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn the_green_twin_is_named_by_the_failure() {
        let job = json!({"github": {"kind": "workflow_job", "repository": "o/r", "run_id": 3,
            "job_id": 7, "job_name": "test (ubuntu, 18)", "head_branch": "main", "workflow_id": null}});
        assert_eq!(
            target(&event("github"), &job, None),
            Some(Target::Github {
                repo: "o/r".into(),
                run_id: 3,
                workflow_id: None,
                branch: Some("main".into()),
                jobs: vec!["test (ubuntu, 18)".into()],
            })
        );
        let run = json!({"github": {"kind": "workflow_run", "repository": "o/r", "run_id": 3,
            "job_id": null, "head_branch": "dev", "workflow_id": 159038}});
        let fetched = json!({"run_id": 3, "jobs": [
            {"id": 1, "name": "lint", "bytes": 10},
            {"id": 2, "name": "test", "error": "404"}]});
        assert_eq!(
            target(&event("github"), &run, Some(&fetched)),
            Some(Target::Github {
                repo: "o/r".into(),
                run_id: 3,
                workflow_id: Some(159038),
                branch: Some("dev".into()),
                jobs: vec!["lint".into()],
            })
        );
        let jenkins = json!({"jenkins": {"job_url": "https://ci.example.com/job/ledger-api/"}});
        assert_eq!(
            target(&event("jenkins"), &jenkins, None),
            Some(Target::Jenkins {
                job_url: "https://ci.example.com/job/ledger-api/".into()
            })
        );
        assert_eq!(
            target(&event("jenkins"), &json!({}), None),
            Some(Target::Jenkins {
                job_url: "ledger-api".into()
            })
        );
        assert_eq!(target(&event("cli"), &json!({}), None), None);
    }
}
