//! Sending one notification to each target: the signed generic webhook and
//! a GitHub check run. Each call is one HTTP request; retries are the
//! outbox's job (schedule in Postgres), never a loop here.

use faultline_shared::storage::{events::EventRow, runs::RunRow};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use uuid::Uuid;

use faultline_shared::{
    Origin, RunStatus, Specifics,
    config::{ExposeSecret, SecretString},
    hex,
    pr_comment::repository_path,
};

pub const WEBHOOK: &str = "webhook";
pub const GITHUB: &str = "github";
pub const SLACK: &str = "slack";
/// The pull request's comment was marked for (re)writing.
pub const PR_COMMENT: &str = "pr_comment";
/// A transient failure's re-run was decided (requested, refused or not needed).
pub const RERUN: &str = "rerun";

/// `sha256=<hex HMAC-SHA256(body, secret)>`, the `X-Faultline-Signature` value.
pub fn signature(body: &[u8], secret: &SecretString) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose_secret().as_bytes())
        .expect("HMAC accepts keys of any length");
    mac.update(body);
    format!("sha256={}", hex(&mac.finalize().into_bytes()))
}

/// The webhook body: the run's verdict and the event it analysed. Built from
/// data that no longer changes, so every retry sends the same bytes.
pub fn payload(delivery: Uuid, kind: &str, run: &RunRow, event: Option<&EventRow>) -> Value {
    let result = run.result.clone().unwrap_or(Value::Null);
    json!({
        "delivery_id": delivery,
        "event": format!("analysis.{kind}"),
        "run_id": run.id,
        "status": run.status,
        "category": run.category,
        "confidence": run.confidence,
        "root_cause": result["root_cause"],
        "fix": result["fix"],
        // Did this change break it (`this_change`, `already_failing`,
        // `flaky`, `infrastructure`, `unknown`), and why.
        "origin": result.get("origin").cloned().unwrap_or_else(|| json!("unknown")),
        "origin_evidence": result.get("origin_evidence").cloned().unwrap_or_else(|| json!([])),
        "evidence": result["evidence"],
        // What the log names: failing tests, first diagnostic, unresolved
        // packages, failed step (`{}` when it names nothing).
        "specifics": result.get("specifics").cloned().unwrap_or_else(|| json!({})),
        "finished_at": run.finished_at,
        "failure": event.map(|e| json!({
            "source": e.source, "job": e.job_name, "build": e.build_number, "test": e.test_name,
            "repository": e.repository, "commit": e.commit_sha, "log_name": e.log_name,
        })),
    })
}

/// POSTs the signed body to the webhook; `Err` carries why it failed.
pub async fn webhook(
    http: &reqwest::Client,
    url: &str,
    secret: &SecretString,
    delivery: Uuid,
    kind: &str,
    body: &[u8],
) -> Result<(), String> {
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("user-agent", "faultline-notify")
        .header("x-faultline-delivery", delivery.to_string())
        .header("x-faultline-event", format!("analysis.{kind}"))
        .header("x-faultline-signature", signature(body, secret))
        .body(body.to_vec())
        .send()
        .await
        .map_err(|e| format!("webhook: {e}"))?;
    check(resp, "webhook").await
}

/// Text from a log or a model as Slack `mrkdwn`: `&`, `<` and `>` escaped
/// (Slack's rule), so a hostile line cannot mention `<!channel>` or forge a
/// link, and cut to `max` characters.
fn slack_text(text: &str, max: usize) -> String {
    let cut = faultline_shared::text::truncate_chars(text, max);
    let mut out = cut
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    if cut.len() < text.len() {
        out.push('…');
    }
    out
}

/// Who owns the file a failure is in: the repository's CODEOWNERS entry
/// for it (`who` names the owners and the entry's line).
#[derive(Debug, Clone, PartialEq)]
pub struct FileOwners {
    pub path: String,
    pub who: String,
}

