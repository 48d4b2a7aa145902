//! The pull-request comment's text (issue 32): every failed job of a
//! pull request's head commit, grouped by failure, in GitHub Markdown —
//! written by the worker's notifier, previewed by `faultline pr-comment`.
//! Log text in it is escaped: it cannot mention, link, open HTML or break
//! out of a section.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::{
    Origin,
    specifics::Specifics,
    storage::pr_comments::{CommitJob, PrComment},
    text::truncate_chars,
    types::RunStatus,
};

/// The first line of every Faultline pull-request comment: how it is found again.
pub const MARKER: &str = "<!-- faultline:pr-comment -->";
/// Most bytes of a comment's body (GitHub refuses more than 65,536 characters).
const MAX_BODY: usize = 60_000;

/// The web address of the GitHub whose API is `api`: `https://github.com`
/// for `https://api.github.com`, `https://host` for Enterprise's
/// `https://host/api/v3`.
pub fn web_base(api: &str) -> String {
    let api = api.trim_end_matches('/');
    if let Some(rest) = api.strip_prefix("https://api.") {
        return format!("https://{rest}");
    }
    api.strip_suffix("/api/v3").unwrap_or(api).to_string()
}

/// The `owner/name` of a repository on the GitHub whose web address is
/// `web` ([`web_base`]), from the clone URL a CI system names it by
/// (`https://github.com/o/r.git`, `ssh://git@github.com/o/r.git`,
/// `git@github.com:o/r.git`): how a Jenkins build of a GitHub repository
/// finds its pull request. `None` for another host (a clone URL of
/// another forge never reaches the GitHub the token writes to) or a URL
/// that does not name exactly `owner/name`.
pub fn github_repository(clone_url: &str, web: &str) -> Option<String> {
    let web_host = web
        .trim_end_matches('/')
        .split_once("://")
        .map_or(web, |(_, h)| h)
        .to_ascii_lowercase();
    let web_name = web_host.split(':').next().unwrap_or("");
    let url = clone_url.trim();
    let path = if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/')?;
        let host = authority
            .rsplit_once('@')
            .map_or(authority, |(_, h)| h)
            .to_ascii_lowercase();
        let same = match scheme.to_ascii_lowercase().as_str() {
            "https" | "http" => host == web_host,
            // An SSH port is not the web's: the host names are compared.
            "ssh" | "git" => host.split(':').next() == Some(web_name),
            _ => false,
        };
        same.then_some(path)?
    } else {
        // scp-like: `git@host:owner/name.git`.
        let (authority, path) = url.split_once(':')?;
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        host.eq_ignore_ascii_case(web_name).then_some(path)?
    };
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let (owner, name) = path.split_once('/')?;
    let part = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.len() <= 100
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    (part(owner) && part(name)).then(|| format!("{owner}/{name}"))
}

