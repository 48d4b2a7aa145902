//! Re-running what is transient (issue 32 item 5, opt-in with
//! `NOTIFY_RERUN_REPOSITORIES`): when a verdict says `infrastructure` or
//! `flaky` with confidence at or above `NOTIFY_RERUN_MIN_CONFIDENCE`, the
//! failed jobs run again once — GitHub: the workflow run's "re-run failed
//! jobs"; Jenkins: a new build of the job with the failed build's
//! parameters. Never twice for one failure: the request is journaled in
//! `reruns` (keyed by the failure) before it is sent, and a deliverer that
//! finds it journaled but unanswered (the last one died mid-request) asks
//! the CI system whether the re-run exists before asking for it.

use faultline_shared::{
    Origin,
    config::{AllowList, ExposeSecret},
    storage::{
        events::EventRow,
        reruns::{self, Begun, NewRerun},
        runs::RunRow,
    },
};
use reqwest::Url;
use serde_json::Value;
use sqlx::PgPool;
use tracing::info;

use super::deliver::GitHub;
use crate::sources::{jenkins::JenkinsConfig, jenkins_path::JobPath};

/// Most requests one delivery of a re-run makes (the run's state or the
/// job's next build, the check after a crash, the request), and the pull
/// requests' look-up of the comment target beside it: the outbox lock
/// outlives them all, so no second deliverer takes the row meanwhile.
pub const REQUESTS: u32 = 4;

/// What a verdict asks for, and why (or why not).
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Re-run: the origin and the confidence that allow it.
    Rerun { origin: Origin, confidence: f32 },
    /// Nothing to re-run, and why (for the log).
    Skip(String),
}

/// Whether a finished analysis's verdict asks for a re-run.
pub fn decide(result: Option<&Value>, min_confidence: f32) -> Decision {
    let Some(result) = result else {
        return Decision::Skip("no verdict".into());
    };
    let (origin, _) = Origin::of_result(result);
    if !matches!(origin, Origin::Infrastructure | Origin::Flaky) {
        return Decision::Skip(format!("origin {} is not transient", origin.as_str()));
    }
    let confidence = result["confidence"].as_f64().unwrap_or(0.0) as f32;
    if confidence < min_confidence {
        return Decision::Skip(format!(
            "confidence {confidence:.2} is below NOTIFY_RERUN_MIN_CONFIDENCE {min_confidence:.2}"
        ));
    }
    Decision::Rerun { origin, confidence }
}

/// The re-run of one failure: what identifies the failure, and the request.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// `POST {api}/repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs`:
    /// a new attempt of the same run id, so the failure of attempt `attempt`
    /// is re-run once whichever of its jobs is analysed first.
    Github {
        repo: String,
        run_id: u64,
        attempt: u64,
    },
    /// `POST {job}/buildWithParameters` (or `{job}/build` without
    /// parameters) under `JENKINS_URL`: keyed by the job and the commit, as
    /// a rebuild gets a new build number.
    Jenkins {
        job: JobPath,
        build: u64,
        commit: String,
        parameters: Vec<(String, String)>,
    },
}

impl Plan {
    /// The failure's key in `reruns`.
    pub fn key(&self) -> String {
        match self {
            Plan::Github { repo, run_id, .. } => {
                format!("github:{}:run:{run_id}", repo.to_lowercase())
            }
            Plan::Jenkins { job, commit, .. } => {
                format!(
                    "jenkins:{}:commit:{commit}",
                    job.names().join("/").to_lowercase()
                )
            }
        }
    }

    /// The URL the re-run is requested at (POSTed), under the configured
    /// GitHub API or `JENKINS_URL`; `None` without that CI system's settings.
    pub fn url(&self, github_api: Option<&str>, jenkins_root: Option<&Url>) -> Option<String> {
        match self {
            Plan::Github { repo, run_id, .. } => github_api
                .map(|api| format!("{api}/repos/{repo}/actions/runs/{run_id}/rerun-failed-jobs")),
            Plan::Jenkins {
                job, parameters, ..
            } => jenkins_root.map(|root| {
                let trigger = if parameters.is_empty() {
                    "build"
                } else {
                    "buildWithParameters"
                };
                job.url(root, &[trigger]).to_string()
            }),
        }
    }
}