/// The Slack message of a finished run (Block Kit, with a `text` fallback
/// for notifications): origin and category first, the root cause, the
/// failure it analysed, why the origin, and a button to the console when
/// `console` (its public base URL) is known.
pub fn slack_message(
    run: &RunRow,
    event: Option<&EventRow>,
    console: Option<&str>,
    owners: Option<&FileOwners>,
) -> Value {
    let result = run.result.clone().unwrap_or(Value::Null);
    let category = run.category.map_or("UNKNOWN", |c| c.as_str());
    let (origin, why) = Origin::of_result(&result);
    let root = result["root_cause"].as_str().unwrap_or("-");
    let headline = format!("{}: {category}", origin.label());
    let mut fields = vec![
        json!({"type": "mrkdwn", "text": format!("*Origin*\n{}", origin.label())}),
        json!({"type": "mrkdwn", "text": format!("*Category*\n{category} ({:.2})", run.confidence.unwrap_or(0.0))}),
    ];
    if let Some(e) = event {
        let job = match (&e.job_name, &e.build_number) {
            (Some(j), Some(b)) => format!("{j} #{b}"),
            (Some(j), None) => j.clone(),
            _ => e.source.clone(),
        };
        fields.push(json!({"type": "mrkdwn", "text": format!("*Job*\n{}", slack_text(&job, 200))}));
        if let Some(r) = &e.repository {
            fields.push(
                json!({"type": "mrkdwn", "text": format!("*Repository*\n{}", slack_text(r, 200))}),
            );
        }
    }
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": faultline_shared::text::truncate_chars(&format!("Faultline · {headline}"), 150)}}),
        json!({"type": "section", "fields": fields}),
        json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("*Root cause*\n{}", slack_text(root, 2800))}}),
    ];
    if let Some(o) = owners {
        blocks.push(
            json!({"type": "section", "text": {"type": "mrkdwn", "text": format!(
                "*Owners of `{}`*\n{}",
                slack_text(&o.path, 300),
                slack_text(&o.who, 600)
            )}}),
        );
    }
    let why: Vec<String> = why.iter().map(|w| slack_text(w, 600)).collect();
    if !why.is_empty() {
        blocks.push(
            json!({"type": "context", "elements": [{"type": "mrkdwn", "text": why.join("\n")}]}),
        );
    }
    if run.status == RunStatus::NeedsReview {
        blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": "Confidence is low: this analysis waits for human review."}]}));
    }
    if let Some(base) = console {
        blocks.push(json!({"type": "actions", "elements": [{
            "type": "button",
            "text": {"type": "plain_text", "text": "Open in Faultline"},
            "url": format!("{base}/ui/analyses/{}", run.id),
        }]}));
    }
    json!({
        "text": format!("Faultline: {headline}: {}", slack_text(root, 300)),
        "blocks": blocks,
    })
}

/// POSTs `body` to a Slack incoming webhook (`200 ok`; Slack answers
/// errors such as `400 invalid_payload`, `404 no_service`, `429` with a
/// plain-text body, which becomes the recorded error).
pub async fn slack(http: &reqwest::Client, url: &SecretString, body: &Value) -> Result<(), String> {
    let resp = http
        .post(url.expose_secret())
        .header("user-agent", "faultline-notify")
        .json(body)
        .send()
        .await
        // reqwest's error shows the URL, which is the secret.
        .map_err(|e| format!("slack: {}", e.without_url()))?;
    check(resp, "slack").await
}

