//! The GitHub and Jenkins tools against fake servers that speak the real
//! wire format (`faultline_tests::fakes`), with a real Postgres behind the
//! tool context (the event the tools default to, the shared rate-limit gate).

use std::time::{Duration, UNIX_EPOCH};

use faultline_shared::{Settings, config::Source};
use faultline_tests::{TestDb, fakes::*, oom_log};
use faultline_worker::{
    sources::SourcesConfig,
    tools::{ToolBelt, ToolContext, ToolError},
};
use serde_json::json;
use uuid::Uuid;
use wiremock::{
    Mock, MockServer,
    matchers::{body_partial_json, header, method, path, query_param},
};

/// A tool belt configured by `env`, and a context on a stored failure of
/// `octo-org/ledger-api` at [`SHA`], job `ledger-api` build 813.
async fn tool_belt(db: &TestDb, env: &[(&str, &str)]) -> (ToolBelt, ToolContext) {
    let source: Source = env.iter().copied().collect();
    let sources = SourcesConfig::load(&source).unwrap();
    let settings = Settings::load(&source).unwrap();
    let fetcher = sources.build(&db.pool, &settings.allowed);
    let belt = ToolBelt::standard(Duration::from_secs(30), None)
        .with_sources(fetcher.github.clone(), fetcher.jenkins.clone())
        .with_rate_limits(
            &settings.tool_rate_limits,
            settings.tool_rate_limit_max_wait,
        )
        .unwrap();
    let run_id = db.enqueue(&db.write("b.log", oom_log()), &[]);
    let event_id: Uuid = sqlx::query_scalar(
        "UPDATE failure_events SET repository = $2, commit_sha = $3,
                job_name = 'ledger-api', build_number = '813'
         WHERE id = (SELECT event_id FROM analysis_runs WHERE id = $1) RETURNING id",
    )
    .bind(run_id)
    .bind(format!("https://github.com/{REPO}.git"))
    .bind(SHA)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let ctx = ToolContext {
        pool: db.pool.clone(),
        run_id,
        event_id,
        twin: None,
    };
    (belt, ctx)
}

fn github_env(server: &MockServer) -> Vec<(&'static str, String)> {
    vec![
        ("GITHUB_TOKEN", GITHUB_TOKEN.to_string()),
        ("GITHUB_API_URL", server.uri()),
    ]
}

fn refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

const FILE: &str = "src/main/java/com/example/ledger/BatchWriter.java";

#[tokio::test(flavor = "multi_thread")]
async fn only_configured_sources_offer_their_tools() {
    let db = TestDb::new().await;
    let (bare, _) = tool_belt(&db, &[]).await;
    assert!(
        !bare
            .names()
            .iter()
            .any(|n| n.starts_with("github") || n.starts_with("jenkins"))
    );
    let (full, _) = tool_belt(
        &db,
        &[
            ("GITHUB_TOKEN", "t"),
            ("JENKINS_URL", "http://127.0.0.1:9/"),
        ],
    )
    .await;
    for name in [
        "github_file",
        "github_blame",
        "github_commits",
        "github_search",
        "jenkins_console",
    ] {
        assert!(
            full.names().contains(&name),
            "{name} missing from {:?}",
            full.names()
        );
    }
    let described = full.describe();
    assert!(described.iter().any(|t| t["name"] == "github_blame"
        && t["parameters"]["required"] == json!(["path", "start_line"])));
    // Only the tools that read nothing but our database are local (audited
    // by their checkpoint); a call that leaves the process is audited
    // before it starts, and so is a name that is no tool. With GitHub,
    // the history also reads the change's files there: not local.
    let local = |belt: &faultline_worker::tools::ToolBelt| -> Vec<&str> {
        belt.names()
            .into_iter()
            .filter(|n| belt.is_local(n))
            .collect()
    };
    assert_eq!(
        local(&full),
        ["log_excerpt", "search_knowledge", "similar_failures"]
    );
    assert_eq!(
        local(&bare),
        [
            "log_excerpt",
            "search_knowledge",
            "similar_failures",
            "failure_history"
        ]
    );
    assert!(!full.is_local("no_such_tool"));
}

