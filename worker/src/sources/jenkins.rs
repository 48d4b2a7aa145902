//! Jenkins: a build's console text (`…/job/<name>/<n>/consoleText`), with
//! basic auth (`JENKINS_USER` + `JENKINS_API_TOKEN`). Console logs can be
//! gigabytes, so bodies are always streamed: the tool keeps only a capped
//! head or tail, the log fetch writes chunks as they arrive.

use std::{collections::VecDeque, time::Duration};

use faultline_shared::config::{
    self, ALLOWED_JENKINS_JOBS, AllowList, ConfigError, ExposeSecret, SecretString, Source, de,
};
use faultline_shared::tool;
use reqwest::{Response, Url};
use serde::Deserialize;
use serde_json::Value;
use sqlx::PgPool;

use super::{
    ApiError, Gate, jenkins_path::JobPath, now_epoch, read_at_most, send_error, status_error,
};
use crate::{http, tools::OUT_OF_SCOPE};

const SERVICE: &str = "Jenkins";

/// `JENKINS_*` settings; Jenkins is used only when `JENKINS_URL` is set.
#[derive(Debug, Clone)]
pub struct JenkinsConfig {
    /// Root of the Jenkins the worker talks to, e.g. `https://ci.example.com/`.
    pub url: Url,
    pub user: Option<String>,
    pub token: Option<SecretString>,
    /// Most console bytes one `jenkins_console` call keeps.
    pub console_max_bytes: usize,
    /// Per-read timeout of one request.
    pub timeout: Duration,
}

/// The variables behind [`JenkinsConfig`], as written.
#[derive(Deserialize)]
#[serde(default)]
struct Vars {
    #[serde(rename = "JENKINS_URL")]
    url: String,
    #[serde(rename = "JENKINS_USER", deserialize_with = "de::text_some")]
    user: Option<String>,
    #[serde(rename = "JENKINS_API_TOKEN", deserialize_with = "de::secret_some")]
    token: Option<SecretString>,
    /// At least 1024.
    #[serde(rename = "JENKINS_CONSOLE_MAX_BYTES", deserialize_with = "de::parsed")]
    console_max_bytes: u64,
    #[serde(rename = "JENKINS_TIMEOUT_MS", deserialize_with = "de::millis")]
    timeout: Duration,
}

impl Default for Vars {
    fn default() -> Self {
        Self {
            url: String::new(),
            user: None,
            token: None,
            console_max_bytes: 256 * 1024,
            timeout: Duration::from_millis(20_000),
        }
    }
}

impl JenkinsConfig {
    /// `None` without a `JENKINS_URL` (then nothing else is read).
    pub fn load(source: &Source) -> Result<Option<Self>, ConfigError> {
        if source.get("JENKINS_URL").is_none() {
            return Ok(None);
        }
        let vars: Vars = source.load("")?;
        config::no_credentials("JENKINS_URL", vars.url.trim())?;
        let mut url = Url::parse(vars.url.trim())
            .map_err(|e| ConfigError::new("JENKINS_URL", &vars.url, e.to_string()))?;
        if !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        Ok(Some(Self {
            url,
            user: vars.user,
            token: vars.token,
            console_max_bytes: usize::try_from(vars.console_max_bytes.max(1024))
                .unwrap_or(usize::MAX),
            timeout: vars.timeout,
        }))
    }

    /// The variables [`JenkinsConfig::load`] reads.
    pub fn variables() -> Vec<String> {
        config::variables::<Vars>("")
    }
}

/// Which end of a console log to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Head,
    Tail,
}

/// A console log cut to a byte cap, on line boundaries.
#[derive(Debug, Clone, PartialEq)]
pub struct Capped {
    pub text: String,
    /// Line number of the first kept line (1-based).
    pub first_line: u64,
    /// Bytes read; for a head cut, what the server announced if it did.
    pub total_bytes: Option<u64>,
    pub truncated: bool,
}

/// Most bytes of a build's JSON read for its changes.
const MAX_BUILD_JSON: usize = 4 << 20;

pub struct JenkinsClient {
    cfg: JenkinsConfig,
    http: reqwest::Client,
    gate: Gate,
    /// `FAULTLINE_ALLOWED_JENKINS_JOBS`: [`Self::open`] reads the job back
    /// from every URL and refuses one outside it before any request.
    allowed: AllowList,
}

impl JenkinsClient {
    pub fn new(cfg: JenkinsConfig, pool: PgPool, allowed: AllowList) -> Self {
        Self {
            http: super::client(cfg.timeout),
            gate: Gate {
                pool,
                api: "jenkins",
                max_wait: Duration::from_secs(60),
            },
            cfg,
            allowed,
        }
    }