/// Most annotations GitHub takes in one request: more are added by
/// updating the check run, 50 at a time.
pub const ANNOTATIONS_PER_REQUEST: usize = 50;
/// Most annotations one check run gets (the diagnosis lists at most 200
/// diagnostics, plus failing tests).
const MAX_ANNOTATIONS: usize = 250;
/// Pages of the commit's check runs read to find this delivery's.
const LOOKUP_PAGES: u32 = 5;
/// Most bytes read of one GitHub answer.
const MAX_ANSWER_BYTES: usize = 4 << 20;
/// Most requests of one delivery attempt, one after the other: the
/// webhook, Slack, the failing file's CODEOWNERS (one per place GitHub
/// looks), and for the check run the lookup pages, the create and its
/// annotation updates. The outbox lock is sized from it.
pub const MAX_REQUESTS_PER_ATTEMPT: u32 = 2
    + crate::sources::codeowners::LOCATIONS.len() as u32
    + LOOKUP_PAGES
    + 1
    + (MAX_ANNOTATIONS / ANNOTATIONS_PER_REQUEST) as u32;

/// Creates a completed check run named `faultline` on the failed commit
/// (`POST /repos/{owner}/{repo}/check-runs`; needs a GitHub App token with
/// `checks: write`). `external_id` carries the delivery id. Each error with
/// a file and a line (compiler and linter diagnostics, failing tests)
/// becomes an annotation: the first 50 with the check run, the rest by
/// `PATCH` 50 at a time (GitHub's limit, and it appends them).
///
/// Exactly once across retries and crashes: a check run of this delivery
/// that GitHub already has (found by its `external_id` on the commit) is
/// not created again, and its `annotations_count` says which annotations
/// it has, so an attempt that died between two requests resumes after the
/// last one GitHub took.
pub async fn github_check_run(
    gh: &GitHub<'_>,
    api: &str,
    delivery: Uuid,
    repository: &str,
    head_sha: &str,
    run: &RunRow,
    owners: Option<&FileOwners>,
) -> Result<(), String> {
    let result = run.result.clone().unwrap_or(Value::Null);
    let category = run.category.map_or("UNKNOWN", |c| c.as_str());
    let confidence = run.confidence.unwrap_or(0.0);
    let (origin, why) = Origin::of_result(&result);
    let mut summary = format!("**Origin:** {}", origin.label());
    if !why.is_empty() {
        summary.push_str(&format!(" — {}", why.join("; ")));
    }
    summary.push_str(&format!(
        "\n\n**Root cause:** {}\n\n**Fix:** {}\n",
        result["root_cause"].as_str().unwrap_or("-"),
        result["fix"].as_str().unwrap_or("-")
    ));
    let specifics: Specifics =
        serde_json::from_value(result["specifics"].clone()).unwrap_or_default();
    if !specifics.is_empty() {
        summary.push_str("\n**What the log names:**\n");
        for (label, text) in specifics.lines() {
            summary.push_str(&format!("- {label}: {text}\n"));
        }
    }
    if let Some(o) = owners {
        summary.push_str(&format!(
            "\n**Owners of `{}`:** {}\n",
            o.path.replace('`', "'"),
            // Named, not mentioned: a failure does not page a team.
            faultline_shared::pr_comment::md(&o.who)
        ));
    }
    if run.status == RunStatus::NeedsReview {
        summary.push_str("\nConfidence is low: this analysis waits for human review.\n");
    }
    let mut all = annotations(&specifics);
    all.truncate(MAX_ANNOTATIONS);
    if !(7..=64).contains(&head_sha.len()) || !head_sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "github: {head_sha:?} is not a commit SHA, so no check run is created"
        ));
    }
    let title = format!(
        "{}: {category} (confidence {confidence:.2})",
        origin.label()
    );
    let output =
        |batch: &[Value]| json!({ "title": title, "summary": summary, "annotations": batch });
    let (id, mut sent) = match gh.existing(api, repository, head_sha, delivery).await? {
        Some(found) => found,
        None => {
            let first = &all[..all.len().min(ANNOTATIONS_PER_REQUEST)];
            let body = json!({
                "name": "faultline",
                "head_sha": head_sha,
                "status": "completed",
                "conclusion": "neutral",
                "external_id": delivery.to_string(),
                "output": output(first),
            });
            let url = github_url(api, repository, &["check-runs"])?;
            let created = gh.send(gh.http.post(url).json(&body)).await?;
            let id = created["id"]
                .as_u64()
                .ok_or_else(|| "github: the created check run has no id".to_string())?;
            (id, first.len())
        }
    };
    let url = github_url(api, repository, &["check-runs", &id.to_string()])?;
    while sent < all.len() {
        let batch = &all[sent..all.len().min(sent + ANNOTATIONS_PER_REQUEST)];
        gh.send(
            gh.http
                .patch(url.clone())
                .json(&json!({ "output": output(batch) })),
        )
        .await?;
        sent += batch.len();
    }
    Ok(())
}

