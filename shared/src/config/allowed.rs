//! The operator's allow-list: which GitHub repositories and Jenkins jobs
//! this deployment analyses at all (`FAULTLINE_ALLOWED_REPOSITORIES`,
//! `FAULTLINE_ALLOWED_JENKINS_JOBS`). Unset, anything goes, as before the
//! list existed.
//!
//! The producer refuses an API submission outside the list; the worker,
//! which holds the credentials, refuses every request outside it (a log
//! fetch, a baseline, a tool call), however the event arrived: webhook,
//! API, `faultline enqueue` or reprocessing. Parsed here, once, for both.
//!
//! - Repositories: `owner/name` or `owner/*`, case-insensitive like GitHub.
//! - Jenkins jobs: `folder/job` is that job exactly; `folder/` (a trailing
//!   slash) is every job under the folder, at any depth. Case-insensitive,
//!   as Jenkins looks items up.

use serde::{Deserialize, Deserializer, de::Error as _};

/// Names the variable that lists the repositories.
pub const ALLOWED_REPOSITORIES: &str = "FAULTLINE_ALLOWED_REPOSITORIES";
/// Names the variable that lists the Jenkins jobs.
pub const ALLOWED_JENKINS_JOBS: &str = "FAULTLINE_ALLOWED_JENKINS_JOBS";

/// What the deployment may act on; `None` in a field means no restriction.
/// Read by [`super::Source::load`] (with the other settings); the field
/// names are the variables, [`ALLOWED_REPOSITORIES`] and [`ALLOWED_JENKINS_JOBS`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct AllowList {
    #[serde(
        rename = "FAULTLINE_ALLOWED_REPOSITORIES",
        deserialize_with = "patterns"
    )]
    repositories: Option<Vec<RepoPattern>>,
    #[serde(
        rename = "FAULTLINE_ALLOWED_JENKINS_JOBS",
        deserialize_with = "patterns"
    )]
    jobs: Option<Vec<JobPattern>>,
}

/// One entry of `FAULTLINE_ALLOWED_REPOSITORIES`, lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RepoPattern {
    Exact(String, String),
    Owner(String),
}

/// One entry of `FAULTLINE_ALLOWED_JENKINS_JOBS`: its names, lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
enum JobPattern {
    Job(Vec<String>),
    Folder(Vec<String>),
}

impl RepoPattern {
    fn matches(&self, owner: &str, name: &str) -> bool {
        match self {
            RepoPattern::Exact(o, n) => {
                o.eq_ignore_ascii_case(owner) && n.eq_ignore_ascii_case(name)
            }
            RepoPattern::Owner(o) => o.eq_ignore_ascii_case(owner),
        }
    }
}

/// The repositories an opt-in feature applies to (`owner/name` or
/// `owner/*`, comma-separated, case-insensitive), as the allow-list reads
/// them. Empty: none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepositoryList(Vec<RepoPattern>);

impl RepositoryList {
    /// Reads `owner/name, owner/*, …`; the error names the bad entry.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(RepoPattern::parse)
            .collect::<Result<_, _>>()
            .map(Self)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the repository an event names (read by [`parse_repo`]) is listed.
    pub fn contains(&self, repository: &str) -> bool {
        parse_repo(repository).is_some_and(|(o, n)| self.0.iter().any(|p| p.matches(&o, &n)))
    }
}

impl AllowList {
    /// Whether the repository `owner/name` may be read.
    pub fn allows_repository(&self, owner: &str, name: &str) -> bool {
        let Some(patterns) = &self.repositories else {
            return true;
        };
        patterns.iter().any(|p| p.matches(owner, name))
    }

    /// Checks a repository as an event names it (`owner/name` or a clone
    /// URL, read by [`parse_repo`]); the error says why it is refused.
    pub fn check_repository(&self, text: &str) -> Result<(), String> {
        if self.repositories.is_none() {
            return Ok(());
        }
        match parse_repo(text) {
            Some((owner, name)) if self.allows_repository(&owner, &name) => Ok(()),
            Some((owner, name)) => Err(format!(
                "repository {owner}/{name} is not in {ALLOWED_REPOSITORIES}"
            )),
            None => Err(format!(
                "repository {text:?} is not a GitHub owner/name, and {ALLOWED_REPOSITORIES} \
                 admits only those"
            )),
        }
    }

    /// Whether every job is allowed (the variable is unset).
    pub fn allows_any_job(&self) -> bool {
        self.jobs.is_none()
    }

    /// Whether the Jenkins job named by `names` (its folders, then itself)
    /// may be read.
    pub fn allows_job<S: AsRef<str>>(&self, names: &[S]) -> bool {
        let Some(patterns) = &self.jobs else {
            return true;
        };
        let names: Vec<String> = names.iter().map(|n| n.as_ref().to_lowercase()).collect();
        patterns.iter().any(|p| match p {
            JobPattern::Job(job) => *job == names,
            JobPattern::Folder(folder) => {
                names.len() > folder.len() && names[..folder.len()] == folder[..]
            }
        })
    }