/// Who owns a repository path (CODEOWNERS), as the comment shows it:
/// `@org/team, @user (CODEOWNERS line 12)`.
pub type OwnersOf<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The body of the comment on `comment`'s pull request: its head commit's
/// failed jobs (`jobs`), grouped by failure (the same fingerprint, else
/// the same category and root cause), each in a collapsible section;
/// `owners` names who owns the failing file, when it is known.
pub fn render(
    comment: &PrComment,
    jobs: &[CommitJob],
    web: &str,
    console: Option<&str>,
    owners: Option<OwnersOf<'_>>,
) -> String {
    let sha = &comment.head_sha;
    let short = &sha[..sha.len().min(7)];
    let mut groups: Vec<(String, Vec<&CommitJob>)> = Vec::new();
    for job in jobs {
        let result = job.run.result.clone().unwrap_or(Value::Null);
        let key = job.run.fingerprint.clone().unwrap_or_else(|| {
            format!(
                "{}|{}",
                result["category"].as_str().unwrap_or(""),
                result["root_cause"].as_str().unwrap_or("")
            )
        });
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(job),
            None => groups.push((key, vec![job])),
        }
    }
    let mut out = format!("{MARKER}\n### Faultline: ");
    let failed = jobs.len();
    out.push_str(&format!(
        "{failed} failed job{} on {short}",
        if failed == 1 { "" } else { "s" }
    ));
    if groups.len() > 1 {
        out.push_str(&format!(", {} distinct failures", groups.len()));
    }
    out.push('\n');
    if let (Some(passed), job) = (&comment.passed_sha, &comment.passed_job) {
        let p = &passed[..passed.len().min(7)];
        out.push_str(&format!(
            "\n> [!NOTE]\n> **A later run passed:** {} on {p}. What follows is the last failure of this pull request, on {short}.\n",
            md(job.as_deref().unwrap_or("a job"))
        ));
    }
    for (_, list) in &groups {
        let first = list[0];
        let result = first.run.result.clone().unwrap_or(Value::Null);
        let (origin, why) = Origin::of_result(&result);
        let category = first.run.category.map_or("UNKNOWN", |c| c.as_str());
        let root = one_line(result["root_cause"].as_str().unwrap_or("no answer"));
        let names: Vec<String> = list
            .iter()
            .map(|j| format!("`{}`", code(j.job_name.as_deref().unwrap_or("job"))))
            .collect();
        // A summary is HTML: Markdown is not read inside it.
        let jobs: Vec<String> = list
            .iter()
            .map(|j| {
                format!(
                    "<code>{}</code>",
                    html(j.job_name.as_deref().unwrap_or("job"))
                )
            })
            .collect();
        out.push_str(&format!(
            "\n<details><summary><b>{}</b> · {category} · {}: {}</summary>\n\n",
            origin.label(),
            jobs.join(", "),
            html(&first_sentence(&root, 140))
        ));
        out.push_str(&format!("**Jobs:** {}\n\n", names.join(", ")));
        if !why.is_empty() {
            out.push_str(&format!("**Origin:** {}\n\n", md(&why.join("; "))));
        }
        if let Some(j) = list.iter().find(|j| j.rerun_state.is_some()) {
            let state = j.rerun_state.as_deref().unwrap_or_default();
            let detail = md(&one_line(j.rerun_detail.as_deref().unwrap_or_default()));
            let said = match state {
                "refused" => format!("asked once, refused by the CI system ({detail})"),
                "unanswered" => {
                    format!("asked once, but no answer came before Faultline gave up ({detail})")
                }
                "done" => format!(
                    "the failed jobs were re-run once, as the failure looks {} ({detail})",
                    origin.label()
                ),
                _ => "requested once; waiting for the CI system's answer".to_string(),
            };
            out.push_str(&format!("**Re-run:** {said}\n\n"));
        }
        out.push_str(&format!("**Root cause:** {}\n\n", md(&root)));
        let specifics: Specifics =
            serde_json::from_value(result["specifics"].clone()).unwrap_or_default();
        if !specifics.failing_tests.is_empty() {
            let tests: Vec<String> = specifics
                .failing_tests
                .iter()
                .take(10)
                .map(|t| format!("`{}`", code(&t.name)))
                .collect();
            let more = specifics.failing_tests.len().saturating_sub(10);
            out.push_str(&format!(
                "**Failing tests:** {}{}\n\n",
                tests.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        let first_diagnostic = specifics
            .diagnostic
            .iter()
            .chain(&specifics.diagnostics)
            .next();
        if let Some(d) = first_diagnostic {
            let message = d.message.as_deref().unwrap_or("");
            let at = d.file.as_deref().and_then(repository_path).map(|path| {
                match d.line.filter(|l| *l > 0) {
                    Some(line) => format!(
                        "[`{}:{line}`]({web}/{}/blob/{sha}/{}#L{line})",
                        code(&path),
                        comment.repository,
                        url_path(&path)
                    ),
                    None => format!("`{}`", code(&path)),
                }
            });
            out.push_str(&format!(
                "**First error:** {}{} {}\n\n",
                at.map(|a| format!("{a} ")).unwrap_or_default(),
                md(&d.tool),
                md(truncate_chars(&one_line(message), 300))
            ));
        }
        let failing_file = failing_file(&specifics);
        if let (Some(path), Some(owners)) = (&failing_file, owners)
            && let Some(who) = owners(path)
        {
            out.push_str(&format!("**Owners of `{}`:** {}\n\n", code(path), md(&who)));
        }
        if let Some(fix) = result["fix"].as_str().filter(|f| !f.is_empty()) {
            out.push_str(&format!("**Fix:** {}\n\n", md(&one_line(fix))));
        }
        let review = if first.run.status == RunStatus::NeedsReview {
            " — waiting for human review"
        } else {
            ""
        };
        out.push_str(&format!(
            "Confidence {:.2}{review}",
            first.run.confidence.unwrap_or(0.0)
        ));
        if let Some(base) = console {
            let links: Vec<String> = list
                .iter()
                .map(|j| format!("[analysis]({base}/ui/analyses/{})", j.run.id))
                .collect();
            out.push_str(&format!(
                " · {} · [not helpful?]({base}/ui/analyses/{}#feedback)",
                links.join(" · "),
                first.run.id
            ));
        }
        out.push_str("\n</details>\n");
        if out.len() > MAX_BODY {
            break;
        }
    }
    out.push_str(
        "\n<sub>Faultline · 👍 / 👎 on this comment tell us whether it helped (every analysis it shows gets the vote).</sub>\n",
    );
    crate::text::truncate_bytes(&out, MAX_BODY).to_string()
}

/// A repository path in a URL: every byte but `A-Z a-z 0-9 - . _ ~ /`
/// percent-encoded.
fn url_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The comment as a terminal shows it: sections as headed blocks, bold
/// as bold (ANSI, when `ansi`), HTML entities and Markdown escapes undone,
/// links as `text <url>`, the hidden marker left out.
pub fn to_terminal(body: &str, ansi: bool) -> String {
    let (bold, dim, off) = if ansi {
        ("\x1b[1m", "\x1b[2m", "\x1b[0m")
    } else {
        ("", "", "")
    };
    static LINK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\[([^\]]*)\]\((https?://[^)\s]+)\)").expect("valid regex")
    });
    static TAG: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"</?(?:b|code|summary|details|sub)>").expect("valid regex")
    });
    let unescape = |t: &str| -> String {
        let mut out = String::with_capacity(t.len());
        let mut chars = t.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' && chars.peek().is_some_and(|n| n.is_ascii_punctuation()) {
                out.push(chars.next().unwrap_or('\\'));
            } else if c != '\u{200b}' {
                out.push(c);
            }
        }
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#91;", "[")
            .replace("&#93;", "]")
            .replace("&amp;", "&")
    };
    let mut out = String::new();
    for line in body.lines() {
        if line == MARKER || line == "</details>" || line.starts_with("> [!NOTE]") {
            continue;
        }
        let line = LINK.replace_all(line, "$1 <$2>");
        let text = if let Some(h) = line.strip_prefix("### ") {
            format!("{bold}{}{off}", unescape(h))
        } else if let Some(rest) = line.strip_prefix("<details><summary>") {
            let summary = TAG.replace_all(rest, "");
            format!("\n{bold}▸ {}{off}", unescape(&summary))
        } else if line.starts_with("<sub>") {
            format!("{dim}{}{off}", unescape(&TAG.replace_all(&line, "")))
        } else if let Some(q) = line.strip_prefix("> ") {
            format!("  {}", unescape(&q.replace("**", "")))
        } else if let Some(rest) = line.strip_prefix("**") {
            match rest.split_once(":**") {
                Some((label, tail)) => format!("  {bold}{label}:{off}{}", unescape(tail)),
                None => format!("  {}", unescape(&line)),
            }
        } else if line.is_empty() {
            continue;
        } else {
            format!("  {}", unescape(&line))
        };
        out.push_str(&text);
        out.push('\n');
    }
    out
}