/// The plan for an event, or why there is none.
pub fn plan(event: &EventRow, payload: &Value) -> Result<Plan, String> {
    match event.source.as_str() {
        "github" => {
            let g = &payload["github"];
            let repo = event
                .repository
                .clone()
                .or_else(|| g["repository"].as_str().map(str::to_string))
                .ok_or("the event names no repository")?;
            let run_id = g["run_id"]
                .as_u64()
                .ok_or("the event names no workflow run")?;
            Ok(Plan::Github {
                repo,
                run_id,
                attempt: g["run_attempt"].as_u64().unwrap_or(1),
            })
        }
        "jenkins" => {
            let j = &payload["jenkins"];
            let commit = event.commit_sha.clone().ok_or(
                "the build names no commit, so a rebuild could not be told from a new build",
            )?;
            let job_url = j["job_url"]
                .as_str()
                .ok_or("the event names no Jenkins job")?;
            let job = JobPath::from_job_url_or_names(job_url)?;
            let build = event
                .build_number
                .as_deref()
                .and_then(|b| b.parse().ok())
                .ok_or("the event names no build number")?;
            let mut parameters: Vec<(String, String)> = j["parameters"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    (k.clone(), v)
                })
                .collect();
            parameters.sort();
            Ok(Plan::Jenkins {
                job,
                build,
                commit,
                parameters,
            })
        }
        other => Err(format!("{other} events cannot be re-run")),
    }
}

/// Where the CI systems are, with their credentials.
pub(crate) struct Clients<'a> {
    pub pool: &'a PgPool,
    pub http: &'a reqwest::Client,
    pub github: Option<(&'a str, GitHub<'a>)>,
    pub jenkins: Option<&'a JenkinsConfig>,
    pub allowed: &'a AllowList,
}