#[tokio::test(flavor = "multi_thread")]
async fn github_file_returns_the_lines_around_a_location_at_the_failing_commit() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    let text: String = (1..=80)
        .map(|i| format!("    line {i} of BatchWriter\n"))
        .collect();
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/contents/{FILE}")))
        .and(query_param("ref", SHA))
        .and(header(
            "authorization",
            format!("Bearer {GITHUB_TOKEN}").as_str(),
        ))
        .respond_with(github_json(contents(FILE, &text)))
        .expect(1)
        .mount(&gh)
        .await;
    let (belt, ctx) = tool_belt(&db, &refs(&github_env(&gh))).await;
    let out = belt
        .call(
            &ctx,
            "github_file",
            &json!({"path": FILE, "line": 41, "context": 2}),
        )
        .await
        .unwrap();
    assert_eq!(out["repo"], REPO);
    assert_eq!(out["ref"], SHA);
    assert_eq!(out["total_lines"], 80);
    let lines: Vec<(u64, &str)> = out["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["n"].as_u64().unwrap(), l["text"].as_str().unwrap()))
        .collect();
    assert_eq!(lines.first(), Some(&(39, "    line 39 of BatchWriter")));
    assert_eq!(lines.last(), Some(&(43, "    line 43 of BatchWriter")));
    assert_eq!(lines.len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn github_errors_become_precise_tool_errors() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/contents/src/Missing.java")))
        .respond_with(github_error(404, "Not Found"))
        .mount(&gh)
        .await;
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/commits")))
        .respond_with(github_error(401, "Bad credentials"))
        .mount(&gh)
        .await;
    let (belt, ctx) = tool_belt(&db, &refs(&github_env(&gh))).await;

    let missing = belt
        .call(&ctx, "github_file", &json!({"path": "src/Missing.java"}))
        .await
        .unwrap_err();
    let ToolError::Failed(msg) = &missing else {
        panic!("{missing:?}")
    };
    assert!(
        msg.contains("404 Not Found") && msg.contains("src/Missing.java"),
        "{msg}"
    );

    let bad_token = belt
        .call(&ctx, "github_commits", &json!({"path": FILE}))
        .await
        .unwrap_err();
    let ToolError::Failed(msg) = &bad_token else {
        panic!("{bad_token:?}")
    };
    assert!(
        msg.contains("rejected the credentials (401 Bad credentials)"),
        "{msg}"
    );

    // Bad arguments never reach GitHub.
    let before = gh.received_requests().await.unwrap().len();
    let climb = belt
        .call(&ctx, "github_file", &json!({"path": "../../etc/passwd"}))
        .await
        .unwrap_err();
    assert!(climb.to_string().contains("not a file path"), "{climb}");
    let schema = belt
        .call(&ctx, "github_blame", &json!({"path": FILE}))
        .await
        .unwrap_err();
    assert!(
        matches!(&schema, ToolError::Invalid(m) if m.contains("start_line")),
        "{schema:?}"
    );
    assert_eq!(gh.received_requests().await.unwrap().len(), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn github_blame_keeps_the_ranges_that_cover_the_requested_lines() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    let range = |start: u64, end: u64, oid: &str, headline: &str, who: &str| {
        json!({"startingLine": start, "endingLine": end, "age": 3, "commit": {
            "oid": oid, "abbreviatedOid": &oid[..7], "messageHeadline": headline,
            "committedDate": "2026-11-20T17:02:11Z", "author": {"name": who, "email": format!("{who}@example.com")}}})
    };
    let reply = json!({"data": {"repository": {"object": {"blame": {"ranges": [
        range(1, 30, "1111111aaaaaaa", "Initial import", "octocat"),
        range(31, 45, "2222222bbbbbbb", "Flush batches in parallel", "mona"),
        range(46, 80, "3333333ccccccc", "Add metrics", "hubot"),
    ]}}}}});
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .and(header(
            "authorization",
            format!("Bearer {GITHUB_TOKEN}").as_str(),
        ))
        .and(body_partial_json(json!({"variables": {
            "owner": "octo-org", "name": "ledger-api", "ref": SHA, "path": FILE}})))
        .respond_with(github_json(reply))
        .expect(1)
        .mount(&gh)
        .await;
    let (belt, ctx) = tool_belt(&db, &refs(&github_env(&gh))).await;
    let out = belt
        .call(
            &ctx,
            "github_blame",
            &json!({"path": FILE, "start_line": 40, "end_line": 42}),
        )
        .await
        .unwrap();
    let ranges = out["ranges"].as_array().unwrap();
    assert_eq!(ranges.len(), 1, "{out}");
    assert_eq!(ranges[0]["commit"], "2222222bbbbbbb");
    assert_eq!(ranges[0]["author"], "mona");
    assert_eq!(ranges[0]["message"], "Flush batches in parallel");

    // A path GitHub does not know comes back as a GraphQL error, not a crash.
    gh.reset().await;
    Mock::given(method("POST"))
        .and(path("/graphql"))
        .respond_with(github_json(json!({"data": {"repository": {"object": null}}, "errors": [
            {"type": "NOT_FOUND", "path": ["repository", "object"], "locations": [{"line": 3, "column": 5}],
             "message": "Could not resolve to a Blob with the path 'nope.rs'."}]})))
        .mount(&gh)
        .await;
    let err = belt
        .call(
            &ctx,
            "github_blame",
            &json!({"path": "nope.rs", "start_line": 1}),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("Could not resolve")),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn github_commits_and_search_ask_github_with_its_query_parameters() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/commits")))
        .and(query_param("path", FILE))
        .and(query_param("sha", SHA))
        .and(query_param("per_page", "2"))
        .respond_with(github_json(json!([
            {"sha": "2222222bbbbbbb", "html_url": "https://github.com/octo-org/ledger-api/commit/2222222bbbbbbb",
             "commit": {"message": "Flush batches in parallel\n\nFaster, but reorders.",
                        "author": {"name": "Mona Lisa", "email": "mona@example.com", "date": "2026-11-20T17:02:11Z"}},
             "author": {"login": "mona", "id": 2}},
            {"sha": "1111111aaaaaaa", "html_url": "https://github.com/octo-org/ledger-api/commit/1111111aaaaaaa",
             "commit": {"message": "Initial import", "author": {"name": "The Octocat", "email": "o@example.com", "date": "2026-10-01T09:00:00Z"}},
             "author": {"login": "octocat", "id": 1}}
        ])))
        .expect(1)
        .mount(&gh)
        .await;
    Mock::given(method("GET"))
        .and(path("/search/code"))
        .and(query_param("q", format!("flushesInOrder repo:{REPO}").as_str()))
        .respond_with(github_json(json!({"total_count": 1, "incomplete_results": false, "items": [
            {"name": "BatchWriterTest.java", "path": "src/test/java/com/example/ledger/BatchWriterTest.java",
             "sha": "9f1e2d", "url": "https://api.github.com/repositories/1/contents/x",
             "html_url": "https://github.com/octo-org/ledger-api/blob/main/src/test/java/com/example/ledger/BatchWriterTest.java",
             "repository": {"id": 1, "full_name": REPO}, "score": 1.0}]})))
        .expect(1)
        .mount(&gh)
        .await;
    let (belt, ctx) = tool_belt(&db, &refs(&github_env(&gh))).await;
    let commits = belt
        .call(&ctx, "github_commits", &json!({"path": FILE, "limit": 2}))
        .await
        .unwrap();
    let list = commits["commits"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["message"], "Flush batches in parallel");
    assert_eq!(
        (list[0]["author"].clone(), list[0]["login"].clone()),
        (json!("Mona Lisa"), json!("mona"))
    );
    let found = belt
        .call(&ctx, "github_search", &json!({"query": "flushesInOrder"}))
        .await
        .unwrap();
    assert_eq!(found["count"], 1);
    assert_eq!(
        found["items"][0]["path"],
        "src/test/java/com/example/ledger/BatchWriterTest.java"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limited_github_call_is_retried_after_the_reset_and_blocks_every_worker() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    let reset = epoch_in(1);
    let text = "fn main() {}\n";
    let script = Scripted::new(vec![
        github_rate_limited(reset),
        github_json(contents("src/main.rs", text)),
    ]);
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/contents/src/main.rs")))
        .respond_with(script.clone())
        .mount(&gh)
        .await;
    let secondary = Scripted::new(vec![
        github_error(429, "You have exceeded a secondary rate limit.")
            .insert_header("retry-after", "1"),
        github_json(json!({"total_count": 0, "incomplete_results": false, "items": []})),
    ]);
    Mock::given(method("GET"))
        .and(path("/search/code"))
        .respond_with(secondary.clone())
        .mount(&gh)
        .await;
    let (belt, ctx) = tool_belt(&db, &refs(&github_env(&gh))).await;

    let out = belt
        .call(&ctx, "github_file", &json!({"path": "src/main.rs"}))
        .await
        .unwrap();
    assert_eq!(out["lines"][0]["text"], "fn main() {}");
    assert_eq!(script.count(), 2);
    assert!(
        script.at(1) >= UNIX_EPOCH + Duration::from_secs(reset),
        "the retry came before x-ratelimit-reset"
    );
    // The block is shared through Postgres: other workers wait for the same reset.
    let until: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM blocked_until)::float8 FROM api_rate_limits WHERE api = 'github'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(until as u64, reset);

    // A secondary limit (429 + retry-after) is honoured the same way.
    let found = belt
        .call(&ctx, "github_search", &json!({"query": "main"}))
        .await
        .unwrap();
    assert_eq!(found["count"], 0);
    assert_eq!(secondary.count(), 2);
    assert!(secondary.at(1).duration_since(secondary.at(0)).unwrap() >= Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_rate_limit_is_shared_by_every_worker() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    let commits = Scripted::new(vec![github_json(json!([]))]);
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/commits")))
        .respond_with(commits.clone())
        .mount(&gh)
        .await;
    let call = json!({"path": FILE});

    // Two workers' tool belts, one limit of 2 calls per minute between them;
    // a call that would wait longer than the allowed 0 ms is deferred to a
    // durable step retry, and GitHub never sees it.
    let mut env = github_env(&gh);
    env.push(("TOOL_RATE_LIMITS", "github_commits=2/1m".into()));
    env.push(("TOOL_RATE_LIMIT_MAX_WAIT_MS", "0".into()));
    let (worker_a, ctx) = tool_belt(&db, &refs(&env)).await;
    let (worker_b, _) = tool_belt(&db, &refs(&env)).await;
    worker_a.call(&ctx, "github_commits", &call).await.unwrap();
    worker_b.call(&ctx, "github_commits", &call).await.unwrap();
    let err = worker_a
        .call(&ctx, "github_commits", &call)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Transient(m) if m.contains("rate limited to 2 call(s)")),
        "{err:?}"
    );
    assert_eq!(commits.count(), 2);
    // Other tools are not limited by it.
    worker_b
        .call(
            &ctx,
            "search_knowledge",
            &json!({"query": "OutOfMemoryError"}),
        )
        .await
        .unwrap();

    // With room to wait, the call waits until the window frees a slot.
    let mut env = github_env(&gh);
    env.push(("TOOL_RATE_LIMITS", "github_commits=1/1s".into()));
    let (patient, ctx) = tool_belt(&db, &refs(&env)).await;
    sqlx::query("DELETE FROM rate_limit_requests")
        .execute(&db.pool)
        .await
        .unwrap();
    patient.call(&ctx, "github_commits", &call).await.unwrap();
    patient.call(&ctx, "github_commits", &call).await.unwrap();
    assert_eq!(commits.count(), 4);
    assert!(
        commits.at(3).duration_since(commits.at(2)).unwrap() >= Duration::from_millis(900),
        "the second call did not wait for the window"
    );

    // A name that is no tool is refused at start.
    let settings = Settings::load(
        &[("TOOL_RATE_LIMITS", "github_comits=1")]
            .into_iter()
            .collect(),
    )
    .unwrap();
    let err = ToolBelt::standard(Duration::from_secs(1), None)
        .with_rate_limits(&settings.tool_rate_limits, Duration::ZERO)
        .err()
        .unwrap();
    assert!(
        err.contains("\"github_comits\", which is not a tool"),
        "{err}"
    );
}

/// `n` console lines numbered from 1, in network chunks of `per_chunk` lines.
fn console_chunks(n: usize, per_chunk: usize, last: &str) -> Vec<String> {
    let mut lines: Vec<String> = (1..n)
        .map(|i| format!("[Pipeline] echo console line {i}\n"))
        .collect();
    lines.push(format!("{last}\n"));
    lines.chunks(per_chunk).map(|c| c.concat()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn jenkins_console_streams_a_chunked_body_and_keeps_one_end_within_the_cap() {
    let db = TestDb::new().await;
    let total_lines = 40_000;
    let chunks = console_chunks(total_lines, 500, "Finished: FAILURE");
    let total_bytes: usize = chunks.iter().map(String::len).sum();
    let jenkins = FakeJenkins::start("ledger-api", 813, "ci-bot", "11aa22bb", chunks).await;
    let env = [
        ("JENKINS_URL", jenkins.url.as_str()),
        ("JENKINS_USER", "ci-bot"),
        ("JENKINS_API_TOKEN", "11aa22bb"),
        ("JENKINS_CONSOLE_MAX_BYTES", "65536"),
    ];
    let (belt, ctx) = tool_belt(&db, &env).await;
    let args = json!({"job": "ledger-api", "build": 813});

    let tail = belt.call(&ctx, "jenkins_console", &args).await.unwrap();
    assert_eq!(tail["truncated"], true);
    assert_eq!(tail["total_bytes"], total_bytes);
    let lines = tail["lines"].as_array().unwrap();
    let kept: usize = lines
        .iter()
        .map(|l| l["text"].as_str().unwrap().len() + 1)
        .sum();
    assert!(kept <= 65536 && kept > 60_000, "kept {kept} bytes");
    assert_eq!(lines.last().unwrap()["text"], "Finished: FAILURE");
    assert_eq!(lines.last().unwrap()["n"], total_lines);
    // Line numbers survive the cut: line n reads "console line n".
    let first = &lines[0];
    assert_eq!(
        first["text"],
        format!("[Pipeline] echo console line {}", first["n"])
    );

    let mut head_args = args.clone();
    head_args["part"] = json!("head");
    head_args["max_bytes"] = json!(4096);
    let head = belt
        .call(&ctx, "jenkins_console", &head_args)
        .await
        .unwrap();
    let lines = head["lines"].as_array().unwrap();
    assert_eq!(lines[0]["text"], "[Pipeline] echo console line 1");
    assert!(lines.len() < 200 && head["truncated"] == true);

    // Wrong credentials: Jenkins' 401 becomes an error observation.
    let (bad, ctx2) = tool_belt(
        &db,
        &[
            ("JENKINS_URL", jenkins.url.as_str()),
            ("JENKINS_USER", "ci-bot"),
            ("JENKINS_API_TOKEN", "wrong"),
        ],
    )
    .await;
    let err = bad.call(&ctx2, "jenkins_console", &args).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("401")),
        "{err:?}"
    );
}

/// Issue 14, finding 2: a model steered by a log cannot make the tools
/// read another repository or job; the refusal is an observation, and no
/// request leaves for the other repository or job.
#[tokio::test(flavor = "multi_thread")]
async fn tools_read_only_the_failures_own_repository_and_job() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/contents/{FILE}")))
        .respond_with(github_json(contents(FILE, "class BatchWriter {}\n")))
        .mount(&gh)
        .await;
    Mock::given(method("GET"))
        .and(path("/search/code"))
        .respond_with(github_json(
            json!({"total_count": 2, "incomplete_results": false, "items": [
            {"name": "BatchWriter.java", "path": FILE, "sha": "9f1e2d",
             "html_url": format!("https://github.com/{REPO}/blob/main/{FILE}"),
             "repository": {"id": 1, "full_name": REPO}, "score": 1.0},
            {"name": "secrets.env", "path": "secrets.env", "sha": "777777",
             "html_url": "https://github.com/acme/secrets/blob/main/secrets.env",
             "repository": {"id": 2, "full_name": "acme/secrets"}, "score": 1.0}]}),
        ))
        .mount(&gh)
        .await;
    let jenkins = FakeJenkins::start(
        "ledger-api",
        813,
        "ci-bot",
        "11aa22bb",
        vec!["Finished: FAILURE\n".into()],
    )
    .await;
    let mut env = github_env(&gh);
    env.extend([
        ("JENKINS_URL", jenkins.url.clone()),
        ("JENKINS_USER", "ci-bot".into()),
        ("JENKINS_API_TOKEN", "11aa22bb".into()),
    ]);
    let (belt, ctx) = tool_belt(&db, &refs(&env)).await;

    let refused = |err: ToolError, needle: &str| match err {
        ToolError::Invalid(m) => assert!(m.contains(needle), "{m}"),
        other => panic!("not a refusal the model can read: {other:?}"),
    };
    for (tool, args) in [
        ("github_file", json!({"path": FILE, "repo": "acme/secrets"})),
        (
            "github_file",
            json!({"path": FILE, "repo": "https://github.com/acme/secrets.git"}),
        ),
        (
            "github_file",
            json!({"path": FILE, "repo": "octo-org/ledger-api-fork"}),
        ),
        (
            "github_blame",
            json!({"path": FILE, "start_line": 1, "repo": "acme/secrets"}),
        ),
        ("github_commits", json!({"repo": "acme/secrets"})),
        (
            "github_search",
            json!({"query": "password", "repo": "acme/secrets"}),
        ),
    ] {
        let err = belt.call(&ctx, tool, &args).await.unwrap_err();
        refused(err, "out of scope");
    }
    for query in [
        "password repo:acme/secrets",
        "token org:acme",
        "token user:octocat",
        "x OR repo:acme/secrets",
        "\"api key\" -repo:octo-org/ledger-api",
    ] {
        let err = belt
            .call(&ctx, "github_search", &json!({"query": query}))
            .await
            .unwrap_err();
        refused(err, "qualifier");
    }
    assert_eq!(
        gh.received_requests().await.unwrap().len(),
        0,
        "a refused call reached GitHub"
    );

    // The own repository, named again in another spelling, is fine.
    let own = belt
        .call(
            &ctx,
            "github_file",
            &json!({"path": FILE, "repo": "https://github.com/Octo-Org/Ledger-API.git"}),
        )
        .await
        .unwrap();
    assert_eq!(own["repo"], REPO);
    // A search result of another repository is never shown.
    let found = belt
        .call(
            &ctx,
            "github_search",
            &json!({"query": "BatchWriter path:src"}),
        )
        .await
        .unwrap();
    let items = found["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{found}");
    assert_eq!(items[0]["path"], FILE);
    let searched = gh.received_requests().await.unwrap();
    let q = searched
        .iter()
        .find(|r| r.url.path() == "/search/code")
        .unwrap()
        .url
        .query_pairs()
        .find(|(k, _)| k == "q")
        .unwrap()
        .1
        .to_string();
    assert_eq!(q, format!("BatchWriter path:src repo:{REPO}"));

    // Jenkins: another job, or a folder trick, is refused before any request.
    for args in [
        json!({"job": "deploy-prod", "build": 1}),
        json!({"job": "ledger-api/job/deploy-prod", "build": 1}),
        json!({"job": "team/ledger-api", "build": 813}),
    ] {
        let err = belt.call(&ctx, "jenkins_console", &args).await.unwrap_err();
        refused(err, "out of scope");
    }
    assert_eq!(jenkins.count(), 0, "a refused call reached Jenkins");
    // The own job, by name or by build number alone, is read.
    for args in [
        json!({"job": "ledger-api", "build": 813}),
        json!({"build": 813}),
        json!({}),
    ] {
        let out = belt.call(&ctx, "jenkins_console", &args).await.unwrap();
        assert_eq!(out["lines"][0]["text"], "Finished: FAILURE", "{args}");
    }
    assert_eq!(jenkins.count(), 3);

    // A failure that names no repository offers no repository at all.
    sqlx::query("UPDATE failure_events SET repository = NULL WHERE id = $1")
        .bind(ctx.event_id)
        .execute(&db.pool)
        .await
        .unwrap();
    let err = belt
        .call(&ctx, "github_file", &json!({"path": FILE, "repo": REPO}))
        .await
        .unwrap_err();
    refused(err, "out of scope");
}

