//! Fetching a webhook event's log before the run's first iteration (issue 5).
//!
//! GitHub deliveries and Jenkins notifications without an inline log store
//! an empty log and what is needed to fetch it. The first step of the run
//! streams the log into the event's chunk store and records the fetch in
//! `log_fetches`, in one transaction fenced by the run's lease, so a resumed
//! or retried run never fetches again once that committed. A transient
//! failure retries the step with the Postgres-held backoff; a log that is
//! gone (404/410, expired) or cannot be fetched (not configured, bad
//! credentials) is a permanent [`Failure`] and the run goes to review
//! with that reason: the event is never lost.

use std::{sync::Arc, time::Duration};

use faultline_shared::storage::{
    events::EventRow,
    log_fetches::{self, Fetched, Pending, Sources},
    runs::Lease,
};
use reqwest::Response;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::failure::Failure;

use super::{
    ApiError,
    github::{self, GithubClient},
    jenkins::JenkinsClient,
};

/// A log that cannot be had: it expired, or the worker cannot reach it.
/// Permanent: the run goes to review with the reason.
pub(super) fn unavailable(why: impl std::fmt::Display) -> Failure {
    Failure::permanent(format!("log unavailable: {why}"))
}

/// A GitHub or Jenkins error while fetching a log: transient ones retry
/// the step (not before the server's `Retry-After`); a 404/410 means the
/// log expired or was deleted.
fn api_failure(e: ApiError) -> Failure {
    match e {
        e @ ApiError::Transient { .. } => e.into(),
        ApiError::NotFound { message, .. } => {
            unavailable(format!("{message} (the log expired or was deleted)"))
        }
        ApiError::Permanent { message, .. } => unavailable(message),
    }
}

/// Where an event's log is.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    GithubJob {
        repo: String,
        job_id: u64,
    },
    GithubRun {
        repo: String,
        run_id: u64,
    },
    JenkinsConsole {
        url: String,
    },
    /// A `log_url` given to the API that names no log the worker can fetch
    /// with the clients it has; the run goes to review saying so.
    Unfetchable {
        url: String,
        why: String,
    },
}

/// The log to fetch for an event that arrived without one.
fn target(event: &EventRow, payload: &Value) -> Option<Target> {
    if event.log_bytes > 0 {
        return None;
    }
    match event.source.as_str() {
        "github" => {
            let gh = &payload["github"];
            let repo = gh["repository"].as_str()?.to_string();
            match (gh["kind"].as_str()?, gh["job_id"].as_u64()) {
                ("workflow_job", Some(job_id)) => Some(Target::GithubJob { repo, job_id }),
                ("workflow_run", _) => Some(Target::GithubRun {
                    repo,
                    run_id: gh["run_id"].as_u64()?,
                }),
                _ => None,
            }
        }
        "jenkins" if payload["jenkins"]["log_inline"] == false => Some(Target::JenkinsConsole {
            url: payload["jenkins"]["console_url"].as_str()?.to_string(),
        }),
        "api" => Some(log_url_target(payload["api"]["log_url"].as_str()?)),
        _ => None,
    }
}