/// How one delivery of the re-run went: `Ok` when it needs no retry (done,
/// refused, not eligible, already re-run; `true` when this delivery
/// answered a journaled re-run), `Err` for a transient failure the outbox
/// retries (the journal row stays `requested`).
pub(crate) async fn deliver(
    c: &Clients<'_>,
    run: &RunRow,
    event: &EventRow,
    payload: &Value,
    min_confidence: f32,
) -> Result<bool, String> {
    let (origin, confidence) = match decide(run.result.as_ref(), min_confidence) {
        Decision::Rerun { origin, confidence } => (origin, confidence),
        Decision::Skip(why) => {
            info!(run_id = %run.id, %why, "no re-run");
            return Ok(false);
        }
    };
    let plan = match plan(event, payload) {
        Ok(p) => p,
        Err(why) => {
            info!(run_id = %run.id, %why, "no re-run");
            return Ok(false);
        }
    };
    // Scope: the allow-lists hold for writes as for reads.
    let scope = match &plan {
        Plan::Github { repo, .. } => c.allowed.check_repository(repo),
        Plan::Jenkins { job, .. } if !c.allowed.allows_job(job.names()) => Err(format!(
            "Jenkins job {} is not in FAULTLINE_ALLOWED_JENKINS_JOBS",
            job.names().join("/")
        )),
        Plan::Jenkins { .. } => Ok(()),
    };
    if let Err(why) = scope {
        info!(run_id = %run.id, %why, "no re-run: out of scope");
        return Ok(false);
    }
    let Some(url) = plan.url(
        c.github.as_ref().map(|(api, _)| *api),
        c.jenkins.map(|j| &j.url),
    ) else {
        info!(run_id = %run.id, "no re-run: no credentials for the CI system");
        return Ok(false);
    };
    // GitHub re-runs a run's failed jobs only once the run has finished
    // (a job's failure arrives while its siblings still run): until then,
    // the outbox tries again later, and nothing is journaled. The same
    // answer says, after a crash, whether the re-run already exists.
    let github_run = match &plan {
        Plan::Github { repo, run_id, .. } => {
            let (status, answer) = github_run(c, repo, *run_id).await?;
            if status == 200 && answer["status"].as_str().is_some_and(|s| s != "completed") {
                return Err(format!(
                    "re-run: workflow run {run_id} is still {}; asking once it has finished",
                    answer["status"].as_str().unwrap_or_default()
                ));
            }
            Some((status, answer))
        }
        Plan::Jenkins { .. } => None,
    };
    let key = plan.key();
    let request = format!("POST {url}");
    let new = NewRerun {
        key: &key,
        run_id: run.id,
        source: &event.source,
        repository: event.repository.as_deref(),
        commit_sha: event.commit_sha.as_deref(),
        origin: origin.as_str(),
        confidence,
        request: &request,
    };
    let db = |e: sqlx::Error| format!("database: {e}");
    match reruns::begin(c.pool, &new).await.map_err(db)? {
        Begun::Fresh(_) => {}
        Begun::Pending(row) => {
            // An earlier attempt journaled it and may have sent it.
            match already_rerun(c, &plan, github_run, row.detail.as_deref()).await? {
                Check::Found(seen) => {
                    reruns::answer(c.pool, &key, "done", None, &seen)
                        .await
                        .map_err(db)?;
                    return Ok(true);
                }
                Check::Refused(status, why) => {
                    reruns::answer(c.pool, &key, "refused", Some(status), &why)
                        .await
                        .map_err(db)?;
                    return Ok(true);
                }
                Check::NotYet => {}
            }
        }
        // Answered by an attempt whose comment refresh may have failed.
        Begun::Answered(_) => return Ok(true),
        Begun::Taken(other) => {
            info!(run_id = %run.id, by = %other.run_id, %key, "already re-run for another analysis");
            return Ok(false);
        }
    }
    if let Plan::Jenkins { job, .. } = &plan {
        // The build the request will start is at least this one: what a
        // later deliverer looks for after a crash.
        if let Some(next) = jenkins_next_build(c, job).await? {
            reruns::note(c.pool, &key, &format!("{NEXT_BUILD}{next}"))
                .await
                .map_err(db)?;
        }
    }
    reruns::sending(c.pool, &key).await.map_err(db)?;
    let (status, detail) = send(c, &plan, &url).await?;
    match status {
        200..=299 => {
            info!(run_id = %run.id, %key, origin = origin.as_str(), "re-run requested");
            reruns::answer(c.pool, &key, "done", Some(status), &detail)
                .await
                .map_err(db)
                .map(|()| true)
        }
        // Rate-limited or the service failing: the outbox tries again later.
        429 | 500..=599 => Err(format!("re-run: {status}: {detail}")),
        403 if detail.to_lowercase().contains("rate limit") => {
            Err(format!("re-run: {status}: {detail}"))
        }
        // Refused (a run still in progress, too old, no permission, gone):
        // recorded, never retried.
        _ => {
            info!(run_id = %run.id, %key, status, %detail, "re-run refused");
            reruns::answer(c.pool, &key, "refused", Some(status), &detail)
                .await
                .map_err(db)
                .map(|()| true)
        }
    }
}

/// What the CI system says of a journaled, unanswered re-run.
enum Check {
    /// It exists: what shows it.
    Found(String),
    /// It never will: the status and why (recorded, not retried).
    Refused(u16, String),
    /// Not there: send the request.
    NotYet,
}

/// Prefix of the note a Jenkins re-run keeps before its request: the next
/// build number the job had.
const NEXT_BUILD: &str = "next build ";