/// The search sent is `<query> repo:<own>` with a query that is a
/// conjunction (`OR`, parentheses and a trailing operator are refused
/// before any request: in GitHub's newer grammar `a OR b repo:x` is
/// `a OR (b repo:x)`), and the count reported is what the observation
/// holds, not GitHub's `total_count`, which counts dropped foreign results.
#[tokio::test(flavor = "multi_thread")]
async fn github_search_sends_a_conjunction_scoped_to_the_repository_and_counts_what_it_shows() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    let item = |path: &str, repo: &str| {
        json!({"name": path, "path": path, "sha": "9f1e2d",
               "html_url": format!("https://github.com/{repo}/blob/main/{path}"),
               "repository": {"id": 1, "full_name": repo}, "score": 1.0})
    };
    Mock::given(method("GET"))
        .and(path("/search/code"))
        .respond_with(github_json(
            json!({"total_count": 250, "incomplete_results": false,
            "items": [item(FILE, REPO), item("src/Other.java", "Octo-Org/Ledger-API"),
                      item("secrets.env", "acme/secrets")]}),
        ))
        .mount(&gh)
        .await;
    let (belt, ctx) = tool_belt(&db, &refs(&github_env(&gh))).await;
    for query in [
        "password OR token",
        "(BatchWriter) secret",
        "BatchWriter NOT",
        "BatchWriter -",
    ] {
        let err = belt
            .call(&ctx, "github_search", &json!({"query": query}))
            .await
            .unwrap_err();
        assert!(matches!(&err, ToolError::Invalid(_)), "{query}: {err:?}");
    }
    assert_eq!(gh.received_requests().await.unwrap().len(), 0);

    let found = belt
        .call(
            &ctx,
            "github_search",
            &json!({"query": "BatchWriter NOT test path:src", "limit": 3}),
        )
        .await
        .unwrap();
    let sent = gh.received_requests().await.unwrap();
    assert_eq!(sent.len(), 1);
    let q: Vec<(String, String)> = sent[0].url.query_pairs().into_owned().collect();
    assert_eq!(
        q,
        [
            (
                "q".to_string(),
                format!("BatchWriter NOT test path:src repo:{REPO}")
            ),
            ("per_page".to_string(), "3".to_string())
        ]
    );
    assert_eq!(found["count"], 2, "{found}");
    assert_eq!(found["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        found["total_count"],
        json!(null),
        "GitHub's count is not passed on"
    );
    assert_eq!(
        found["dropped"], "1 result(s) of other repositories were dropped",
        "{found}"
    );
}

