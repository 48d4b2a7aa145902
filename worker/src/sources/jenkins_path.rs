//! A Jenkins job and build named by a notification, validated, and the one
//! way a Jenkins URL is built from them (issue 14).
//!
//! A notification's `build.full_url` is attacker-shaped text: a query, a
//! fragment (`…/api/json?depth=2#` hides the appended `/consoleText`), a
//! `..` or `%2e%2e` segment, or a path that is not a job at all
//! (`/credentials/…`, `/manage/…`, `/job/x/config.xml`) would make the
//! worker GET another page *with the Jenkins credentials*. So nothing of
//! such a URL is forwarded: only its job path (`job/<name>` repeated for
//! folders) and its build number are read, each name decoded and checked,
//! and the URL is rebuilt under `JENKINS_URL` with every name pushed as
//! one percent-encoded path segment.

// A name Jenkins could have made, checked as the allow-list checks names.
use faultline_shared::config::valid_job_name as valid_name;
use reqwest::Url;

/// A job: the names of its folders and itself (`team`, `app`, `main` for
/// `job/team/job/app/job/main`), decoded, and for a multi-configuration
/// (matrix) job the configuration (`label=linux,jdk=17`) its build ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobPath(Vec<String>, Option<String>);

impl JobPath {
    /// From names separated by `/` (`team/app/main`), as the
    /// `jenkins_console` tool and a bare job name give them.
    pub fn from_names(job: &str) -> Result<Self, String> {
        let names: Vec<String> = job
            .trim_matches('/')
            .split('/')
            .map(str::to_string)
            .collect();
        if names.iter().any(|n| !valid_name(n)) {
            return Err(format!("job {job:?} is not a Jenkins job name"));
        }
        Ok(Self(names, None))
    }

    /// From a job URL, absolute or relative (`https://ci/job/a/job/b/`,
    /// `job/a/`): `job/<name>` pairs and nothing after them.
    pub fn from_job_url(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not a Jenkins job URL");
        let segments = segments(text).ok_or_else(bad)?;
        let (job, rest) = job_pairs(&segments).ok_or_else(bad)?;
        match rest.as_slice() {
            [] | [""] => Ok(job),
            _ => Err(bad()),
        }
    }

    /// From a job URL (absolute or relative, [`Self::from_job_url`]) or,
    /// when the text names no `job/` segment, a job's names
    /// ([`Self::from_names`]): how a notification's `job_url` reads.
    pub fn from_job_url_or_names(text: &str) -> Result<Self, String> {
        if text.starts_with("job/") || text.contains("/job/") {
            Self::from_job_url(text)
        } else {
            Self::from_names(text)
        }
    }

    /// From a build or console URL (`…/job/a/123/`, `…/job/a/123/consoleText`):
    /// the job and the build number, and nothing else.
    pub fn from_build_url(text: &str) -> Result<(Self, u64), String> {
        let bad = || format!("{text:?} is not a Jenkins build URL");
        let segments = segments(text).ok_or_else(bad)?;
        let (mut job, mut rest) = job_pairs(&segments).ok_or_else(bad)?;
        // A matrix build: `job/m/label=linux/7/`.
        if let [config, _, ..] = rest.as_slice()
            && is_configuration(config)
        {
            job.1 = Some(config.to_string());
            rest.remove(0);
        }
        let (number, tail) = rest.split_first().ok_or_else(bad)?;
        let number = build_number(number).ok_or_else(bad)?;
        match tail {
            [] | [""] | ["consoleText"] => Ok((job, number)),
            _ => Err(bad()),
        }
    }

    /// `{root}job/a/job/b/{rest…}`, each name one percent-encoded segment.
    pub fn url(&self, root: &Url, rest: &[&str]) -> Url {
        let mut url = root.clone();
        url.set_query(None);
        url.set_fragment(None);
        {
            let mut path = url
                .path_segments_mut()
                .expect("JENKINS_URL is an http(s) URL");
            path.pop_if_empty();
            for name in &self.0 {
                path.push("job").push(name);
            }
            if let Some(config) = &self.1 {
                path.push(config);
            }
            path.extend(rest);
        }
        url
    }

    /// `{root}job/…/{build}/consoleText`.
    pub fn console_url(&self, root: &Url, build: u64) -> Url {
        self.url(root, &[&build.to_string(), "consoleText"])
    }

