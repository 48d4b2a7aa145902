//! Jenkins Notification plugin deliveries: the body of an authenticated
//! notification to a [`Notification`].

use faultline_shared::pr_comment::github_repository;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{MAX_NAME, MAX_URL, PayloadError, check_json, check_opt, check_text, from_json};

const PHASES: [&str; 2] = ["COMPLETED", "FINALIZED"];
const FAILED: [&str; 2] = ["FAILURE", "UNSTABLE"];

/// What a notification asks of ingest.
#[derive(Debug)]
pub enum Notification {
    /// Well-formed but not analysed; the reason says why, precisely.
    Ignored(String),
    /// A finished build that failed: analyse it.
    Failed(FailedBuild),
    /// A finished build that passed: history, not analysed (without passes
    /// a failure cannot be told new, flaky or already failing).
    Passed(PassedBuild),
}

/// A build that passed, as the failure history records it.
#[derive(Debug)]
pub struct PassedBuild {
    pub job_name: String,
    /// The job's identity (see [`job_id`]): with the number, the dedup key.
    pub job_url: String,
    pub number: u64,
    pub repository: Option<String>,
    pub commit: Option<String>,
    /// The branch, as Git names it locally.
    pub branch: Option<String>,
    /// The pull request a multibranch build is of (`CHANGE_ID`).
    pub pull_request: Option<i64>,
}

impl PassedBuild {
    /// The GitHub repository (`owner/name`) its SCM is, on the GitHub whose
    /// web address is `web`.
    pub fn github_repository(&self, web: &str) -> Option<String> {
        github_repository(self.repository.as_deref()?, web)
    }
}

impl PassedBuild {
    /// One key per build, so the COMPLETED and FINALIZED phases make one pass.
    pub fn dedup_key(&self) -> String {
        build_key(&self.job_url, self.number)
    }
}

/// A build's identity: `jenkins:<job url>#<number>`.
fn build_key(job_url: &str, number: u64) -> String {
    format!("jenkins:{job_url}#{number}")
}

/// A failed build, as ingest stores it.
#[derive(Debug)]
pub struct FailedBuild {
    /// The job's name (`name`).
    pub job_name: String,
    /// The job's identity: its absolute URL when known (see [`job_id`]).
    pub job_url: String,
    pub number: u64,
    pub repository: Option<String>,
    pub commit: Option<String>,
    /// The inline console log (`build.log`), empty when none was sent.
    pub log: String,
    /// What the worker reads back (under `"jenkins"`); never the log itself.
    pub payload: Value,
}

impl FailedBuild {
    /// One key per build, so the COMPLETED and FINALIZED phases make one run.
    pub fn dedup_key(&self) -> String {
        build_key(&self.job_url, self.number)
    }

    /// The log's name: `job#number`.
    pub fn log_name(&self) -> String {
        format!("{}#{}", self.job_name, self.number)
    }

    /// Ties the build to the GitHub whose web address is `web` when its SCM
    /// is a repository there: the payload's `github_repository`
    /// (`owner/name`), by which the worker finds its pull request and
    /// writes its check run and comment.
    pub fn tie_to_github(&mut self, web: &str) {
        if let Some(repo) = self
            .repository
            .as_deref()
            .and_then(|url| github_repository(url, web))
        {
            self.payload["jenkins"]["github_repository"] = Value::String(repo);
        }
    }
}

/// Parses the body of a notification.
pub fn parse(body: &[u8]) -> Result<Notification, PayloadError> {
    let mut n: Body = from_json(body)?;
    n.check()?;
    // Moved out, not copied: an inline log may be megabytes.
    let log = n.build.log.take().unwrap_or_default();
    let build = &n.build;
    if !PHASES.contains(&build.phase.as_str()) {
        return Ok(Notification::Ignored(format!(
            "build phase {:?} is not analysed (only COMPLETED and FINALIZED)",
            build.phase
        )));
    }
    let status = build.status.as_deref().unwrap_or("null");
    if status == "SUCCESS" {
        let scm = build.scm.as_ref();
        return Ok(Notification::Passed(PassedBuild {
            job_name: n.name.clone(),
            job_url: job_id(&n),
            number: build.number,
            repository: scm.and_then(|s| s.url.clone()),
            commit: scm.and_then(|s| s.commit.clone()),
            branch: scm
                .and_then(|s| s.branch.as_deref())
                .map(|b| branch_name(b).to_string()),
            pull_request: change_id(build.parameters.as_ref()),
        }));
    }
    if !FAILED.contains(&status) {
        return Ok(Notification::Ignored(format!(
            "build status {status:?} is neither a failure (FAILURE, UNSTABLE) nor a pass (SUCCESS)"
        )));
    }
    let job_url = job_id(&n);
    let scm = build.scm.as_ref();
    let console_url = build.full_url.as_ref().map(|u| {
        let sep = if u.ends_with('/') { "" } else { "/" };
        format!("{u}{sep}consoleText")
    });
    let payload = json!({"jenkins": {
        "job_url": job_url,
        "build_url": build.full_url,
        "console_url": console_url,
        "phase": build.phase,
        "status": status,
        "branch": scm.and_then(|s| s.branch.as_deref()).map(branch_name),
        "target_branch": target_branch(build.parameters.as_ref()),
        "pull_request": change_id(build.parameters.as_ref()),
        "parameters": build.parameters,
        "log_inline": !log.is_empty(),
    }});
    Ok(Notification::Failed(FailedBuild {
        job_name: n.name.clone(),
        job_url,
        number: build.number,
        repository: scm.and_then(|s| s.url.clone()),
        commit: scm.and_then(|s| s.commit.clone()),
        log,
        payload,
    }))
}