    /// Checks a Jenkins job as an event names it (`folder/job`); the error
    /// says why it is refused.
    pub fn check_job(&self, job: &str) -> Result<(), String> {
        if self.allows_any_job() {
            return Ok(());
        }
        match job_names(job) {
            Some(names) if self.allows_job(&names) => Ok(()),
            Some(names) => Err(format!(
                "Jenkins job {} is not in {ALLOWED_JENKINS_JOBS}",
                names.join("/")
            )),
            None => Err(format!("{job:?} is not a Jenkins job name")),
        }
    }
}

/// An entry of an allow-list variable.
trait Pattern: Sized {
    /// What an entry names, for the error of a list that names none.
    const WHAT: &str;
    fn parse(entry: &str) -> Result<Self, String>;
}

/// The comma-separated entries of a variable, each read by
/// [`Pattern::parse`] (unset or blank is `None`, by the field's default);
/// an error when it names no entry or an entry does not parse.
fn patterns<'de, D: Deserializer<'de>, P: Pattern>(d: D) -> Result<Option<Vec<P>>, D::Error> {
    let value = String::deserialize(d)?;
    let entries: Vec<&str> = value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    if entries.is_empty() {
        return Err(D::Error::custom(format!(
            "names no {} (leave it unset to allow any)",
            P::WHAT
        )));
    }
    let parsed = entries.into_iter().map(P::parse).collect::<Result<_, _>>();
    parsed.map(Some).map_err(D::Error::custom)
}

impl Pattern for RepoPattern {
    const WHAT: &str = "repository";
    fn parse(entry: &str) -> Result<Self, String> {
        let bad = || format!("{entry:?} is not owner/name or owner/*");
        let (owner, name) = entry.split_once('/').ok_or_else(bad)?;
        if !github_name(owner) {
            return Err(bad());
        }
        let owner = owner.to_ascii_lowercase();
        match name {
            "*" => Ok(RepoPattern::Owner(owner)),
            name if github_name(name) => Ok(RepoPattern::Exact(owner, name.to_ascii_lowercase())),
            _ => Err(bad()),
        }
    }
}

impl Pattern for JobPattern {
    const WHAT: &str = "job";
    fn parse(entry: &str) -> Result<Self, String> {
        let names = job_names(entry)
            .ok_or_else(|| {
                format!("{entry:?} is not a Jenkins job (folder/job) or folder (folder/)")
            })?
            .into_iter()
            .map(|n| n.to_lowercase())
            .collect();
        Ok(if entry.ends_with('/') {
            JobPattern::Folder(names)
        } else {
            JobPattern::Job(names)
        })
    }
}

/// The names of a job written `folder/job` (slashes at either end
/// ignored), each a [`valid_job_name`].
fn job_names(job: &str) -> Option<Vec<&str>> {
    let names: Vec<&str> = job.trim().trim_matches('/').split('/').collect();
    names.iter().all(|n| valid_job_name(n)).then_some(names)
}

/// A job name Jenkins could have made: not empty, no control characters, no
/// `/`, `\` or `;` (Jenkins never puts them in an item name — a multibranch
/// branch `feature/x` is the name `feature%2Fx` — and a proxy that decodes
/// `%2F` or reads `..;` as `..` would climb out of the job with them), and
/// not only dots.
pub fn valid_job_name(name: &str) -> bool {
    !name.is_empty()
        && !name.bytes().all(|b| b == b'.')
        && !name.contains(['/', '\\', ';'])
        && !name.chars().any(char::is_control)
}