    /// The job of a URL that [`Self::url`] built under `root`, read back;
    /// `None` for any other URL.
    pub fn of_url(root: &Url, url: &Url) -> Option<Self> {
        if url.origin() != root.origin() {
            return None;
        }
        let rest = url.path().strip_prefix(root.path())?;
        let segments: Vec<String> = rest.split('/').map(decode).collect::<Option<_>>()?;
        if segments.first().is_none_or(|s| s != "job") {
            return None;
        }
        job_pairs(&segments).map(|(job, _)| job)
    }

    /// The names of the job's folders and of the job itself.
    pub fn names(&self) -> &[String] {
        &self.0
    }
}

/// A matrix configuration segment: `axis=value` pairs joined by `,`, each
/// axis a plain name, the whole a valid name.
fn is_configuration(segment: &str) -> bool {
    valid_name(segment)
        && segment.split(',').all(|pair| {
            pair.split_once('=').is_some_and(|(axis, _)| {
                !axis.is_empty()
                    && axis
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            })
        })
}

/// A build number: digits only, at least 1.
fn build_number(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 19 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|n| *n > 0)
}

/// The path segments of a URL or relative path, each percent-decoded;
/// `None` when it carries a query, a fragment, a backslash, whitespace, or
/// a dot segment (raw or encoded) anywhere: the URL parser would resolve
/// those before we see the path.
fn segments(text: &str) -> Option<Vec<String>> {
    let text = text.trim();
    if text.is_empty()
        || text.contains(['?', '#', '\\'])
        || text.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return None;
    }
    let decoded: Vec<String> = text.split('/').map(decode).collect::<Option<_>>()?;
    if decoded.iter().any(|s| s == "." || s == "..") {
        return None;
    }
    let path = match Url::parse(text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url.path().to_string(),
        Ok(_) => return None,
        Err(_) => text.to_string(),
    };
    path.split('/').map(decode).collect()
}

/// From the first `job` segment on: one or more `job/<name>` pairs, and
/// the segments after them.
fn job_pairs(segments: &[String]) -> Option<(JobPath, Vec<&str>)> {
    let start = segments.iter().position(|s| s == "job")?;
    let mut rest = &segments[start..];
    let mut names = Vec::new();
    while let [job, name, tail @ ..] = rest {
        if job != "job" {
            break;
        }
        if !valid_name(name) {
            return None;
        }
        names.push(name.clone());
        rest = tail;
    }
    if names.is_empty() {
        return None;
    }
    Some((
        JobPath(names, None),
        rest.iter().map(String::as_str).collect(),
    ))
}