/// The Notification plugin's JSON (only the fields we use).
#[derive(Debug, Deserialize)]
struct Body {
    name: String,
    url: Option<String>,
    build: Build,
}

#[derive(Debug, Deserialize)]
struct Build {
    full_url: Option<String>,
    number: u64,
    phase: String,
    status: Option<String>,
    scm: Option<Scm>,
    log: Option<String>,
    parameters: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Scm {
    url: Option<String>,
    branch: Option<String>,
    commit: Option<String>,
}

impl Body {
    /// Refuses NUL characters and overlong names or URLs (the job URL is part
    /// of the dedup key, whose index row is bounded). The inline log is not
    /// checked: it is stored as bytes.
    fn check(&self) -> Result<(), PayloadError> {
        let b = &self.build;
        check_text("name", &self.name, MAX_NAME)?;
        check_opt("url", self.url.as_deref(), MAX_URL)?;
        check_opt("build.full_url", b.full_url.as_deref(), MAX_URL)?;
        check_text("build.phase", &b.phase, 64)?;
        check_opt("build.status", b.status.as_deref(), 64)?;
        if let Some(scm) = &b.scm {
            check_opt("build.scm.url", scm.url.as_deref(), MAX_URL)?;
            check_opt("build.scm.branch", scm.branch.as_deref(), 255)?;
            check_opt("build.scm.commit", scm.commit.as_deref(), 255)?;
        }
        if let Some(parameters) = &b.parameters {
            check_json("build.parameters", parameters)?;
        }
        Ok(())
    }
}

/// A branch as Git names it locally: the Git plugin reports the remote's
/// (`origin/main`, `refs/remotes/origin/main`) or the full ref
/// (`refs/heads/main`).
fn branch_name(branch: &str) -> &str {
    let b = branch.strip_prefix("refs/remotes/").unwrap_or(branch);
    let b = b.strip_prefix("refs/heads/").unwrap_or(b);
    b.strip_prefix("origin/").unwrap_or(b)
}

/// The branch a pull-request build's change is to land on: a multibranch
/// pipeline's `CHANGE_TARGET`, when the build passes it as a parameter.
fn target_branch(parameters: Option<&Value>) -> Option<&str> {
    parameters?
        .get("CHANGE_TARGET")?
        .as_str()
        .filter(|t| !t.is_empty() && t.len() <= 255)
}

/// The pull request a multibranch pipeline's build is of: its `CHANGE_ID`,
/// when the build passes it as a parameter and it is a number (GitHub's).
fn change_id(parameters: Option<&Value>) -> Option<i64> {
    let id = parameters?.get("CHANGE_ID")?;
    let n = match id {
        Value::String(s) => s.trim().parse::<i64>().ok()?,
        other => other.as_i64()?,
    };
    (n > 0).then_some(n)
}

/// The job's identity: its absolute URL (the build's `full_url` without the
/// trailing build number) when known, else the relative `url`, else the name.
fn job_id(n: &Body) -> String {
    let number = n.build.number.to_string();
    let from_full = n.build.full_url.as_deref().and_then(|full| {
        full.trim_end_matches('/')
            .strip_suffix(number.as_str())
            .filter(|job| job.ends_with('/'))
            .map(str::to_string)
    });
    from_full
        .or_else(|| n.url.clone().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| n.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notification(full_url: Option<&str>, url: Option<&str>) -> Body {
        serde_json::from_value(json!({
            "name": "ledger-api",
            "url": url,
            "build": {"full_url": full_url, "number": 812, "phase": "COMPLETED", "status": "FAILURE"}
        }))
        .unwrap()
    }

    #[test]
    fn the_job_is_identified_by_its_absolute_url_when_known() {
        let n = notification(
            Some("https://ci.example.com/job/ledger-api/812/"),
            Some("job/ledger-api/"),
        );
        assert_eq!(job_id(&n), "https://ci.example.com/job/ledger-api/");
        let n = notification(None, Some("job/ledger-api/"));
        assert_eq!(job_id(&n), "job/ledger-api/");
        let n = notification(None, None);
        assert_eq!(job_id(&n), "ledger-api");
        // A build number that is only a suffix of the last segment is not stripped.
        let n = notification(Some("https://ci.example.com/job/x1812/"), None);
        assert_eq!(job_id(&n), "ledger-api");
    }

    #[test]
    fn the_branch_is_named_as_git_names_it_locally_and_the_target_comes_from_change_target() {
        let body = |branch: &str, parameters: Value| {
            json!({"name": "api", "build": {"number": 3, "phase": "COMPLETED", "status": "FAILURE",
                   "scm": {"branch": branch}, "parameters": parameters}})
            .to_string()
        };
        for (sent, local) in [
            ("origin/main", "main"),
            ("refs/remotes/origin/feature/x", "feature/x"),
            ("refs/heads/main", "main"),
            ("PR-12", "PR-12"),
        ] {
            let Ok(Notification::Failed(b)) =
                parse(body(sent, json!({"CHANGE_TARGET": "main"})).as_bytes())
            else {
                panic!("{sent}: a failed build");
            };
            assert_eq!(b.payload["jenkins"]["branch"], local, "{sent}");
            assert_eq!(b.payload["jenkins"]["target_branch"], "main");
        }
        let Ok(Notification::Failed(b)) = parse(body("main", json!({"X": 1})).as_bytes()) else {
            panic!("a failed build");
        };
        assert!(b.payload["jenkins"]["target_branch"].is_null());
    }

    #[test]
    fn a_build_of_a_github_repository_is_tied_to_it_with_its_pull_request() {
        let body = |url: &str, status: &str, change: Value| {
            json!({"name": "PR-7", "build": {"number": 3, "phase": "COMPLETED", "status": status,
                   "scm": {"url": url, "branch": "PR-7", "commit": "abc"},
                   "parameters": {"CHANGE_ID": change}}})
            .to_string()
        };
        let web = "https://github.com";
        let Ok(Notification::Failed(mut b)) =
            parse(body("https://github.com/octo/app.git", "FAILURE", json!("7")).as_bytes())
        else {
            panic!("a failed build");
        };
        b.tie_to_github(web);
        assert_eq!(b.payload["jenkins"]["github_repository"], "octo/app");
        assert_eq!(b.payload["jenkins"]["pull_request"], 7);
        // Another forge's repository is not GitHub's, whatever its path.
        let Ok(Notification::Failed(mut b)) =
            parse(body("https://gitlab.com/octo/app.git", "FAILURE", json!("x")).as_bytes())
        else {
            panic!("a failed build");
        };
        b.tie_to_github(web);
        assert!(b.payload["jenkins"]["github_repository"].is_null());
        assert!(
            b.payload["jenkins"]["pull_request"].is_null(),
            "not a number"
        );
        let Ok(Notification::Passed(p)) =
            parse(body("git@github.com:octo/app.git", "SUCCESS", json!(9)).as_bytes())
        else {
            panic!("a pass");
        };
        assert_eq!(p.github_repository(web).as_deref(), Some("octo/app"));
        assert_eq!(p.pull_request, Some(9));
    }

    #[test]
    fn a_missing_field_is_named_by_its_path() {
        let err = parse(br#"{"name": "x", "build": {"phase": "COMPLETED"}}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("build: missing field `number`"), "{err}");
    }

    #[test]
    fn overlong_urls_and_nul_characters_are_refused_by_name() {
        let long = format!("https://ci.example.com/job/{}/1/", "x".repeat(8000));
        let body =
            json!({"name": "x", "build": {"number": 1, "phase": "COMPLETED", "full_url": long}});
        let err = parse(body.to_string().as_bytes()).unwrap_err().to_string();
        assert!(err.starts_with("build.full_url: is 8"), "{err}");
        let body = json!({"name": "x\u{0}", "build": {"number": 1, "phase": "COMPLETED"}});
        let err = parse(body.to_string().as_bytes()).unwrap_err().to_string();
        assert_eq!(err, "name: contains a NUL character");
    }
}