    /// Refuses a URL whose job is outside `FAULTLINE_ALLOWED_JENKINS_JOBS`
    /// (an `out of scope:` error the run records).
    fn in_scope(&self, url: &Url) -> Result<(), ApiError> {
        if self.allowed.allows_any_job() {
            return Ok(());
        }
        let why = match JobPath::of_url(&self.cfg.url, url) {
            Some(job) if self.allowed.allows_job(job.names()) => return Ok(()),
            Some(job) => format!("Jenkins job {}", job.names().join("/")),
            None => format!("{url} names no Jenkins job under JENKINS_URL, so it"),
        };
        Err(ApiError::Permanent {
            status: None,
            message: format!(
                "{OUT_OF_SCOPE} {why} is not in {ALLOWED_JENKINS_JOBS}: the worker reads nothing \
                 of it"
            ),
        })
    }

    pub fn console_max_bytes(&self) -> usize {
        self.cfg.console_max_bytes
    }

    /// `…/job/a/job/b/<build>/consoleText` for job `a/b` (folders).
    pub fn console_url(&self, job: &str, build: u64) -> Result<Url, String> {
        if build == 0 {
            return Err("build numbers start at 1".into());
        }
        Ok(JobPath::from_names(job)?.console_url(&self.cfg.url, build))
    }

    /// The console of the build a notification named (its `full_url`, or
    /// that URL + `consoleText`): only the job path and the build number
    /// are taken from it, checked, and the URL is rebuilt under
    /// `JENKINS_URL` ([`JobPath`]). The credentials only ever go to the
    /// configured Jenkins, and only for a build's console, whatever host,
    /// path, query or fragment the payload says (Jenkins' public root URL
    /// often differs from the one the worker reaches).
    pub fn resolve(&self, console_url: &str) -> Result<Url, String> {
        let (job, build) = JobPath::from_build_url(console_url)?;
        Ok(job.console_url(&self.cfg.url, build))
    }

    /// `…/job/<name>/lastSuccessfulBuild/consoleText` of the job a
    /// notification named (`job_url`: its absolute or relative URL, else
    /// the job's name), under `JENKINS_URL` like [`Self::resolve`].
    pub fn last_success_url(&self, job_url: &str) -> Result<Url, String> {
        let job = JobPath::from_job_url_or_names(job_url)?;
        Ok(job.url(&self.cfg.url, &["lastSuccessfulBuild", "consoleText"]))
    }

    /// Opens a console log; the body is left to stream.
    pub async fn open(&self, url: &Url) -> Result<Response, ApiError> {
        self.in_scope(url)?;
        let what = url.as_str();
        let (result, _) = http::retrying(super::policy(&self.gate), what, || async {
            self.gate.pass().await?;
            let mut req = self.http.get(url.clone());
            if let Some(user) = &self.cfg.user {
                req = req.basic_auth(user, self.cfg.token.as_ref().map(|t| t.expose_secret()));
            }
            let resp = req
                .send()
                .await
                .map_err(|e| send_error(SERVICE, what, &e))?;
            let status = resp.status();
            if status.is_success() {
                return Ok(resp);
            }
            let retry_after = http::retry_after(resp.headers());
            if let (429 | 503, Some(after)) = (status.as_u16(), retry_after) {
                self.gate
                    .block(now_epoch() + after.as_secs_f64(), "retry-after")
                    .await;
            }
            let detail = http::snippet(&read_at_most(resp, 2048).await);
            Err(status_error(SERVICE, what, status, retry_after, &detail))
        })
        .await;
        result
    }

    /// The files the build's changes touched, from its JSON
    /// (`<build>/api/json?tree=…`: a Pipeline's `changeSets`, a freestyle
    /// job's `changeSet`, each item's `affectedPaths`), for the build whose
    /// console is `console`; at most `max` paths, more marked `truncated`.
    /// Read at most 4 MB of it: a bigger answer is an error.
    pub async fn changed_files(
        &self,
        console: &Url,
        max: usize,
    ) -> Result<tool::ChangedFiles, ApiError> {
        let mut url = console.clone();
        let build = url
            .path_segments()
            .and_then(|mut s| s.nth_back(1).map(str::to_string))
            .unwrap_or_default();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop().push("api").push("json");
        }
        url.set_query(Some(
            "tree=changeSets[items[commitId,affectedPaths]],changeSet[items[commitId,affectedPaths]]",
        ));
        let resp = self.open(&url).await?;
        let text = read_at_most(resp, MAX_BUILD_JSON).await;
        let body: Value = serde_json::from_str(&text).map_err(|e| ApiError::Permanent {
            status: None,
            message: format!(
                "Jenkins build {build}'s JSON is not readable (over 4 MB, or not JSON): {e}"
            ),
        })?;
        let sets = body["changeSets"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .chain(
                body["changeSet"]
                    .is_object()
                    .then(|| body["changeSet"].clone()),
            );
        let mut files: Vec<String> = Vec::new();
        let mut truncated = false;
        for set in sets {
            for item in set["items"].as_array().into_iter().flatten() {
                for path in item["affectedPaths"].as_array().into_iter().flatten() {
                    let Some(path) = path.as_str() else { continue };
                    if files.iter().any(|f| f == path) {
                        continue;
                    }
                    if files.len() >= max {
                        truncated = true;
                        continue;
                    }
                    files.push(path.to_string());
                }
            }
        }
        Ok(tool::ChangedFiles {
            source: format!("build {build}"),
            files,
            truncated,
            error: None,
        })
    }