/// Newlines and runs of spaces folded: one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Log text in Markdown, on one line after a label: no HTML, no mention,
/// no link or image of its own, no emphasis or code span it did not mean.
pub fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' => out.push_str("@\u{200b}"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '~' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Log text inside HTML (a `<summary>`): escaped, no mention.
fn html(text: &str) -> String {
    one_line(text)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('[', "&#91;")
        .replace(']', "&#93;")
        .replace('@', "@\u{200b}")
}

/// The first sentence of `text`, at most `max` characters.
fn first_sentence(text: &str, max: usize) -> String {
    let line = one_line(text);
    let end = line.find(". ").map_or(line.len(), |i| i + 1);
    let sentence = &line[..end];
    if sentence.chars().count() <= max {
        sentence.to_string()
    } else {
        format!("{}…", truncate_chars(sentence, max - 1))
    }
}

/// Text inside a code span: backticks cannot close it, and no tag shows
/// through a renderer that reads HTML there.
fn code(text: &str) -> String {
    one_line(text)
        .replace('`', "'")
        .replace('<', "‹")
        .replace('>', "›")
}

/// Hex SHA-256 of a body: how a write knows whether the comment changed.
pub fn sha256(body: &str) -> String {
    crate::hex(&Sha256::digest(body.as_bytes()))
}