/// `FAULTLINE_ALLOWED_REPOSITORIES` / `FAULTLINE_ALLOWED_JENKINS_JOBS`: a
/// failure of a repository or job outside them gets no tool call through,
/// even on its own repository and job; the refusal is `out of scope:`
/// (the run goes to review) and no request is sent. Inside them, the
/// same calls work.
#[tokio::test(flavor = "multi_thread")]
async fn tools_refuse_a_repository_or_job_outside_the_allow_list() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(format!("/repos/{REPO}/contents/{FILE}")))
        .respond_with(github_json(contents(FILE, "class BatchWriter {}\n")))
        .mount(&gh)
        .await;
    let jenkins = FakeJenkins::start(
        "ledger-api",
        813,
        "ci-bot",
        "11aa22bb",
        vec!["Finished: FAILURE\n".into()],
    )
    .await;
    let env = |repos: &str, jobs: &str| {
        let mut env = github_env(&gh);
        env.extend([
            ("JENKINS_URL", jenkins.url.clone()),
            ("JENKINS_USER", "ci-bot".into()),
            ("JENKINS_API_TOKEN", "11aa22bb".into()),
            ("FAULTLINE_ALLOWED_REPOSITORIES", repos.into()),
            ("FAULTLINE_ALLOWED_JENKINS_JOBS", jobs.into()),
        ]);
        env
    };
    let outside = env("octo-org/other, acme/*", "team-a/, ledger-api-nightly");
    let (belt, ctx) = tool_belt(&db, &refs(&outside)).await;
    for (tool, args, list) in [
        (
            "github_file",
            json!({"path": FILE}),
            "FAULTLINE_ALLOWED_REPOSITORIES",
        ),
        (
            "github_commits",
            json!({}),
            "FAULTLINE_ALLOWED_REPOSITORIES",
        ),
        (
            "github_search",
            json!({"query": "BatchWriter"}),
            "FAULTLINE_ALLOWED_REPOSITORIES",
        ),
        (
            "jenkins_console",
            json!({}),
            "FAULTLINE_ALLOWED_JENKINS_JOBS",
        ),
        (
            "jenkins_console",
            json!({"build": 812}),
            "FAULTLINE_ALLOWED_JENKINS_JOBS",
        ),
    ] {
        match belt.call(&ctx, tool, &args).await {
            Err(ToolError::Failed(m) | ToolError::Invalid(m)) => assert!(
                m.starts_with("out of scope:") && m.contains(list),
                "{tool}: {m}"
            ),
            other => panic!("{tool} {args}: {other:?}"),
        }
    }
    assert_eq!(gh.received_requests().await.unwrap().len(), 0);
    assert_eq!(jenkins.count(), 0, "a refused call reached Jenkins");

    let inside = env("Octo-Org/*", "LEDGER-API");
    let (belt, ctx) = tool_belt(&db, &refs(&inside)).await;
    let file = belt
        .call(&ctx, "github_file", &json!({"path": FILE}))
        .await
        .unwrap();
    assert_eq!(file["lines"][0]["text"], "class BatchWriter {}");
    let console = belt
        .call(&ctx, "jenkins_console", &json!({}))
        .await
        .unwrap();
    assert_eq!(console["lines"][0]["text"], "Finished: FAILURE");
}