    /// Streams a console log, keeping at most `cap` bytes of one end.
    pub async fn console(&self, url: &Url, keep: Keep, cap: usize) -> Result<Capped, ApiError> {
        let resp = self.open(url).await?;
        let announced = resp.content_length();
        cap_stream(resp, keep, cap, announced)
            .await
            .map_err(|e| ApiError::transient(format!("reading Jenkins console {url}: {e}")))
    }
}

/// Reads a body keeping one end within `cap` bytes, cut on line
/// boundaries. Memory stays at `cap` plus one network chunk.
async fn cap_stream(
    mut resp: Response,
    keep: Keep,
    cap: usize,
    announced: Option<u64>,
) -> Result<Capped, reqwest::Error> {
    let mut kept: VecDeque<u8> = VecDeque::with_capacity(cap.min(1 << 20));
    let (mut total, mut dropped_lines, mut truncated) = (0u64, 0u64, false);
    while let Some(chunk) = resp.chunk().await? {
        total += chunk.len() as u64;
        match keep {
            Keep::Head => {
                let take = (cap - kept.len()).min(chunk.len());
                kept.extend(&chunk[..take]);
                if take < chunk.len() {
                    truncated = true;
                    break;
                }
            }
            Keep::Tail => {
                kept.extend(&chunk[..]);
                if kept.len() > cap {
                    truncated = true;
                    let excess = kept.len() - cap;
                    dropped_lines += kept.drain(..excess).filter(|b| *b == b'\n').count() as u64;
                }
            }
        }
    }
    let mut bytes: Vec<u8> = kept.into();
    let mut first_line = 1;
    if truncated {
        match keep {
            // Drop the partial last line.
            Keep::Head => {
                if let Some(end) = bytes.iter().rposition(|b| *b == b'\n') {
                    bytes.truncate(end + 1);
                }
            }
            // Drop the partial first line.
            Keep::Tail => {
                if let Some(start) = bytes.iter().position(|b| *b == b'\n') {
                    bytes.drain(..=start);
                    dropped_lines += 1;
                }
                first_line += dropped_lines;
            }
        }
    }
    Ok(Capped {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        first_line,
        total_bytes: match keep {
            Keep::Tail => Some(total),
            Keep::Head if truncated => announced,
            Keep::Head => Some(total),
        },
        truncated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> JenkinsClient {
        let source = [("JENKINS_URL", "http://jenkins.internal:8080/ci")]
            .into_iter()
            .collect();
        let cfg = JenkinsConfig::load(&source).unwrap().unwrap();
        let pool = sqlx::postgres::PgPoolOptions::new()
            .connect_lazy("postgres://localhost/unused")
            .unwrap();
        JenkinsClient::new(cfg, pool, AllowList::default())
    }

    // The client's pool needs a runtime, even unused.
    #[tokio::test]
    async fn the_last_green_console_is_read_under_jenkins_url() {
        let c = client();
        let want = "http://jenkins.internal:8080/ci/job/ledger-api/lastSuccessfulBuild/consoleText";
        for job in [
            "https://ci.example.com/job/ledger-api/",
            "job/ledger-api/",
            "ledger-api",
        ] {
            assert_eq!(c.last_success_url(job).unwrap().as_str(), want, "{job}");
        }
        assert_eq!(
            c.last_success_url("https://ci.example.com/myjob/job/team/job/api%20v2")
                .unwrap()
                .as_str(),
            "http://jenkins.internal:8080/ci/job/team/job/api%20v2/lastSuccessfulBuild/consoleText"
        );
        assert!(c.last_success_url("job/../../credentials").is_err());
        assert!(c.last_success_url("job/%2e%2e/%2E%2e/credentials").is_err());
        assert!(
            c.last_success_url("https://evil.example/x/job/%2e%2e/%2e%2e/y")
                .is_err()
        );
        assert!(c.last_success_url("").is_err());
    }
}