/// The file a failure is in, as a path in the repository: the first
/// error's, else the first failing test's (whose owners are named).
pub fn failing_file(specifics: &Specifics) -> Option<String> {
    specifics
        .diagnostic
        .iter()
        .chain(&specifics.diagnostics)
        .find_map(|d| d.file.as_deref())
        .or_else(|| {
            specifics
                .failing_tests
                .iter()
                .find_map(|t| t.file.as_deref())
        })
        .and_then(repository_path)
}

/// A file as the log names it, as a path in the repository: CI
/// workspaces' absolute prefixes (GitHub-hosted and container runners,
/// Travis, GitLab, Jenkins) and `./` are cut; `None` for a path outside
/// the checkout or one that climbs out of it.
pub fn repository_path(file: &str) -> Option<String> {
    static WORKSPACE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"^(?:/home/runner/work/[^/]+/[^/]+/|/Users/runner/work/[^/]+/[^/]+/|/__w/[^/]+/[^/]+/|/github/workspace/|[A-Za-z]:/a/[^/]+/[^/]+/|/home/travis/build/[^/]+/[^/]+/|/builds/[^/]+/[^/]+/|/(?:var/lib/jenkins|var/jenkins_home|home/jenkins(?:/agent)?)/workspace/[^/]+/)",
        )
        .expect("valid regex")
    });
    let file = file.trim().replace('\\', "/");
    let file = WORKSPACE.replace(&file, "");
    let mut file = file.as_ref();
    while let Some(rest) = file.strip_prefix("./") {
        file = rest;
    }
    let bad = file.is_empty()
        || file.starts_with('/')
        || file.contains(':')
        || file.split('/').any(|s| s == ".." || s.is_empty());
    (!bad).then(|| file.to_string())
}

#[cfg(test)]
mod tests {
    use crate::{storage::runs::RunRow, types::RunStatus};
    use chrono::Utc;
    use uuid::Uuid;

    use super::*;
    use serde_json::json;

    #[test]
    fn a_clone_url_names_its_github_repository_only_on_that_github() {
        let web = web_base("https://api.github.com");
        for url in [
            "https://github.com/octo/app.git",
            "https://github.com/octo/app",
            "https://x-access-token@github.com/octo/app.git/",
            "ssh://git@github.com/octo/app.git",
            "ssh://git@github.com:22/octo/app.git",
            "git@github.com:octo/app.git",
            "GIT@GitHub.com:octo/app",
        ] {
            assert_eq!(
                github_repository(url, &web).as_deref(),
                Some("octo/app"),
                "{url}"
            );
        }
        let ghe = web_base("https://ghe.example.com/api/v3");
        assert_eq!(
            github_repository("https://ghe.example.com/team/svc.git", &ghe).as_deref(),
            Some("team/svc")
        );
        for url in [
            "https://gitlab.com/octo/app.git",
            "https://github.com.evil.example/octo/app.git",
            "git@gitlab.com:octo/app.git",
            "https://github.com/octo/app/tree/main",
            "https://github.com/octo",
            "https://github.com/../app.git",
            "file:///srv/git/app.git",
            "/srv/git/octo/app.git",
            "",
        ] {
            assert_eq!(github_repository(url, &web), None, "{url}");
        }
        assert_eq!(
            github_repository("https://github.com/octo/app.git", &ghe),
            None
        );
    }