/// What a `log_url` submitted to the API names. The worker fetches only
/// from the CI servers it is configured for, with their credentials and
/// allow-lists: a GitHub Actions job or run (the web page or the REST
/// URL, on any GitHub host) or a Jenkins build (rebuilt under
/// `JENKINS_URL`, as for a notification). Any other URL is not fetched:
/// an arbitrary URL would let a caller make the worker reach hosts inside
/// its network.
fn log_url_target(url: &str) -> Target {
    let unfetchable = |why: &str| Target::Unfetchable {
        url: url.to_string(),
        why: why.to_string(),
    };
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return unfetchable("not an absolute URL");
    };
    let segments: Vec<&str> = parsed
        .path_segments()
        .map(|s| s.filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let id = |s: &str| s.parse::<u64>().ok().filter(|n| *n > 0);
    // REST: `[api/v3/]repos/{o}/{r}/actions/jobs/{id}[/logs]`,
    // `…/actions/runs/{id}[/logs]`; web: `{o}/{r}/actions/runs/{run}[/job/{job}]`.
    let rest = match segments.iter().position(|s| *s == "repos") {
        Some(at) => &segments[at + 1..],
        None => &segments[..],
    };
    match rest {
        [o, r, "actions", "jobs", job] | [o, r, "actions", "jobs", job, "logs"] => {
            if let Some(job_id) = id(job) {
                return Target::GithubJob {
                    repo: format!("{o}/{r}"),
                    job_id,
                };
            }
        }
        [o, r, "actions", "runs", run, tail @ ..] => {
            let repo = format!("{o}/{r}");
            let run_id = id(run);
            match (tail, run_id) {
                ([] | ["logs"], Some(run_id)) => return Target::GithubRun { repo, run_id },
                (["job", job] | ["attempts", _, "job", job], Some(_)) => {
                    if let Some(job_id) = id(job) {
                        return Target::GithubJob { repo, job_id };
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
    if super::jenkins_path::JobPath::from_build_url(url).is_ok() {
        return Target::JenkinsConsole {
            url: url.to_string(),
        };
    }
    unfetchable(
        "it names neither a GitHub Actions job or run nor a Jenkins build; \
         the worker fetches logs only from the CI servers it is configured for \
         (send the log itself in `log`)",
    )
}

/// Fetches logs with whichever CI clients are configured.
#[derive(Clone)]
pub struct LogFetcher {
    pub github: Option<Arc<GithubClient>>,
    pub jenkins: Option<Arc<JenkinsClient>>,
    /// Longest log stored: a longer one keeps its head and tail, and the
    /// cut is marked in the log and recorded.
    pub max_bytes: u64,
    /// Bound on one whole fetch.
    pub timeout: Duration,
}

impl LogFetcher {
    /// Stores the event's log if it arrived without one and was not fetched
    /// yet (`sources`: what is recorded for the event). `Ok(None)`: nothing
    /// to do; `Ok(Some)`: stored now.
    pub async fn ensure(
        &self,
        pool: &PgPool,
        lease: &Lease,
        event: &EventRow,
        sources: &Sources,
    ) -> Result<Option<Fetched>, Failure> {
        let Some(target) = target(event, &sources.payload) else {
            return Ok(None);
        };
        if sources.log.is_some() {
            return Ok(None);
        }
        let work = self.fetch(pool, lease, event, &target);
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(Failure::transient(format!(
                "fetching the log took longer than {}s",
                self.timeout.as_secs()
            ))),
        }
    }

    async fn fetch(
        &self,
        pool: &PgPool,
        lease: &Lease,
        event: &EventRow,
        target: &Target,
    ) -> Result<Option<Fetched>, Failure> {
        let Some(mut pending) = log_fetches::begin(pool, event.id, self.max_bytes).await? else {
            // Another run of this event (its shadow, or its live twin) stored it.
            return Ok(log_fetches::get(pool, event.id).await?);
        };
        let (source, mut detail) = match target {
            Target::GithubJob { repo, job_id } => {
                let (gh, repo) = self.github(repo)?;
                let resp = gh.job_log(&repo, *job_id).await.map_err(api_failure)?;
                let url = resp.url().clone();
                stream(&mut pending, resp).await?;
                (
                    "github",
                    json!({"job_id": job_id, "log_url": strip_query(&url)}),
                )
            }
            Target::GithubRun { repo, run_id } => {
                let (gh, repo) = self.github(repo)?;
                self.github_run(gh, &repo, *run_id, &mut pending).await?
            }
            Target::JenkinsConsole { url } => {
                let jenkins = self.jenkins.as_ref().ok_or_else(|| {
                    unavailable("the notification carried no log and JENKINS_URL is not set, so the worker cannot fetch the console",
                    )
                })?;
                let url = jenkins.resolve(url).map_err(unavailable)?;
                let resp = jenkins.open(&url).await.map_err(api_failure)?;
                stream(&mut pending, resp).await?;
                ("jenkins", json!({"console_url": url.as_str()}))
            }
            Target::Unfetchable { url, why } => {
                return Err(unavailable(format!(
                    "log_url {url:?} is not fetched: {why}"
                )));
            }
        };
        let (bytes, cut) = (pending.bytes(), pending.cut());
        detail["bytes_read"] = json!(bytes);
        detail["bytes_cut"] = json!(cut);
        if !pending.commit(lease, source, &detail).await? {
            // Our lease was taken over: the new holder fetches (or fetched).
            return Err(Failure::transient("lease lost while fetching the log"));
        }
        tracing::info!(event_id = %event.id, source, bytes, cut, "fetched the event's log");
        Ok(Some(Fetched {
            source: source.to_string(),
            bytes,
            truncated: cut > 0,
            detail,
        }))
    }

    fn github(&self, repo: &str) -> Result<(&GithubClient, (String, String)), Failure> {
        let gh = self.github.as_deref().ok_or_else(|| {
            unavailable("GITHUB_TOKEN is not set, so the worker cannot fetch GitHub Actions logs")
        })?;
        let repo = github::full_name(repo)
            .ok_or_else(|| unavailable(format!("{repo:?} is not an owner/name repository")))?;
        Ok((gh, repo))
    }

    /// A workflow run's failed jobs, each under a header line, concatenated.
    async fn github_run(
        &self,
        gh: &GithubClient,
        repo: &(String, String),
        run_id: u64,
        pending: &mut Pending,
    ) -> Result<(&'static str, Value), Failure> {
        let jobs = gh.run_jobs(repo, run_id).await.map_err(api_failure)?;
        let failed: Vec<_> = jobs
            .iter()
            .filter(|j| matches!(j.conclusion.as_deref(), Some("failure" | "timed_out")))
            .collect();
        if failed.is_empty() {
            return Err(unavailable(format!(
                "run {run_id} of {}/{} lists no failed job",
                repo.0, repo.1
            )));
        }
        let (mut read, mut detail) = (0, Vec::new());
        for job in failed {
            let header = format!(
                "##[group]faultline: log of job {:?} (id {}, {})\n",
                job.name,
                job.id,
                job.conclusion.as_deref().unwrap_or("failed")
            );
            pending.write(header.as_bytes()).await?;
            match gh.job_log(repo, job.id).await {
                Ok(resp) => {
                    read += 1;
                    let before = pending.bytes();
                    stream(pending, resp).await?;
                    detail.push(
                        json!({"id": job.id, "name": job.name, "bytes": pending.bytes() - before}),
                    );
                }
                // One expired job log does not hide the others.
                Err(ApiError::NotFound { message, .. }) => {
                    let line = format!("faultline: log unavailable: {message}\n");
                    pending.write(line.as_bytes()).await?;
                    detail.push(json!({"id": job.id, "name": job.name, "error": message}));
                }
                Err(e) => return Err(api_failure(e)),
            }
        }
        if read == 0 {
            return Err(unavailable(format!(
                "no failed job of run {run_id} in {}/{} has a log any more: {}",
                repo.0,
                repo.1,
                Value::Array(detail)
            )));
        }
        Ok(("github", json!({"run_id": run_id, "jobs": detail})))
    }
}

/// Streams a body into the log (the writer keeps head and tail under the cap).
async fn stream(pending: &mut Pending, mut resp: Response) -> Result<(), Failure> {
    let url = strip_query(resp.url());
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| Failure::transient(format!("reading the log from {url}: {e}")))?
    {
        pending.write(&chunk).await?;
    }
    Ok(())
}

/// A URL without its query (storage URLs carry signed tokens there).
pub(super) fn strip_query(url: &reqwest::Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(source: &str, log_bytes: i64) -> EventRow {
        EventRow {
            id: uuid::Uuid::nil(),
            dedup_key: "k".into(),
            source: source.into(),
            job_name: None,
            build_number: None,
            test_name: None,
            repository: None,
            commit_sha: None,
            log_name: None,
            log_bytes,
            received_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn only_events_without_a_log_are_fetched() {
        let job = json!({"github": {"kind": "workflow_job", "repository": "o/r", "job_id": 7, "run_id": 3}});
        let run = json!({"github": {"kind": "workflow_run", "repository": "o/r", "job_id": null, "run_id": 3}});
        assert_eq!(
            target(&event("github", 0), &job),
            Some(Target::GithubJob {
                repo: "o/r".into(),
                job_id: 7
            })
        );
        assert_eq!(
            target(&event("github", 0), &run),
            Some(Target::GithubRun {
                repo: "o/r".into(),
                run_id: 3
            })
        );
        assert_eq!(target(&event("github", 10), &job), None);
        let inline =
            json!({"jenkins": {"log_inline": true, "console_url": "http://j/job/x/1/consoleText"}});
        let fetch = json!({"jenkins": {"log_inline": false, "console_url": "http://j/job/x/1/consoleText"}});
        assert_eq!(target(&event("jenkins", 0), &inline), None);
        assert_eq!(
            target(&event("jenkins", 0), &fetch),
            Some(Target::JenkinsConsole {
                url: "http://j/job/x/1/consoleText".into()
            })
        );
        assert_eq!(target(&event("cli", 0), &json!({})), None);
    }

    #[test]
    fn a_log_url_is_fetched_only_from_a_ci_server_it_names() {
        let api = |url: &str| target(&event("api", 0), &json!({"api": {"log_url": url}}));
        let job = |repo: &str, job_id| {
            Some(Target::GithubJob {
                repo: repo.into(),
                job_id,
            })
        };
        let run = |repo: &str, run_id| {
            Some(Target::GithubRun {
                repo: repo.into(),
                run_id,
            })
        };
        assert_eq!(
            api("https://github.com/o/r/actions/runs/3/job/7"),
            job("o/r", 7)
        );
        assert_eq!(
            api("https://github.com/o/r/actions/runs/3/attempts/2/job/7"),
            job("o/r", 7)
        );
        assert_eq!(api("https://github.com/o/r/actions/runs/3"), run("o/r", 3));
        assert_eq!(
            api("https://api.github.com/repos/o/r/actions/jobs/7/logs"),
            job("o/r", 7)
        );
        assert_eq!(
            api("https://ghe.example/api/v3/repos/o/r/actions/runs/3/logs"),
            run("o/r", 3)
        );
        assert_eq!(
            api("https://ci.example/job/a/job/b/12/consoleText"),
            Some(Target::JenkinsConsole {
                url: "https://ci.example/job/a/job/b/12/consoleText".into()
            })
        );
        for other in [
            "http://169.254.169.254/latest/meta-data/",
            "https://example.com/build.log",
            "https://github.com/o/r/actions/runs/x/job/7",
            "https://github.com/o/r/actions/runs/0",
        ] {
            assert!(
                matches!(api(other), Some(Target::Unfetchable { .. })),
                "{other}"
            );
        }
        // A log sent inline is never replaced by a fetch.
        assert_eq!(
            target(
                &event("api", 10),
                &json!({"api": {"log_url": "https://github.com/o/r/actions/runs/3"}})
            ),
            None
        );
        assert_eq!(
            target(&event("api", 0), &json!({"api": {"log_url": null}})),
            None
        );
    }
}