/// Whether the CI system already has the re-run (after a crash between the
/// journal and the answer). `github_run`: GitHub's answer about the run,
/// read just before; `note`: the row's detail so far.
async fn already_rerun(
    c: &Clients<'_>,
    plan: &Plan,
    github_run: Option<(u16, Value)>,
    note: Option<&str>,
) -> Result<Check, String> {
    match plan {
        Plan::Github {
            run_id, attempt, ..
        } => {
            let (status, run) = github_run.ok_or("the run was not read")?;
            let message = run["message"].as_str().unwrap_or_default().to_string();
            match status {
                200 => Ok(run["run_attempt"]
                    .as_u64()
                    .filter(|a| a > attempt)
                    .map_or(Check::NotYet, |a| {
                        Check::Found(format!("found attempt {a} of run {run_id} after a restart"))
                    })),
                403 if message.to_lowercase().contains("rate limit") => {
                    Err(format!("re-run check: github answered 403: {message}"))
                }
                401 | 403 | 404 => Ok(Check::Refused(status, format!("run {run_id}: {message}"))),
                s => Err(format!("re-run check: github answered {s}")),
            }
        }
        Plan::Jenkins { job, .. } => {
            // Only a build from the number noted before the request counts
            // (a later push's build is not the re-run).
            let Some(next) = note
                .and_then(|n| n.strip_prefix(NEXT_BUILD))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                return Ok(Check::NotYet);
            };
            let cfg = c.jenkins.ok_or("no JENKINS_URL")?;
            let mut url = job.url(&cfg.url, &["api", "json"]);
            url.set_query(Some("tree=lastBuild[number]"));
            let (status, body) = jenkins_request(cfg, c.http.get(url)).await?;
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            match status {
                200 => Ok(v["lastBuild"]["number"]
                    .as_u64()
                    .filter(|n| *n >= next)
                    .map_or(Check::NotYet, |n| {
                        Check::Found(format!("found build {n} after a restart"))
                    })),
                401 | 403 | 404 => Ok(Check::Refused(status, format!("Jenkins answered {status}"))),
                s => Err(format!("re-run check: Jenkins answered {s}")),
            }
        }
    }
}

/// GitHub's answer about workflow run `run_id`: status and JSON.
async fn github_run(c: &Clients<'_>, repo: &str, run_id: u64) -> Result<(u16, Value), String> {
    let (api, gh) = c.github.as_ref().ok_or("no GitHub token")?;
    gh.request(
        c.http
            .get(format!("{api}/repos/{repo}/actions/runs/{run_id}")),
    )
    .await
}

/// The job's next build number, when Jenkins says it.
async fn jenkins_next_build(c: &Clients<'_>, job: &JobPath) -> Result<Option<u64>, String> {
    let cfg = c.jenkins.ok_or("no JENKINS_URL")?;
    let mut url = job.url(&cfg.url, &["api", "json"]);
    url.set_query(Some("tree=nextBuildNumber"));
    let (status, body) = jenkins_request(cfg, c.http.get(url)).await?;
    if status != 200 {
        return Ok(None);
    }
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    Ok(v["nextBuildNumber"].as_u64())
}

/// Sends the re-run request to `url` ([`Plan::url`]): the status and a
/// short detail.
async fn send(c: &Clients<'_>, plan: &Plan, url: &str) -> Result<(u16, String), String> {
    match plan {
        Plan::Github { run_id, .. } => {
            let (_, gh) = c.github.as_ref().ok_or("no GitHub token")?;
            let (status, answer) = gh
                .request(c.http.post(url).json(&serde_json::json!({})))
                .await?;
            let detail = answer["message"].as_str().map_or_else(
                || format!("re-run of the failed jobs of run {run_id}"),
                str::to_string,
            );
            Ok((status, detail))
        }
        Plan::Jenkins {
            job, parameters, ..
        } => {
            let cfg = c.jenkins.ok_or("no JENKINS_URL")?;
            let (status, body) = jenkins_request(cfg, c.http.post(url).form(parameters)).await?;
            let detail = if (200..300).contains(&status) {
                format!(
                    "queued a build of {} with {} parameter(s)",
                    job.names().join("/"),
                    parameters.len()
                )
            } else {
                body.chars().take(200).collect()
            };
            Ok((status, detail))
        }
    }
}