    fn comment() -> PrComment {
        PrComment {
            repository: "octo/app".into(),
            pr_number: 7,
            head_branch: Some("feature".into()),
            head_sha: "1f3c5e7a9b2d4f6081a3c5e7092b4d6f8a1c3e50".into(),
            version: 1,
            dirty: true,
            ..PrComment::default()
        }
    }

    fn job(name: &str, fingerprint: &str, result: Value) -> CommitJob {
        let now = Utc::now();
        CommitJob {
            run: RunRow {
                id: Uuid::now_v7(),
                event_id: Uuid::now_v7(),
                status: RunStatus::Completed,
                priority: 10,
                reasoner: "heuristic".into(),
                iteration: 3,
                max_iterations: 8,
                attempts: 1,
                max_attempts: 5,
                next_attempt_at: now,
                last_error: None,
                lease_owner: None,
                lease_expires_at: None,
                lease_epoch: 1,
                fingerprint: Some(fingerprint.into()),
                category: serde_json::from_value(result["category"].clone()).ok(),
                confidence: Some(0.9),
                result: Some(result),
                failure_reason: None,
                tokens_in: 0,
                tokens_out: 0,
                cost_usd: 0.0,
                created_at: now,
                updated_at: now,
                started_at: Some(now),
                finished_at: Some(now),
                traceparent: None,
                prompt_version: None,
                shadow_of: None,
            },
            job_name: Some(name.into()),
            rerun_state: None,
            rerun_detail: None,
        }
    }

    #[test]
    fn jobs_that_fail_alike_share_a_section_and_the_first_error_links_to_its_line() {
        let compile = json!({
            "category": "CODE_ERROR", "origin": "this_change",
            "origin_evidence": ["job `CI / build` passed on main before this change"],
            "root_cause": "A type error. The compiler stopped.", "fix": "Fix the type.",
            "specifics": {"diagnostic": {"tool": "tsc", "file": "/home/runner/work/app/app/src/a b.ts",
                                         "line": 3, "code": "TS2322", "message": "Type 'string' is not assignable"}},
        });
        let mut e2e = job(
            "CI / e2e",
            "fp-b",
            json!({"category": "INFRA_ERROR", "origin": "infrastructure",
                                      "root_cause": "Connection refused.", "fix": "Retry."}),
        );
        e2e.rerun_state = Some("done".into());
        e2e.rerun_detail = Some("re-run of the failed jobs of run 9".into());
        let jobs = vec![
            job("CI / build (node 20)", "fp-a", compile.clone()),
            job("CI / build (node 22)", "fp-a", compile),
            e2e,
        ];
        let owners = |path: &str| {
            (path == "src/a b.ts").then(|| "@octo/web (CODEOWNERS line 4)".to_string())
        };
        let body = render(
            &comment(),
            &jobs,
            "https://github.com",
            Some("https://f.example"),
            Some(&owners),
        );
        assert!(body.starts_with(MARKER));
        // Named, not mentioned: a failure does not page a team.
        assert!(
            body.contains("**Owners of `src/a b.ts`:** @\u{200b}octo/web (CODEOWNERS line 4)"),
            "{body}"
        );
        assert!(
            body.contains("3 failed jobs on 1f3c5e7, 2 distinct failures"),
            "{body}"
        );
        assert_eq!(body.matches("<details>").count(), 2, "{body}");
        // One "not helpful?" link per failure, to the console's feedback form.
        assert_eq!(body.matches("#feedback)").count(), 2, "{body}");
        assert!(body.contains("<summary><b>this change</b> · CODE_ERROR · <code>CI / build (node 20)</code>, <code>CI / build (node 22)</code>: A type error.</summary>"), "{body}");
        assert!(
            body.contains("[`src/a b.ts:3`](https://github.com/octo/app/blob/1f3c5e7a9b2d4f6081a3c5e7092b4d6f8a1c3e50/src/a%20b.ts#L3)"),
            "{body}"
        );
        assert!(body.contains("passed on main before this change"), "{body}");
        assert!(body.contains("https://f.example/ui/analyses/"), "{body}");
        // The re-run is said in its failure's section only.
        assert_eq!(body.matches("**Re-run:**").count(), 1, "{body}");
        assert!(body.contains("**Re-run:** the failed jobs were re-run once, as the failure looks infrastructure (re-run of the failed jobs of run 9)"), "{body}");
        assert!(!body.contains("A later run passed"));
    }