/// Authenticated GitHub REST requests of the notifier.
pub(crate) struct GitHub<'a> {
    pub(crate) http: &'a reqwest::Client,
    pub(crate) token: &'a SecretString,
}

impl GitHub<'_> {
    /// Sends `req` with the token and GitHub's headers; the JSON answer.
    async fn send(&self, req: reqwest::RequestBuilder) -> Result<Value, String> {
        let (status, answer) = self.request(req).await?;
        if !(200..300).contains(&status) {
            let text = match &answer {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            let text: String = text.chars().take(200).collect();
            let status = reqwest::StatusCode::from_u16(status)
                .map_or_else(|_| status.to_string(), |s| s.to_string());
            return Err(format!("github answered {status}: {text}"));
        }
        Ok(answer)
    }

    /// Sends `req` with the token and GitHub's headers: the status and
    /// the JSON answer (`null` when it is not JSON), whatever the status.
    /// `Err` only when no answer came (or one over the size bound).
    pub(crate) async fn request(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<(u16, Value), String> {
        let resp = req
            .bearer_auth(self.token.expose_secret())
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
            .header("user-agent", "faultline-notify")
            .send()
            .await
            .map_err(|e| format!("github: {e}"))?;
        let status = resp.status().as_u16();
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_ANSWER_BYTES as u64)
        {
            return Err(format!("github: an answer over {MAX_ANSWER_BYTES} bytes"));
        }
        let mut bytes = Vec::new();
        let mut resp = resp;
        while let Some(chunk) = resp.chunk().await.map_err(|e| format!("github: {e}"))? {
            if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(format!("github: an answer over {MAX_ANSWER_BYTES} bytes"));
            }
            bytes.extend_from_slice(&chunk);
        }
        let answer = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(_) => Value::String(String::from_utf8_lossy(&bytes).chars().take(200).collect()),
        };
        Ok((status, answer))
    }

    /// The check run of `delivery` on the commit, if GitHub has it: its id
    /// and how many annotations it holds
    /// (`GET /repos/{owner}/{repo}/commits/{ref}/check-runs`).
    async fn existing(
        &self,
        api: &str,
        repository: &str,
        head_sha: &str,
        delivery: Uuid,
    ) -> Result<Option<(u64, usize)>, String> {
        let external = delivery.to_string();
        // A large matrix may leave more than a page of check runs on a
        // commit: read pages until this delivery's, a short page, or the
        // bound.
        for page in 1..=LOOKUP_PAGES {
            let mut url = github_url(api, repository, &["commits", head_sha, "check-runs"])?;
            url.query_pairs_mut()
                .append_pair("check_name", "faultline")
                .append_pair("filter", "all")
                .append_pair("per_page", "100")
                .append_pair("page", &page.to_string());
            let listed = self.send(self.http.get(url)).await?;
            let runs = listed["check_runs"].as_array().cloned().unwrap_or_default();
            if let Some(c) = runs
                .iter()
                .find(|c| c["external_id"].as_str() == Some(external.as_str()))
            {
                let id = c["id"]
                    .as_u64()
                    .ok_or_else(|| "github: a listed check run has no id".to_string())?;
                let count = c["output"]["annotations_count"].as_u64().unwrap_or(0);
                return Ok(Some((id, count as usize)));
            }
            if runs.len() < 100 {
                return Ok(None);
            }
        }
        Err(format!(
            "github: more than {} faultline check runs on {head_sha}; not creating another",
            LOOKUP_PAGES * 100
        ))
    }
}

