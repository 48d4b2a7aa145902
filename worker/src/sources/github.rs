//! The GitHub API (REST + GraphQL) with a token: file contents at a commit,
//! blame, commits touching a path, code search, and Actions job logs.
//!
//! Rate limits: a reply with `x-ratelimit-remaining: 0` blocks GitHub for
//! every worker until `x-ratelimit-reset` ([`Gate`]); a 403/429 that says so
//! (or carries `retry-after`, GitHub's secondary limit) is transient and
//! retried after the reset. Everything else maps to a precise [`ApiError`].

use std::time::Duration;

use base64::Engine as _;
use faultline_shared::config::{
    self, ALLOWED_REPOSITORIES, AllowList, ConfigError, ExposeSecret, SecretString, Source, de,
};
use faultline_shared::tool;
use reqwest::{RequestBuilder, Response, StatusCode, Url};
use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::PgPool;

use super::{ApiError, Gate, now_epoch, read_at_most, send_error, status_error};
use crate::{http, tools::OUT_OF_SCOPE};

pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// Files listed per page of a change's files (GitHub's maximum).
const CHANGED_FILES_PAGE: usize = 100;
const SERVICE: &str = "GitHub";

/// `GITHUB_*` settings; GitHub is used only when `GITHUB_TOKEN` is set.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct GithubConfig {
    /// REST root: `https://api.github.com`, or `https://HOST/api/v3` (GHES).
    #[serde(rename = "GITHUB_API_URL")]
    pub api_url: String,
    /// Trimmed.
    #[serde(rename = "GITHUB_TOKEN", deserialize_with = "token")]
    pub token: SecretString,
    /// Per-read timeout of one request.
    #[serde(rename = "GITHUB_TIMEOUT_MS", deserialize_with = "de::millis")]
    pub timeout: Duration,
    /// Longest rate-limit reset a call waits for in-process.
    #[serde(
        rename = "GITHUB_RATE_LIMIT_MAX_WAIT_SECS",
        deserialize_with = "de::secs"
    )]
    pub max_wait: Duration,
}

impl Default for GithubConfig {
    fn default() -> Self {
        Self {
            api_url: DEFAULT_API_URL.into(),
            token: SecretString::default(),
            timeout: Duration::from_millis(20_000),
            max_wait: Duration::from_secs(60),
        }
    }
}

fn token<'de, D: serde::Deserializer<'de>>(d: D) -> Result<SecretString, D::Error> {
    Ok(String::deserialize(d)?.trim().into())
}

impl GithubConfig {
    /// `None` without a `GITHUB_TOKEN` (then nothing else is read).
    pub fn load(source: &Source) -> Result<Option<Self>, ConfigError> {
        if source.get("GITHUB_TOKEN").is_none() {
            return Ok(None);
        }
        let cfg: Self = source.load("")?;
        config::no_credentials("GITHUB_API_URL", &cfg.api_url)?;
        Url::parse(&cfg.api_url)
            .map_err(|e| ConfigError::new("GITHUB_API_URL", &cfg.api_url, e.to_string()))?;
        Ok(Some(Self {
            api_url: cfg.api_url.trim_end_matches('/').to_string(),
            ..cfg
        }))
    }

    /// The variables [`GithubConfig::load`] reads.
    pub fn variables() -> Vec<String> {
        config::variables::<Self>("")
    }

    /// The GraphQL endpoint that goes with the REST root.
    pub fn graphql_url(&self) -> String {
        match self.api_url.strip_suffix("/api/v3") {
            Some(host) => format!("{host}/api/graphql"),
            None => format!("{}/graphql", self.api_url),
        }
    }
}

/// `owner/name` of a repository, from `owner/name` or a clone URL; the
/// allow-list reads repositories the same way.
pub use faultline_shared::config::parse_repo;

/// Exactly `owner/name`, as a webhook's `repository.full_name` is: the
/// repository every API call for a GitHub event is built from (issue 14).
/// Anything longer, a clone URL included, is refused.
pub fn full_name(text: &str) -> Option<(String, String)> {
    let (owner, name) = text.split_once('/')?;
    if name.contains('/') {
        return None;
    }
    parse_repo(text).filter(|(o, n)| o == owner && n == name)
}