/// Issue 14, finding 9: numbers the schema forbids never reach GitHub,
/// however large (`2^64 - 1` once slipped past the range check).
#[tokio::test(flavor = "multi_thread")]
async fn out_of_range_numbers_are_refused_before_any_request() {
    let db = TestDb::new().await;
    let gh = MockServer::start().await;
    let (belt, ctx) = tool_belt(&db, &refs(&github_env(&gh))).await;
    let huge = json!(u64::MAX);
    for (tool, args) in [
        ("github_commits", json!({"limit": huge})),
        ("github_commits", json!({"limit": i64::MAX})),
        ("github_commits", json!({"limit": -1})),
        ("github_commits", json!({"limit": 2.5})),
        ("github_commits", json!({"limit": "5"})),
        ("github_search", json!({"query": "x", "limit": huge})),
        ("github_file", json!({"path": FILE, "context": huge})),
        ("github_file", json!({"path": FILE, "line": huge})),
        ("github_blame", json!({"path": FILE, "start_line": huge})),
        ("github_search", json!({"query": "x".repeat(300)})),
        ("log_excerpt", json!({"max_lines": huge})),
        ("search_knowledge", json!({"query": "x", "limit": huge})),
    ] {
        let err = belt.call(&ctx, tool, &args).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Invalid(m) if m.contains("invalid arguments")),
            "{tool} {args}: {err:?}"
        );
    }
    assert_eq!(gh.received_requests().await.unwrap().len(), 0);
}