/// The check run's annotations: every diagnostic and failing test with a
/// file (relative to the repository) and a line.
pub fn annotations(specifics: &Specifics) -> Vec<Value> {
    let mut out = Vec::new();
    let located = |file: &Option<String>, line: Option<u32>| {
        let path = repository_path(file.as_deref()?)?;
        Some((path, line.filter(|l| *l > 0)?))
    };
    // The first diagnostic is in the list too when it has a location.
    let first = specifics.diagnostic.iter().filter(|d| {
        !specifics
            .diagnostics
            .iter()
            .any(|o| o.file == d.file && o.line == d.line)
    });
    for d in first.chain(&specifics.diagnostics) {
        let Some((path, line)) = located(&d.file, d.line) else {
            continue;
        };
        let title = match &d.code {
            Some(code) => format!("{} {code}", d.tool),
            None => d.tool.clone(),
        };
        let mut a = json!({
            "path": path,
            "start_line": line,
            "end_line": line,
            "annotation_level": "failure",
            "title": faultline_shared::text::truncate_chars(&title, 255),
            "message": faultline_shared::text::truncate_bytes(d.message.as_deref().unwrap_or(&title), 60_000),
        });
        if let Some(col) = d.column.filter(|c| *c > 0) {
            a["start_column"] = json!(col);
            a["end_column"] = json!(col);
        }
        out.push(a);
    }
    for t in &specifics.failing_tests {
        let Some((path, line)) = located(&t.file, t.line) else {
            continue;
        };
        let runner = t
            .runner
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        out.push(json!({
            "path": path,
            "start_line": line,
            "end_line": line,
            "annotation_level": "failure",
            "title": faultline_shared::text::truncate_chars(&format!("test {} failed", t.name), 255),
            "message": faultline_shared::text::truncate_bytes(&format!("{} failed{runner}", t.name), 60_000),
        }));
    }
    out
}

/// `{api}/repos/{owner}/{name}/{tail…}`, each segment percent-encoded:
/// a stored repository name that is not exactly `owner/name` (issue 14:
/// `octo/repo/../../../user/repos`) reaches no other API path.
pub(crate) fn github_url(
    api: &str,
    repository: &str,
    tail: &[&str],
) -> Result<reqwest::Url, String> {
    let (owner, name) = crate::sources::github::full_name(repository).ok_or_else(|| {
        format!("github: repository {repository:?} is not owner/name, so no check run is created")
    })?;
    let mut url =
        reqwest::Url::parse(api).map_err(|e| format!("github: GITHUB_API_URL {api:?}: {e}"))?;
    url.path_segments_mut()
        .map_err(|()| format!("github: GITHUB_API_URL {api:?} is not an http(s) URL"))?
        .pop_if_empty()
        .extend(["repos", &owner, &name])
        .extend(tail);
    Ok(url)
}