/// One Jenkins request with the configured credentials: status and body
/// (at most 64 KiB of it).
async fn jenkins_request(
    cfg: &JenkinsConfig,
    mut req: reqwest::RequestBuilder,
) -> Result<(u16, String), String> {
    if let Some(user) = &cfg.user {
        req = req.basic_auth(user, cfg.token.as_ref().map(|t| t.expose_secret()));
    }
    let resp = req
        .header("user-agent", "faultline-notify")
        .send()
        .await
        .map_err(|e| format!("jenkins: {e}"))?;
    let status = resp.status().as_u16();
    let mut resp = resp;
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("jenkins: {e}"))? {
        if bytes.len() + chunk.len() > 64 * 1024 {
            break;
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_confident_transient_verdict_asks_for_a_re_run() {
        let v = |origin: &str, confidence: f64| json!({"origin": origin, "confidence": confidence});
        assert_eq!(
            decide(Some(&v("infrastructure", 0.9)), 0.7),
            Decision::Rerun {
                origin: Origin::Infrastructure,
                confidence: 0.9
            }
        );
        assert!(matches!(
            decide(Some(&v("flaky", 0.75)), 0.7),
            Decision::Rerun { .. }
        ));
        assert!(
            matches!(decide(Some(&v("flaky", 0.5)), 0.7), Decision::Skip(w) if w.contains("below"))
        );
        assert!(
            matches!(decide(Some(&v("this_change", 0.99)), 0.7), Decision::Skip(w) if w.contains("not transient"))
        );
        assert!(matches!(decide(None, 0.7), Decision::Skip(_)));
    }

    fn event(source: &str, commit: Option<&str>) -> EventRow {
        EventRow {
            id: uuid::Uuid::nil(),
            dedup_key: String::new(),
            source: source.into(),
            job_name: Some("team/app".into()),
            build_number: Some("41".into()),
            test_name: None,
            repository: Some("octo/app".into()),
            commit_sha: commit.map(str::to_string),
            log_name: None,
            log_bytes: 0,
            received_at: chrono::Utc::now(),
        }
    }

    #[test]
    fn a_failure_is_keyed_so_that_its_re_run_is_not_re_run_again() {
        let gh = plan(
            &event("github", Some("abc")),
            &json!({"github": {"run_id": 30433700, "run_attempt": 1}}),
        )
        .unwrap();
        // A second attempt of the same run (the re-run itself) has the same key.
        let again = plan(
            &event("github", Some("abc")),
            &json!({"github": {"run_id": 30433700, "run_attempt": 2}}),
        )
        .unwrap();
        assert_eq!(gh.key(), "github:octo/app:run:30433700");
        assert_eq!(gh.key(), again.key());
        assert_eq!(
            gh.url(Some("https://api.github.com"), None).as_deref(),
            Some("https://api.github.com/repos/octo/app/actions/runs/30433700/rerun-failed-jobs")
        );
        let payload = json!({"jenkins": {"job_url": "job/team/job/app/",
                                         "parameters": {"TARGET": "linux", "DEBUG": true}}});
        let j = plan(&event("jenkins", Some("abc")), &payload).unwrap();
        assert_eq!(j.key(), "jenkins:team/app:commit:abc");
        let Plan::Jenkins {
            build, parameters, ..
        } = &j
        else {
            panic!("{j:?}")
        };
        assert_eq!(*build, 41);
        assert_eq!(
            parameters,
            &[
                ("DEBUG".into(), "true".into()),
                ("TARGET".into(), "linux".into())
            ]
        );
        let root = Url::parse("https://ci.example.com/").unwrap();
        assert_eq!(
            j.url(None, Some(&root)).as_deref(),
            Some("https://ci.example.com/job/team/job/app/buildWithParameters")
        );
        // Without a commit a rebuild's failure could not be told from a new one.
        assert!(
            plan(&event("jenkins", None), &payload)
                .unwrap_err()
                .contains("no commit")
        );
        assert!(plan(&event("api", Some("abc")), &json!({})).is_err());
    }
}