    #[test]
    fn log_text_cannot_mention_link_or_open_html_in_the_comment() {
        let hostile = json!({
            "category": "TEST_FAILURE",
            "root_cause": "@octo/admins see [here](https://evil.example) <img src=x onerror=alert(1)> `x`",
            "fix": "**now** ![i](https://evil.example/i.png)",
        });
        let body = render(
            &comment(),
            &[job("CI </summary><script>", "fp", hostile)],
            "https://github.com",
            None,
            None,
        );
        assert!(!body.contains("@octo"), "{body}");
        assert!(
            !body.contains("<img") && !body.contains("<script>"),
            "{body}"
        );
        assert!(
            !body.contains("[here](") && !body.contains("![i]("),
            "{body}"
        );
        assert!(!body.contains("**now**"), "{body}");
        assert_eq!(body.matches("</summary>").count(), 1, "{body}");
    }

    #[test]
    fn the_terminal_preview_undoes_the_markdown_and_keeps_the_words() {
        let hostile = json!({"category": "CODE_ERROR", "root_cause": "a < b in [x](y) @team", "fix": "Fix *it*."});
        let body = render(
            &comment(),
            &[job("CI / build", "fp", hostile)],
            "https://github.com",
            Some("https://f.example"),
            None,
        );
        let t = to_terminal(&body, false);
        assert!(
            !t.contains("<!--") && !t.contains("<details>") && !t.contains("\\"),
            "{t}"
        );
        assert!(
            t.contains("▸ origin unknown · CODE_ERROR · CI / build: a < b in [x](y) @team"),
            "{t}"
        );
        assert!(t.contains("  Fix: Fix *it*."), "{t}");
        assert!(
            t.contains("analysis <https://f.example/ui/analyses/"),
            "{t}"
        );
        assert!(to_terminal(&body, true).contains("\x1b[1m"));
    }

    #[test]
    fn a_later_pass_is_said_first_and_enterprise_links_go_to_its_host() {
        let mut c = comment();
        c.passed_sha = Some("2a4c6e8b0d1f3a5c7e9b1d3f5a7c9e1b3d5f7a90".into());
        c.passed_job = Some("CI / test".into());
        let body = render(&c, &[], "https://github.com", None, None);
        assert!(
            body.contains("**A later run passed:** CI / test on 2a4c6e8"),
            "{body}"
        );
        assert_eq!(web_base("https://api.github.com"), "https://github.com");
        assert_eq!(
            web_base("https://ghe.example.com/api/v3/"),
            "https://ghe.example.com"
        );
    }

    #[test]
    fn a_re_run_s_state_is_said_in_its_failure_s_section() {
        let infra = json!({"category": "INFRA_ERROR", "origin": "infrastructure",
                           "root_cause": "Connection refused.", "fix": "Retry."});
        for (state, detail, said) in [
            (
                "requested",
                "",
                "requested once; waiting for the CI system's answer",
            ),
            ("done", "run 9", "the failed jobs were re-run once"),
            (
                "refused",
                "403: too old",
                "asked once, refused by the CI system (403: too old)",
            ),
            (
                "unanswered",
                "no answer after 8 attempts: 502",
                "asked once, but no answer came before Faultline gave up (no answer after 8 attempts: 502)",
            ),
        ] {
            let mut e2e = job("CI / e2e", "fp-b", infra.clone());
            e2e.rerun_state = Some(state.into());
            e2e.rerun_detail = Some(detail.into());
            let body = render(&comment(), &[e2e], "https://github.com", None, None);
            assert!(
                body.contains(&format!("**Re-run:** {said}")),
                "{state}: {body}"
            );
        }
    }
}