/// A file path inside a repository, checked so it cannot climb out of the
/// contents API (`..`) or smuggle a query.
pub fn check_path(path: &str) -> Result<Vec<&str>, String> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    if path.trim_matches('/').is_empty()
        || segments
            .iter()
            .any(|s| s.is_empty() || *s == "." || *s == "..")
    {
        return Err(format!(
            "path {path:?} is not a file path inside the repository"
        ));
    }
    Ok(segments)
}

/// A file's text at a commit.
#[derive(Debug, Clone)]
pub struct FileText {
    pub path: String,
    pub sha: String,
    pub size: u64,
    pub text: String,
}

/// One job of a workflow run.
#[derive(Debug, Clone, Deserialize)]
pub struct Job {
    pub id: u64,
    pub name: String,
    pub conclusion: Option<String>,
}

/// A workflow run, as the runs endpoints list it (the fields we use).
#[derive(Debug, Clone, Deserialize)]
pub struct RunRef {
    pub id: u64,
    pub workflow_id: u64,
    pub run_number: Option<u64>,
    pub head_sha: Option<String>,
    pub html_url: Option<String>,
}

/// Most files GitHub lists in a comparison of two commits.
const COMPARE_FILES: usize = 300;

/// A full or abbreviated commit SHA (and nothing a URL path could misread).
fn is_sha(s: &str) -> bool {
    (7..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

pub struct GithubClient {
    cfg: GithubConfig,
    http: reqwest::Client,
    gate: Gate,
    /// `FAULTLINE_ALLOWED_REPOSITORIES`: every call checks its repository
    /// first, so the token reaches no other, whoever asks.
    allowed: AllowList,
}

/// The bytes of a contents-API answer whose `encoding` is `base64`
/// (GitHub wraps the text at 60 columns).
pub(crate) fn decode_contents(body: &Value) -> Result<Vec<u8>, base64::DecodeError> {
    let encoded: String = body["content"]
        .as_str()
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(encoded)
}

impl GithubClient {
    pub fn new(cfg: GithubConfig, pool: PgPool, allowed: AllowList) -> Self {
        let gate = Gate {
            pool,
            api: "github",
            max_wait: cfg.max_wait,
        };
        Self {
            http: super::client(cfg.timeout),
            cfg,
            gate,
            allowed,
        }
    }

    /// Refuses a repository outside `FAULTLINE_ALLOWED_REPOSITORIES`
    /// before any request (an `out of scope:` error the run records).
    fn in_scope(&self, repo: &(String, String)) -> Result<(), ApiError> {
        if self.allowed.allows_repository(&repo.0, &repo.1) {
            return Ok(());
        }
        Err(ApiError::Permanent {
            status: None,
            message: format!(
                "{OUT_OF_SCOPE} repository {}/{} is not in {ALLOWED_REPOSITORIES}: the worker \
                 reads nothing of it",
                repo.0, repo.1
            ),
        })
    }

    /// `{api}/repos/{owner}/{name}/{rest…}`, each segment percent-encoded.
    fn repo_url(&self, repo: &(String, String), rest: &[&str]) -> Url {
        let mut url = Url::parse(&self.cfg.api_url).expect("GITHUB_API_URL was validated");
        url.path_segments_mut()
            .expect("an http(s) URL has path segments")
            .pop_if_empty()
            .extend(["repos", repo.0.as_str(), repo.1.as_str()])
            .extend(rest);
        url
    }

    fn authed(&self, req: RequestBuilder) -> RequestBuilder {
        req.bearer_auth(self.cfg.token.expose_secret())
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
    }

    /// Sends a request (rebuilt per attempt) through the gate and the
    /// retries; returns the successful response with its body unread.
    async fn send(
        &self,
        what: &str,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<Response, ApiError> {
        let (result, _) = http::retrying(super::policy(&self.gate), what, || {
            self.send_once(what, &build)
        })
        .await;
        result
    }

    /// Records rate-limit headers and maps a failed status to an error.
    async fn check(&self, what: &str, resp: Response) -> Result<Response, ApiError> {
        let headers = resp.headers();
        let number = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
        };
        let (remaining, reset) = (number("x-ratelimit-remaining"), number("x-ratelimit-reset"));
        let exhausted = remaining == Some(0.0);
        if let (true, Some(reset)) = (exhausted, reset) {
            self.gate.block(reset, "x-ratelimit-remaining: 0").await;
        }
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let retry_after = http::retry_after(headers);
        let limited = matches!(
            status,
            StatusCode::FORBIDDEN | StatusCode::TOO_MANY_REQUESTS
        ) && (exhausted || retry_after.is_some());
        let detail = github_message(&read_at_most(resp, 4096).await);
        if limited {
            let until_reset = reset
                .filter(|_| exhausted)
                .map(|r| Duration::from_secs_f64((r - now_epoch()).max(0.0)));
            return Err(ApiError::Transient {
                message: format!("GitHub rate limit ({status}) for {what}: {detail}"),
                retry_after: until_reset.or(retry_after),
            });
        }
        Err(status_error(SERVICE, what, status, retry_after, &detail))
    }

    async fn get_json(&self, what: &str, url: Url) -> Result<Value, ApiError> {
        let (result, _) = http::retrying(super::policy(&self.gate), what, || async {
            let resp = self.send_once(what, || self.http.get(url.clone())).await?;
            resp.json::<Value>()
                .await
                .map_err(|e| ApiError::transient(format!("reading GitHub's reply for {what}: {e}")))
        })
        .await;
        result
    }

    /// One gated attempt without the retry loop (the caller retries).
    async fn send_once(
        &self,
        what: &str,
        build: impl Fn() -> RequestBuilder,
    ) -> Result<Response, ApiError> {
        self.gate.pass().await?;
        let resp = self
            .authed(build())
            .send()
            .await
            .map_err(|e| send_error(SERVICE, what, &e))?;
        self.check(what, resp).await
    }

    /// A file's text at `reference` (contents API, base64; [`decode_contents`]).
    pub async fn file(
        &self,
        repo: &(String, String),
        path: &str,
        reference: &str,
    ) -> Result<FileText, ApiError> {
        self.in_scope(repo)?;
        let segments = check_path(path).map_err(|message| ApiError::Permanent {
            status: None,
            message,
        })?;
        let mut url = self.repo_url(repo, &["contents"]);
        url.path_segments_mut().expect("http URL").extend(&segments);
        url.query_pairs_mut().append_pair("ref", reference);
        let what = format!("file {path} at {reference} in {}/{}", repo.0, repo.1);
        let body = self.get_json(&what, url).await?;
        if body.is_array() {
            return Err(ApiError::Permanent {
                status: None,
                message: format!("{path} is a directory in {}/{}", repo.0, repo.1),
            });
        }
        let size = body["size"].as_u64().unwrap_or_default();
        if body["encoding"] != "base64" {
            return Err(ApiError::Permanent {
                status: None,
                message: format!(
                    "{path} ({size} bytes) is too large for the contents API (encoding {})",
                    body["encoding"]
                ),
            });
        }
        let bytes = decode_contents(&body).map_err(|e| ApiError::Permanent {
            status: None,
            message: format!("GitHub sent {path} with invalid base64: {e}"),
        })?;
        Ok(FileText {
            path: body["path"].as_str().unwrap_or(path).to_string(),
            sha: body["sha"].as_str().unwrap_or_default().to_string(),
            size,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    /// Commits touching `path` reachable from `reference`, newest first.
    pub async fn commits(
        &self,
        repo: &(String, String),
        path: Option<&str>,
        reference: Option<&str>,
        limit: u32,
    ) -> Result<Value, ApiError> {
        self.in_scope(repo)?;
        let mut url = self.repo_url(repo, &["commits"]);
        {
            let mut q = url.query_pairs_mut();
            if let Some(p) = path {
                q.append_pair("path", p);
            }
            if let Some(r) = reference {
                q.append_pair("sha", r);
            }
            q.append_pair("per_page", &limit.to_string());
        }
        let what = format!("commits of {}/{}", repo.0, repo.1);
        self.get_json(&what, url).await
    }

    /// The files the change under test touched: those of the open pull
    /// request whose head is `sha` (`GET …/commits/{sha}/pulls`, then
    /// `GET …/pulls/{n}/files`, 100 a page); else, for a push, those of
    /// every commit since the job's last pass `since` (`GET
    /// …/compare/{since}...{sha}`, whose `files` GitHub caps at 300); else
    /// the commit's own (`GET …/commits/{sha}`, 100 a page). At most `max`
    /// paths are read: a change of 10,000 files is read as its first
    /// `max`, `truncated`.
    pub async fn changed_files(
        &self,
        repo: &(String, String),
        sha: &str,
        since: Option<&str>,
        max: usize,
    ) -> Result<tool::ChangedFiles, ApiError> {
        self.in_scope(repo)?;
        let mut url = self.repo_url(repo, &["commits", sha, "pulls"]);
        url.query_pairs_mut().append_pair("per_page", "30");
        let what = format!("pull requests of commit {sha}");
        let pulls = self.get_json(&what, url).await?;
        let pull = pulls
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["state"] == "open")
            .find_map(|p| p["number"].as_u64());
        if let Some(base) = since.filter(|b| pull.is_none() && *b != sha && is_sha(b)) {
            let url = self.repo_url(repo, &["compare", &format!("{base}...{sha}")]);
            let short = faultline_shared::text::truncate_chars(base, 7);
            let what = format!("the commits since {short}");
            match self.get_json(&what, url).await {
                Ok(body) => {
                    let mut files: Vec<String> = body["files"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|f| f["filename"].as_str())
                        .map(str::to_string)
                        .collect();
                    let truncated = files.len() >= COMPARE_FILES || files.len() > max;
                    files.truncate(max);
                    return Ok(tool::ChangedFiles {
                        source: format!("the commits since {short}, the job's last pass"),
                        files,
                        truncated,
                        error: None,
                    });
                }
                // The last pass's commit is gone (a force-push) or
                // unrelated: the commit's own files stand in.
                Err(ApiError::NotFound { .. })
                | Err(ApiError::Permanent {
                    status: Some(422), ..
                }) => {}
                Err(e) => return Err(e),
            }
        }
        let (source, segments): (String, Vec<String>) = match pull {
            Some(n) => (
                format!("pull request #{n}"),
                vec!["pulls".into(), n.to_string(), "files".into()],
            ),
            None => (
                format!("commit {}", faultline_shared::text::truncate_chars(sha, 7)),
                vec!["commits".into(), sha.into()],
            ),
        };
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let mut files = Vec::new();
        let mut truncated = false;
        for page in 1.. {
            let mut url = self.repo_url(repo, &segments);
            url.query_pairs_mut()
                .append_pair("per_page", &CHANGED_FILES_PAGE.to_string())
                .append_pair("page", &page.to_string());
            let what = format!("files of {source}");
            let body = self.get_json(&what, url).await?;
            let listed = if pull.is_some() {
                &body
            } else {
                &body["files"]
            };
            let listed = listed.as_array().cloned().unwrap_or_default();
            let full = listed.len() >= CHANGED_FILES_PAGE;
            files.extend(
                listed
                    .iter()
                    .filter_map(|f| f["filename"].as_str())
                    .map(str::to_string),
            );
            if files.len() >= max {
                truncated = full || files.len() > max;
                files.truncate(max);
                break;
            }
            if !full {
                break;
            }
        }
        Ok(tool::ChangedFiles {
            source,
            files,
            truncated,
            error: None,
        })
    }

    /// Code search restricted to one repository: `q` is `<query>
    /// repo:<owner>/<name>`. REST `search/code` reads the legacy search
    /// grammar, where a qualifier filters the whole query wherever it
    /// stands (and parentheses are not grouping: GitHub ignores or refuses
    /// them, so `(<query>) repo:…` is no fix); callers pass a conjunction
    /// only (`tools::scope::check_search_query` refuses `OR`, parentheses
    /// and a trailing operator), so the qualifier also binds to all of it
    /// in the newer code-search grammar, where `a OR b repo:x` is
    /// `a OR (b repo:x)`.
    pub async fn search_code(
        &self,
        repo: &(String, String),
        query: &str,
        limit: u32,
    ) -> Result<Value, ApiError> {
        self.in_scope(repo)?;
        let mut url = Url::parse(&self.cfg.api_url).expect("validated");
        url.path_segments_mut()
            .expect("http URL")
            .pop_if_empty()
            .extend(["search", "code"]);
        url.query_pairs_mut()
            .append_pair("q", &format!("{query} repo:{}/{}", repo.0, repo.1))
            .append_pair("per_page", &limit.to_string());
        let what = format!("code search in {}/{}", repo.0, repo.1);
        self.get_json(&what, url).await
    }

    /// Blame ranges of `path` at `reference` (GraphQL; REST has no blame).
    pub async fn blame(
        &self,
        repo: &(String, String),
        path: &str,
        reference: &str,
    ) -> Result<Vec<Value>, ApiError> {
        self.in_scope(repo)?;
        check_path(path).map_err(|message| ApiError::Permanent {
            status: None,
            message,
        })?;
        const QUERY: &str =
            "query($owner: String!, $name: String!, $ref: String!, $path: String!) {
  repository(owner: $owner, name: $name) {
    object(expression: $ref) {
      ... on Commit {
        blame(path: $path) {
          ranges { startingLine endingLine age
            commit { oid abbreviatedOid messageHeadline committedDate author { name email } } }
        }
      }
    }
  }
}";
        let body = json!({"query": QUERY, "variables": {
            "owner": repo.0, "name": repo.1, "ref": reference, "path": path}});
        let url = self.cfg.graphql_url();
        let what = format!("blame of {path} at {reference} in {}/{}", repo.0, repo.1);
        let (reply, _) = http::retrying(super::policy(&self.gate), &what, || async {
            let resp = self
                .send_once(&what, || self.http.post(&url).json(&body))
                .await?;
            resp.json::<Value>()
                .await
                .map_err(|e| ApiError::transient(format!("reading GitHub's reply for {what}: {e}")))
        })
        .await;
        let reply = reply?;
        // GraphQL reports most failures as 200 with `errors`.
        if let Some(errors) = reply["errors"].as_array().filter(|e| !e.is_empty()) {
            let first = &errors[0];
            let message = format!(
                "GitHub GraphQL error for {what}: {}",
                first["message"].as_str().unwrap_or("unknown error")
            );
            return Err(match first["type"].as_str() {
                Some("NOT_FOUND") => ApiError::NotFound {
                    status: 404,
                    message,
                },
                Some("RATE_LIMITED") => ApiError::transient(message),
                _ => ApiError::Permanent {
                    status: None,
                    message,
                },
            });
        }
        let repository = &reply["data"]["repository"];
        if repository.is_null() {
            return Err(ApiError::NotFound {
                status: 404,
                message: format!(
                    "repository {}/{} not found (or the token cannot see it)",
                    repo.0, repo.1
                ),
            });
        }
        let Some(ranges) = repository["object"]["blame"]["ranges"].as_array() else {
            return Err(ApiError::NotFound {
                status: 404,
                message: format!("{what}: the ref is not a commit of the repository"),
            });
        };
        Ok(ranges.clone())
    }

    /// Opens an Actions job's plain-text log. GitHub answers 302 to a
    /// short-lived storage URL, which reqwest follows (dropping our token,
    /// since the host differs); the body is left to stream.
    pub async fn job_log(
        &self,
        repo: &(String, String),
        job_id: u64,
    ) -> Result<Response, ApiError> {
        self.in_scope(repo)?;
        let url = self.repo_url(repo, &["actions", "jobs", &job_id.to_string(), "logs"]);
        let what = format!("log of job {job_id} in {}/{}", repo.0, repo.1);
        self.send(&what, || self.http.get(url.clone())).await
    }

    /// A workflow run (its workflow's id, which `workflow_job` deliveries lack).
    pub async fn run(&self, repo: &(String, String), run_id: u64) -> Result<RunRef, ApiError> {
        self.in_scope(repo)?;
        let url = self.repo_url(repo, &["actions", "runs", &run_id.to_string()]);
        let what = format!("run {run_id} in {}/{}", repo.0, repo.1);
        let body = self.get_json(&what, url).await?;
        serde_json::from_value(body).map_err(|e| ApiError::Permanent {
            status: None,
            message: format!("GitHub's reply for {what} is unreadable: {e}"),
        })
    }

    /// The latest successful run of a workflow on a branch, if any.
    pub async fn last_green_run(
        &self,
        repo: &(String, String),
        workflow_id: u64,
        branch: &str,
    ) -> Result<Option<RunRef>, ApiError> {
        self.in_scope(repo)?;
        let id = workflow_id.to_string();
        let mut url = self.repo_url(repo, &["actions", "workflows", &id, "runs"]);
        url.query_pairs_mut()
            .append_pair("branch", branch)
            .append_pair("status", "success")
            .append_pair("per_page", "1");
        let what = format!(
            "successful runs of workflow {workflow_id} on {branch} in {}/{}",
            repo.0, repo.1
        );
        let body = self.get_json(&what, url).await?;
        let runs: Vec<RunRef> =
            serde_json::from_value(body["workflow_runs"].clone()).map_err(|e| {
                ApiError::Permanent {
                    status: None,
                    message: format!("GitHub's run list for {what} is unreadable: {e}"),
                }
            })?;
        Ok(runs.into_iter().next())
    }

    /// The latest attempt's jobs of a workflow run.
    pub async fn run_jobs(
        &self,
        repo: &(String, String),
        run_id: u64,
    ) -> Result<Vec<Job>, ApiError> {
        self.in_scope(repo)?;
        let mut url = self.repo_url(repo, &["actions", "runs", &run_id.to_string(), "jobs"]);
        url.query_pairs_mut()
            .append_pair("filter", "latest")
            .append_pair("per_page", "100");
        let what = format!("jobs of run {run_id} in {}/{}", repo.0, repo.1);
        let body = self.get_json(&what, url).await?;
        serde_json::from_value(body["jobs"].clone()).map_err(|e| ApiError::Permanent {
            status: None,
            message: format!("GitHub's job list for {what} is unreadable: {e}"),
        })
    }
}

/// GitHub's error JSON (`{"message": …, "documentation_url": …}`) → its
/// message; any other body → its start.
fn github_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| http::snippet(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_name_is_exactly_owner_slash_name() {
        let want = Some(("octo-org".to_string(), "ledger-api".to_string()));
        assert_eq!(full_name("octo-org/ledger-api"), want);
        assert_eq!(full_name("octo/repo/../../../user/repos"), None);
        assert_eq!(
            full_name("https://github.com/octo-org/ledger-api.git"),
            None
        );
        assert_eq!(full_name("a/b/c"), None);
        assert_eq!(full_name("ledger-api"), None);
    }

    #[test]
    fn paths_cannot_leave_the_repository() {
        assert_eq!(check_path("src/main.rs").unwrap(), vec!["src", "main.rs"]);
        assert!(check_path("../etc/passwd").is_err());
        assert!(check_path("src//x").is_err());
        assert!(check_path("/").is_err());
    }

    #[test]
    fn graphql_lives_next_to_the_rest_root() {
        let cfg = |url: &str| GithubConfig {
            api_url: url.into(),
            token: SecretString::from("t"),
            timeout: Duration::from_secs(1),
            max_wait: Duration::from_secs(1),
        };
        assert_eq!(
            cfg("https://api.github.com").graphql_url(),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            cfg("https://ghe.example.com/api/v3").graphql_url(),
            "https://ghe.example.com/api/graphql"
        );
    }
}