/// An owner or repository name as GitHub allows them.
fn github_name(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

/// `owner/name` of a repository, from `owner/name` or a clone URL
/// (`https://github.com/owner/name.git`, `git@github.com:owner/name.git`).
/// Text with a dot segment anywhere (`octo/repo/../../../user/repos`) names
/// no repository: taking its last two segments would name another one.
pub fn parse_repo(text: &str) -> Option<(String, String)> {
    let t = text.trim().trim_end_matches('/');
    if t.split(['/', ':', '\\']).any(|s| s == "." || s == "..") || t.contains(['%', '?', '#', '\\'])
    {
        return None;
    }
    let t = t.strip_suffix(".git").unwrap_or(t);
    let t = t.rsplit_once(':').map_or(t, |(head, tail)| {
        // `git@host:owner/name`, but not the scheme of `https://…`.
        if head.contains("//") { t } else { tail }
    });
    let mut parts = t.rsplit('/');
    let name = parts.next()?;
    let owner = parts.next()?;
    (github_name(owner) && github_name(name)).then(|| (owner.to_string(), name.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::{ConfigError, Source, variables};

    fn list(repos: Option<&str>, jobs: Option<&str>) -> Result<AllowList, ConfigError> {
        let source: Source = [(ALLOWED_REPOSITORIES, repos), (ALLOWED_JENKINS_JOBS, jobs)]
            .into_iter()
            .filter_map(|(name, value)| Some((name, value?)))
            .collect();
        source.load("")
    }

    #[test]
    fn the_fields_are_the_two_variables() {
        assert_eq!(
            variables::<AllowList>(""),
            [ALLOWED_REPOSITORIES, ALLOWED_JENKINS_JOBS]
        );
    }

    #[test]
    fn an_opt_in_list_holds_exactly_its_repositories_and_owners() {
        let list = RepositoryList::parse(" Octo/App , tools/* ").unwrap();
        assert!(list.contains("octo/app"));
        assert!(list.contains("https://github.com/OCTO/APP.git"));
        assert!(list.contains("tools/anything"));
        assert!(!list.contains("octo/other"));
        assert!(!list.contains("octo/app/../../x/y"));
        assert!(RepositoryList::parse("").unwrap().is_empty());
        let err = RepositoryList::parse("octo/app, nope").unwrap_err();
        assert!(err.contains("\"nope\""), "{err}");
    }

    #[test]
    fn unset_or_blank_allows_everything() {
        for blank in [None, Some(""), Some("  ")] {
            let all = list(blank, blank).unwrap();
            assert!(all.allows_repository("acme", "secrets"));
            assert!(all.allows_any_job() && all.allows_job(&["deploy-prod"]));
            assert_eq!(all.check_repository("not a repo"), Ok(()));
            assert_eq!(all.check_job("a/../b"), Ok(()));
        }
    }

    #[test]
    fn repositories_match_exactly_or_by_owner_without_case() {
        let l = list(Some("Octo-Org/Ledger-API, team-a/*"), None).unwrap();
        assert!(l.allows_repository("octo-org", "ledger-api"));
        assert!(l.allows_repository("TEAM-A", "anything"));
        assert!(!l.allows_repository("octo-org", "ledger-api-fork"));
        assert!(!l.allows_repository("acme", "ledger-api"));
        assert!(!l.allows_repository("team-a-evil", "x"));
        assert_eq!(
            l.check_repository("https://github.com/octo-org/ledger-api.git"),
            Ok(())
        );
        let err = l.check_repository("acme/secrets").unwrap_err();
        assert!(
            err.contains("acme/secrets") && err.contains(ALLOWED_REPOSITORIES),
            "{err}"
        );
        let err = l.check_repository("octo/repo/../../team-a/x").unwrap_err();
        assert!(err.contains("not a GitHub owner/name"), "{err}");
        // Jobs are not restricted by a repository list.
        assert!(l.allows_job(&["deploy-prod"]));
    }

    #[test]
    fn jobs_match_exactly_or_under_a_folder_without_case() {
        let l = list(None, Some("team-a/, Platform/ledger-api")).unwrap();
        assert!(l.allows_job(&["team-a", "app"]));
        assert!(l.allows_job(&["Team-A", "nested", "main"]));
        assert!(!l.allows_job(&["team-a"]), "the folder itself is no job");
        assert!(!l.allows_job(&["team-ab", "x"]));
        assert!(l.allows_job(&["platform", "LEDGER-API"]));
        assert!(!l.allows_job(&["platform", "ledger-api", "main"]));
        assert!(!l.allows_job(&["ledger-api"]));
        assert_eq!(l.check_job("/team-a/app/"), Ok(()));
        let err = l.check_job("deploy-prod").unwrap_err();
        assert!(
            err.contains("deploy-prod") && err.contains(ALLOWED_JENKINS_JOBS),
            "{err}"
        );
        assert!(l.check_job("team-a/../deploy-prod").is_err());
        assert!(l.check_job("team-a//x").is_err());
        assert!(l.allows_repository("acme", "secrets"));
    }

    #[test]
    fn bad_entries_name_the_variable() {
        for bad in [
            "acme",
            "acme/secrets/x",
            "*/*",
            "acme/se crets",
            ",",
            "../x",
        ] {
            let err = list(Some(bad), None).unwrap_err();
            assert_eq!(err.name, ALLOWED_REPOSITORIES, "{bad}");
        }
        for bad in ["a//b", "a/../b", "/", ",", "a;b/"] {
            let err = list(None, Some(bad)).unwrap_err();
            assert_eq!(err.name, ALLOWED_JENKINS_JOBS, "{bad}");
        }
    }

    #[test]
    fn repositories_are_read_from_names_and_clone_urls() {
        let want = Some(("octo-org".to_string(), "ledger-api".to_string()));
        assert_eq!(parse_repo("octo-org/ledger-api"), want);
        assert_eq!(
            parse_repo("https://github.com/octo-org/ledger-api.git"),
            want
        );
        assert_eq!(parse_repo("git@github.com:octo-org/ledger-api.git"), want);
        assert_eq!(
            parse_repo("https://ghe.example.com/octo-org/ledger-api/"),
            want
        );
        assert_eq!(parse_repo("ledger-api"), None);
        assert_eq!(parse_repo("octo org/x"), None);
        assert_eq!(parse_repo("../x"), None);
        // Issue 14: the last two segments of a climbing path are not its repository.
        assert_eq!(parse_repo("octo/repo/../../../user/repos"), None);
        assert_eq!(parse_repo("https://github.com/octo/repo/../x/y.git"), None);
        assert_eq!(parse_repo("octo/repo%2F..%2Fx"), None);
    }
}