/// `%XX` decoded; `None` for a broken escape or bytes that are not UTF-8.
fn decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> Url {
        Url::parse("http://jenkins.internal:8080/ci/").unwrap()
    }

    fn console(text: &str) -> Result<String, String> {
        JobPath::from_build_url(text).map(|(job, n)| job.console_url(&root(), n).to_string())
    }

    #[test]
    fn a_build_url_becomes_its_console_under_jenkins_url() {
        let want = "http://jenkins.internal:8080/ci/job/team/job/app/job/main/123/consoleText";
        for url in [
            "https://ci.example.com/job/team/job/app/job/main/123/",
            "https://ci.example.com/job/team/job/app/job/main/123/consoleText",
            "http://jenkins.internal:8080/ci/job/team/job/app/job/main/123",
            "job/team/job/app/job/main/123/",
        ] {
            assert_eq!(console(url).unwrap(), want, "{url}");
        }
        // Encoded names keep their encoding (a multibranch branch, a space).
        assert_eq!(
            console("https://ci/job/app/job/feature%252Fx/7/").unwrap(),
            "http://jenkins.internal:8080/ci/job/app/job/feature%252Fx/7/consoleText"
        );
        assert_eq!(
            console("https://ci/view/all/job/api%20v2/7/").unwrap(),
            "http://jenkins.internal:8080/ci/job/api%20v2/7/consoleText"
        );
    }

    #[test]
    fn a_matrix_build_keeps_its_configuration() {
        assert_eq!(
            console("https://ci.example.com/job/m/label=linux,jdk=17/7/").unwrap(),
            "http://jenkins.internal:8080/ci/job/m/label=linux,jdk=17/7/consoleText"
        );
        for url in [
            "https://ci.example.com/job/m/label=linux/config.xml",
            "https://ci.example.com/job/m/=linux/7/",
            "https://ci.example.com/job/m/a=..;/7/",
            "https://ci.example.com/job/m/label=linux/7/api/json",
        ] {
            assert!(console(url).is_err(), "{url} was accepted");
        }
    }

    #[test]
    fn urls_that_are_not_a_build_are_refused() {
        for url in [
            // Issue 14, finding 1: a fragment hides the appended consoleText.
            "http://jenkins.internal:8080/ci/credentials/store/system/domain/_/api/json?depth=2#/consoleText",
            "http://jenkins.internal:8080/ci/job/x/config.xml#/consoleText",
            "http://jenkins.internal:8080/ci/manage/script#/consoleText",
            "http://jenkins.internal:8080/ci/job/x/1/consoleText?depth=2",
            "http://jenkins.internal:8080/ci/job/x/1/../../../credentials/1/consoleText",
            "http://jenkins.internal:8080/ci/job/x/%2e%2e/%2E%2e/credentials/1/consoleText",
            "http://jenkins.internal:8080/ci/job/%2e%2e/1/consoleText",
            "http://jenkins.internal:8080/ci/job/x/1/api/json",
            "http://jenkins.internal:8080/ci/job/x/lastBuild/consoleText",
            "http://jenkins.internal:8080/ci/job/x/0/consoleText",
            "http://jenkins.internal:8080/ci/job/x/1/consoleText/x",
            "http://jenkins.internal:8080/ci/job/x/job//1/",
            "http://jenkins.internal:8080/ci/credentials/1/consoleText",
            "http://j/job/x\\..\\..\\credentials/1/",
            "http://j/job/x%zz/1/",
            // A decoded %2F, Tomcat's `..;`, all-dot names: a proxy in front
            // of Jenkins could read them as a way out of the job.
            "http://j/job/x%2F..%2F..%2Fcredentials%2Fstore%2Fsystem%2Fdomain%2F_%2Fapi%2Fjson/1/",
            "http://j/job/x%2F..%2F..%2Fjob%2Fdeploy-prod/1/",
            "http://j/job/..;/1/",
            "http://j/job/x/job/..%3B/1/",
            "http://j/job/.../1/",
            "file:///job/x/1/",
            "",
        ] {
            assert!(
                console(url).is_err(),
                "{url} was accepted: {:?}",
                console(url)
            );
        }
    }

    #[test]
    fn a_built_url_reads_back_as_its_job() {
        for job in ["a/b c", "team/feature%2Fx", "m"] {
            let job = JobPath::from_names(job).unwrap();
            for url in [
                job.console_url(&root(), 7),
                job.url(&root(), &["lastSuccessfulBuild", "consoleText"]),
            ] {
                let back = JobPath::of_url(&root(), &url).unwrap();
                assert_eq!(back.names(), job.names(), "{url}");
            }
        }
        let other = Url::parse("http://elsewhere:8080/ci/job/a/1/consoleText").unwrap();
        assert_eq!(JobPath::of_url(&root(), &other), None);
        let outside = Url::parse("http://jenkins.internal:8080/job/a/1/consoleText").unwrap();
        assert_eq!(JobPath::of_url(&root(), &outside), None);
    }

    #[test]
    fn job_urls_and_names_are_checked_the_same_way() {
        let job = JobPath::from_job_url("https://ci.example.com/job/a/job/b%20c/").unwrap();
        assert_eq!(job, JobPath::from_names("a/b c").unwrap());
        assert_eq!(
            job.url(&root(), &["lastSuccessfulBuild", "consoleText"])
                .as_str(),
            "http://jenkins.internal:8080/ci/job/a/job/b%20c/lastSuccessfulBuild/consoleText"
        );
        assert!(JobPath::from_job_url("job/a/12/").is_err());
        assert!(JobPath::from_job_url("job/a/config.xml#").is_err());
        assert!(JobPath::from_names("a/../b").is_err());
        assert!(JobPath::from_names("").is_err());
        // A name with a slash is one segment, never two.
        let one = JobPath(vec!["a/../../credentials".into()], None);
        assert_eq!(
            one.console_url(&root(), 1).as_str(),
            "http://jenkins.internal:8080/ci/job/a%2F..%2F..%2Fcredentials/1/consoleText"
        );
    }
}