async fn check(resp: reqwest::Response, target: &str) -> Result<(), String> {
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    let text = resp.text().await.unwrap_or_default();
    let text: String = text.chars().take(200).collect();
    Err(format!("{target} answered {status}: {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_runs_stay_under_the_repository() {
        assert_eq!(
            github_url(
                "https://ghe.example.com/api/v3/",
                "octo-org/ledger-api",
                &["check-runs"]
            )
            .unwrap()
            .as_str(),
            "https://ghe.example.com/api/v3/repos/octo-org/ledger-api/check-runs"
        );
        for bad in [
            "octo/repo/../../../user/repos",
            "octo/repo/x",
            "octo/..",
            "octo/repo?x=1",
            "octo",
        ] {
            let err = github_url("https://api.github.com", bad, &["check-runs"]).unwrap_err();
            assert!(err.contains("is not owner/name"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_signature_is_hmac_sha256_of_the_body() {
        // The same construction GitHub documents for X-Hub-Signature-256.
        let secret = SecretString::from("It's a Secret to Everybody");
        assert_eq!(
            signature(b"Hello, World!", &secret),
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }
}

#[cfg(test)]
mod annotation_tests {
    use super::*;
    use faultline_shared::specifics::{FailingTest, FirstDiagnostic};

    #[test]
    fn workspace_prefixes_are_cut_and_paths_outside_the_checkout_dropped() {
        for (given, want) in [
            ("src/app.ts", Some("src/app.ts")),
            ("./src/app.ts", Some("src/app.ts")),
            (
                "/home/runner/work/ledger/ledger/src/app.ts",
                Some("src/app.ts"),
            ),
            ("/__w/ledger/ledger/lib/a.rb", Some("lib/a.rb")),
            (
                "/Users/runner/work/ledger/ledger/Sources/App.swift",
                Some("Sources/App.swift"),
            ),
            ("D:\\a\\ledger\\ledger\\src\\Main.cs", Some("src/Main.cs")),
            ("/home/travis/build/octo/ledger/pkg/a.go", Some("pkg/a.go")),
            (
                "/var/lib/jenkins/workspace/ledger-main/src/A.java",
                Some("src/A.java"),
            ),
            ("/usr/include/stdio.h", None),
            ("../outside.c", None),
            ("src/../../etc/passwd", None),
            ("", None),
        ] {
            assert_eq!(repository_path(given).as_deref(), want, "{given}");
        }
    }

    #[test]
    fn diagnostics_and_failing_tests_with_a_location_become_annotations() {
        let d = |file: &str, line: u32, log_line: u64| FirstDiagnostic {
            tool: "tsc".into(),
            file: Some(file.into()),
            line: Some(line),
            column: Some(5),
            code: Some("TS2322".into()),
            message: Some("Type 'string' is not assignable to type 'number'.".into()),
            log_line: Some(log_line),
        };
        let specifics = Specifics {
            diagnostic: Some(d("src/a.ts", 3, 10)),
            diagnostics: vec![
                d("src/a.ts", 3, 10),
                d("/usr/lib/x.d.ts", 1, 11),
                d("src/b.ts", 9, 12),
            ],
            failing_tests: vec![
                FailingTest {
                    name: "totals".into(),
                    file: Some("test/cart.test.ts".into()),
                    line: Some(12),
                    runner: Some("jest".into()),
                    ..FailingTest::default()
                },
                FailingTest {
                    name: "no location".into(),
                    ..FailingTest::default()
                },
            ],
            ..Specifics::default()
        };
        let a = annotations(&specifics);
        let at: Vec<(String, u64)> = a
            .iter()
            .map(|a| {
                (
                    a["path"].as_str().unwrap().to_string(),
                    a["start_line"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            at,
            [
                ("src/a.ts".into(), 3),
                ("src/b.ts".into(), 9),
                ("test/cart.test.ts".into(), 12)
            ]
        );
        assert_eq!(a[0]["annotation_level"], "failure");
        assert_eq!(a[0]["title"], "tsc TS2322");
        assert_eq!(a[0]["start_column"], 5);
        assert_eq!(a[2]["title"], "test totals failed");
    }
}

#[cfg(test)]
mod slack_tests {
    use super::*;

    #[test]
    fn log_text_cannot_mention_a_channel_or_forge_a_link_in_slack() {
        assert_eq!(
            slack_text("<!channel> see <https://evil.example|docs> & more", 100),
            "&lt;!channel&gt; see &lt;https://evil.example|docs&gt; &amp; more"
        );
        assert_eq!(slack_text("é".repeat(10).as_str(), 3), "ééé…");
    }
}
