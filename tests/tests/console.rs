//! The review console in a real headless Chromium (issue 17): sign-in, the
//! queue grouped by fingerprint, an item with its evidence highlighted,
//! decisions with the keyboard only, group decisions, CSRF and bad input
//! refused without a change, live updates across two browsers. Items come
//! from real analyses of a bundled sample log by a real worker. Screenshots
//! land in `target/console-screenshots/`.

use std::time::Duration;

use fantoccini::key::Key;
use faultline_tests::{Serve, TestDb, browser::Browser, wait_terminal};
use serde_json::Value;
use uuid::Uuid;

/// A served database whose queue holds `n` items of one failure group:
/// `n` analyses of the same ambiguous log (different builds) that the
/// worker sent to review.
struct Console {
    db: TestDb,
    serve: Serve,
    /// Review item ids, oldest first.
    items: Vec<Uuid>,
}

async fn console(n: usize, serve_env: &[(&str, &str)]) -> Console {
    let db = TestDb::new().await;
    let path = db.write_sample("ambiguous.log");
    let worker = db.worker("w1", &[]);
    let mut runs = Vec::new();
    for i in 0..n {
        let key = format!("nightly#{i}");
        let run: Uuid = db
            .cli_ok(
                &["enqueue", path.to_str().unwrap(), "--dedup-key", &key],
                &[],
            )
            .parse()
            .unwrap();
        runs.push(run);
    }
    for run in &runs {
        assert_eq!(
            wait_terminal(&db.pool, *run, Duration::from_secs(60)).await,
            "needs_review"
        );
    }
    drop(worker);
    let items: Vec<Uuid> =
        sqlx::query_scalar("SELECT id FROM review_items ORDER BY created_at, id")
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(items.len(), n);
    let serve = db.serve(serve_env).await;
    Console { db, serve, items }
}

async fn item_state(db: &TestDb, id: Uuid) -> (String, Option<String>, Option<Value>) {
    sqlx::query_as("SELECT status, claimed_by, resolution FROM review_items WHERE id = $1")
        .bind(id)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

async fn audit_actions(db: &TestDb, id: Uuid) -> Vec<(String, String, String)> {
    sqlx::query_as("SELECT actor, via, action FROM review_audit WHERE item_id = $1 ORDER BY id")
        .bind(id)
        .fetch_all(&db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_reviewer_signs_in_sees_the_item_and_its_cited_evidence_highlighted() {
    let c = console(1, &[]).await;
    let token = c.db.token("reviewer", "alice");
    let b = Browser::start(&c.serve.base).await;

    // Any console page asks for a sign-in first, and comes back after it.
    b.goto(&format!("/ui/review/{}", c.items[0])).await;
    assert!(b.path().await.starts_with("/ui/login?next="));
    b.sign_in(&token).await;
    assert_eq!(b.path().await, format!("/ui/review/{}", c.items[0]));

    b.goto("/ui/review").await;
    let row = b.find("#queue tr.group-row").await;
    assert_eq!(
        row.attr("data-id").await.unwrap().as_deref(),
        Some(c.items[0].to_string().as_str())
    );
    let text = row.text().await.unwrap();
    assert!(text.contains("low confidence"), "{text}");
    assert_eq!(b.text("#queue-count").await, "1 item in 1 group");
    b.screenshot("queue").await;

    // The first row is selected on load: Enter opens it.
    b.press(&String::from(char::from(Key::Enter))).await;
    b.wait_for_path("the item", |p| {
        p.starts_with("/ui/review/0") || p.contains(&c.items[0].to_string())
    })
    .await;
    let cited = b.find_all(".log .line.cited .text").await;
    assert!(!cited.is_empty(), "no evidence line highlighted");
    let result: Value = sqlx::query_scalar(
        "SELECT r.result FROM analysis_runs r JOIN review_items i ON i.run_id = r.id WHERE i.id = $1",
    )
    .bind(c.items[0])
    .fetch_one(&c.db.pool)
    .await
    .unwrap();
    let quotes: Vec<String> = result["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["quote"].as_str().unwrap().to_string())
        .collect();
    for line in &cited {
        let line = line.text().await.unwrap();
        assert!(
            quotes
                .iter()
                .any(|q| q.contains(line.trim()) || line.contains(q.trim())),
            "highlighted {line:?} is not cited in {quotes:?}"
        );
    }
    // Line numbers are the log's own.
    let n: u64 = b
        .find(".log .line.cited")
        .await
        .attr("data-n")
        .await
        .unwrap()
        .unwrap()
        .parse()
        .unwrap();
    assert!(n >= 1);
    assert!(b.text("#root-cause").await.len() > 3);
    // The origin verdict, with what decided it.
    let origin = b.text("#origin").await;
    assert!(
        [
            "this change",
            "already failing",
            "flaky",
            "infrastructure",
            "origin unknown"
        ]
        .iter()
        .any(|o| origin.starts_with(o)),
        "{origin}"
    );
    assert!(b.find_all("#trace ol.steps > li").await.len() >= 2);
    b.screenshot("item").await;
}

#[tokio::test]
async fn claim_and_correct_with_the_keyboard_only_then_the_audit_shows_the_diff() {
    let c = console(1, &[]).await;
    let id = c.items[0];
    let token = c.db.token("reviewer", "alice");
    let b = Browser::start(&c.serve.base).await;
    b.sign_in(&token).await;

    // ? opens the cheat sheet, Escape closes it.
    b.find("#queue tr.group-row.selected").await;
    b.press("?").await;
    b.wait_for_js(
        "the cheat sheet is open",
        "return document.getElementById('cheatsheet').open;",
        Duration::from_secs(5),
    )
    .await;
    b.press(&String::from(char::from(Key::Escape))).await;
    b.wait_for_js(
        "the cheat sheet is closed",
        "return !document.getElementById('cheatsheet').open;",
        Duration::from_secs(5),
    )
    .await;

    // Queue: the first row is selected; Enter opens it, c claims it.
    b.find("#queue tr.group-row.selected").await;
    b.press(&String::from(char::from(Key::Enter))).await;
    b.wait_for_path("the item", |p| p.contains(&id.to_string()))
        .await;
    b.find("#claim-form").await;
    b.press("c").await;
    b.wait_for_path("the claim", |p| p.contains("done=claimed"))
        .await;
    let (status, by, _) = item_state(&c.db, id).await;
    assert_eq!((status.as_str(), by.as_deref()), ("claimed", Some("alice")));

    // e: the correction form's first field; type a category, Tab to the
    // root cause and the fix, replace them, Ctrl+Enter saves.
    b.find("#correct-form").await;
    b.press("e").await;
    b.wait_for_js(
        "the category field has the focus",
        "return document.activeElement && document.activeElement.id === 'category';",
        Duration::from_secs(5),
    )
    .await;
    b.press("INFRA").await;
    b.press(&String::from(char::from(Key::Tab))).await;
    b.chord(Key::Control, 'a').await;
    b.press("The runner ran out of disk space while linking")
        .await;
    b.press(&String::from(char::from(Key::Tab))).await;
    b.chord(Key::Control, 'a').await;
    b.press("Free disk space on the runner").await;
    b.chord(Key::Control, char::from(Key::Enter)).await;
    b.wait_for_path("the queue after the decision", |p| {
        p.starts_with("/ui/review?done=")
    })
    .await;

    let (status, _, resolution) = item_state(&c.db, id).await;
    assert_eq!(status, "resolved");
    let resolution = resolution.unwrap();
    assert_eq!(resolution["action"], "correct");
    assert_eq!(resolution["category"], "INFRA_ERROR");
    assert_eq!(
        resolution["root_cause"],
        "The runner ran out of disk space while linking"
    );
    assert_eq!(resolution["fix"], "Free disk space on the runner");
    let audit = audit_actions(&c.db, id).await;
    assert_eq!(
        audit,
        [
            ("alice".into(), "console".into(), "claim".into()),
            ("alice".into(), "console".into(), "resolve".into())
        ]
    );
    // It left the queue.
    assert!(b.find_all("#queue tr.row").await.is_empty());
    assert!(b.source().await.contains("Nothing waits for review"));

    // The audit: the agent's answer against the correction, word by word.
    b.goto(&format!("/ui/review/{id}/audit")).await;
    let inserted = b.text("table.diff td.after ins").await;
    assert!(!inserted.trim().is_empty());
    let after = b.text("table.diff tr.changed td.after").await;
    assert!(
        after.contains("disk") || after.contains("INFRA_ERROR"),
        "{after}"
    );
    assert!(!b.find_all("table.diff td.before del").await.is_empty());
    b.screenshot("audit").await;
}

#[tokio::test]
async fn a_group_decision_resolves_every_member_each_with_its_own_audit() {
    let c = console(4, &[]).await;
    let fingerprints: Vec<Option<String>> = sqlx::query_scalar(
        "SELECT r.fingerprint FROM review_items i JOIN analysis_runs r ON r.id = i.run_id",
    )
    .fetch_all(&c.db.pool)
    .await
    .unwrap();
    assert!(fingerprints[0].is_some() && fingerprints.iter().all(|f| *f == fingerprints[0]));
    let token = c.db.token("reviewer", "alice");
    let b = Browser::start(&c.serve.base).await;
    b.sign_in(&token).await;

    // One row for the group; g shows its members.
    assert_eq!(b.find_all("#queue tr.group-row").await.len(), 1);
    assert!(b.text("#queue button.toggle").await.contains("×4"));
    assert_eq!(b.text("#queue-count").await, "4 items in 1 group");
    let members = b.find_all("#queue tr.member").await;
    assert_eq!(members.len(), 3);
    assert!(!members[0].is_displayed().await.unwrap());
    b.press("g").await;
    b.wait_for_js(
        "the group's members are shown",
        "return [...document.querySelectorAll('#queue tr.member')].every(r => !r.hidden);",
        Duration::from_secs(5),
    )
    .await;
    b.screenshot("queue-group").await;

    // Bob holds the newest member; claim the lead, g = the whole group, a = accept.
    let held = c.items[3];
    c.db.cli_ok(&["review", "claim", &held.to_string(), "--as", "bob"], &[]);
    b.goto(&format!("/ui/review/{}", c.items[0])).await;
    b.find("#claim-form").await;
    b.press("c").await;
    b.wait_for_path("the claim", |p| p.contains("done=claimed"))
        .await;
    b.find("#accept-form").await;
    b.press("g").await;
    b.wait_for_js(
        "the group scope is ticked",
        "return document.querySelector('#accept-form input.scope-group').checked;",
        Duration::from_secs(5),
    )
    .await;
    b.press("a").await;
    b.wait_for_path("the queue after the decision", |p| {
        p.starts_with("/ui/review?done=")
    })
    .await;
    let notice = b.text(".notice").await;
    assert!(
        notice.contains("accepted 3 items (1 held by others left alone)"),
        "{notice}"
    );
    let (status, by, _) = item_state(&c.db, held).await;
    assert_eq!((status.as_str(), by.as_deref()), ("claimed", Some("bob")));

    for id in &c.items[..3] {
        let (status, _, resolution) = item_state(&c.db, *id).await;
        assert_eq!(status, "resolved", "{id}");
        assert_eq!(resolution.unwrap()["action"], "accept");
        let actions: Vec<String> = audit_actions(&c.db, *id)
            .await
            .into_iter()
            .map(|(_, _, a)| a)
            .collect();
        assert_eq!(actions, ["claim", "resolve"], "{id}");
    }
    let library: i64 = sqlx::query_scalar("SELECT count(*) FROM review_resolutions")
        .fetch_one(&c.db.pool)
        .await
        .unwrap();
    assert_eq!(library, 1, "the group's answer is learnt once");
    // Every member carries the lead's answer.
    let answers: Vec<(String, String)> = sqlx::query_as(
        "SELECT resolution ->> 'category', resolution ->> 'root_cause' FROM review_items
         WHERE status = 'resolved'",
    )
    .fetch_all(&c.db.pool)
    .await
    .unwrap();
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");

    // The failure group: four runs on four days, the reviewer's verdict.
    sqlx::query(
        "UPDATE analysis_runs r SET created_at = r.created_at - make_interval(days => (x.n * 3)::int)
         FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) - 1 AS n FROM analysis_runs) x
         WHERE x.id = r.id",
    )
    .execute(&c.db.pool)
    .await
    .unwrap();
    b.goto("/ui/groups").await;
    let row = b.text("#groups tr.row").await;
    assert!(row.contains("reviewer"), "{row}");
    let label = b
        .find("#groups svg.spark")
        .await
        .attr("aria-label")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(label, "4 runs in the last 14 days");
    assert_eq!(b.find_all("#groups svg.spark rect.bar").await.len(), 4);
    b.screenshot("groups").await;
}

#[tokio::test]
async fn bad_input_stale_forms_and_other_claims_are_refused_and_change_nothing() {
    let c = console(2, &[]).await;
    let (first, second) = (c.items[0], c.items[1]);
    let token = c.db.token("reviewer", "alice");
    let b = Browser::start(&c.serve.base).await;
    b.sign_in(&token).await;
    b.goto(&format!("/ui/review/{first}")).await;
    b.find("#claim-form").await;
    b.press("c").await;
    b.wait_for_path("the claim", |p| p.contains("done=claimed"))
        .await;
    b.find("#correct-form").await;

    let unchanged = |what: &'static str| {
        let db = &c.db;
        async move {
            let (status, by, resolution) = item_state(db, first).await;
            assert_eq!(
                (status.as_str(), by.as_deref(), resolution),
                ("claimed", Some("alice"), None),
                "{what} changed the item"
            );
            let n = audit_actions(db, first).await.len();
            assert_eq!(n, 1, "{what} wrote an audit row");
        }
    };
    // Submits `form` after `script` changed it; returns the notice shown.
    let submit = |form: &'static str, script: String| {
        let b = &b;
        async move {
            b.client
                .execute(
                    &format!("{script}; document.getElementById('{form}').requestSubmit();"),
                    vec![],
                )
                .await
                .unwrap();
            b.wait_for_js(
                "the page with the refusal",
                "return document.readyState === 'complete' && !!document.querySelector('.notice.error');",
                Duration::from_secs(10),
            )
            .await;
            b.text(".notice.error").await
        }
    };

    let msg = submit(
        "accept-form",
        "document.querySelector('#accept-form input[name=csrf]').value = 'flt_stale'".into(),
    )
    .await;
    assert!(msg.contains("stale"), "{msg}");
    unchanged("a stale CSRF token").await;

    b.goto(&format!("/ui/review/{first}")).await;
    let msg = submit(
        "accept-form",
        "document.querySelector('#accept-form input[name=csrf]').remove()".into(),
    )
    .await;
    assert!(msg.contains("no security token"), "{msg}");
    unchanged("a POST without a CSRF token").await;

    b.goto(&format!("/ui/review/{first}")).await;
    let msg = submit(
        "correct-form",
        "document.getElementById('root_cause').value = '   '".into(),
    )
    .await;
    assert!(msg.contains("root_cause: is empty"), "{msg}");
    unchanged("an empty root cause").await;
    // The refused correction is shown again for fixing.
    let fix = b.find("#fix").await.prop("value").await.unwrap().unwrap();
    assert!(
        !fix.is_empty(),
        "the refused correction's fix is shown again"
    );

    b.goto(&format!("/ui/review/{first}")).await;
    let msg = submit(
        "correct-form",
        "const s = document.getElementById('category'); s.add(new Option('BOGUS', 'BOGUS')); s.value = 'BOGUS'".into(),
    )
    .await;
    assert!(msg.contains("category:"), "{msg}");
    assert!(msg.contains("BOGUS"), "{msg}");
    unchanged("an unknown category").await;

    // Someone else claims the second item while alice looks at it.
    b.goto(&format!("/ui/review/{second}")).await;
    b.find("#claim-form").await;
    c.db.cli_ok(
        &["review", "claim", &second.to_string(), "--as", "bob"],
        &[],
    );
    let msg = submit("claim-form", String::new()).await;
    assert!(msg.contains("claimed by bob"), "{msg}");
    let (_, by, _) = item_state(&c.db, second).await;
    assert_eq!(by.as_deref(), Some("bob"));

    // An expired session: the form is refused with a sign-in page.
    b.goto(&format!("/ui/review/{first}")).await;
    b.find("#accept-form").await;
    sqlx::query("UPDATE console_sessions SET expires_at = now() - interval '1 second'")
        .execute(&c.db.pool)
        .await
        .unwrap();
    let msg = submit("accept-form", String::new()).await;
    assert!(msg.contains("session has expired"), "{msg}");
    assert!(b.find_all("input[name=token]").await.len() == 1);
    unchanged("a POST of an expired session").await;

    // A revoked token ends its sessions at once.
    b.sign_in(&token).await;
    c.db.cli_ok(&["token", "revoke", "alice"], &[]);
    b.goto("/ui/review").await;
    assert!(b.path().await.starts_with("/ui/login"));
}

#[tokio::test]
async fn ingest_tokens_cannot_sign_in_and_wrong_tokens_are_rate_limited() {
    let c = console(1, &[("FAULTLINE_AUTH_MAX_FAILURES", "3")]).await;
    let ingest = c.db.token("ingest", "jenkins");
    let b = Browser::start(&c.serve.base).await;
    let attempt = |token: String| {
        let b = &b;
        async move {
            b.goto("/ui/login").await;
            let field = b.find("input[name=token]").await;
            field.send_keys(&token).await.unwrap();
            field
                .send_keys(&String::from(char::from(Key::Enter)))
                .await
                .unwrap();
            b.wait_for_js(
                "the sign-in page's answer",
                "return document.readyState === 'complete' && !!document.querySelector('.notice.error');",
                Duration::from_secs(10),
            )
            .await;
            b.text(".notice.error").await
        }
    };
    let msg = attempt(ingest).await;
    assert!(msg.contains("role ingest"), "{msg}");
    assert!(b.path().await.starts_with("/ui/login"));
    let sessions: i64 = sqlx::query_scalar("SELECT count(*) FROM console_sessions")
        .fetch_one(&c.db.pool)
        .await
        .unwrap();
    assert_eq!(sessions, 0);

    for _ in 0..3 {
        let msg = attempt("flt_wrong".into()).await;
        assert!(msg.contains("Unknown, revoked or expired"), "{msg}");
    }
    let msg = attempt("flt_wrong".into()).await;
    assert!(msg.contains("Too many wrong tokens"), "{msg}");
    // Even the right token waits out the limit from this address.
    let reviewer = c.db.token("reviewer", "alice");
    let msg = attempt(reviewer).await;
    assert!(msg.contains("Too many wrong tokens"), "{msg}");
}

#[tokio::test]
async fn a_second_browser_sees_a_claim_appear_without_reloading() {
    let c = console(1, &[]).await;
    let id = c.items[0];
    let alice = c.db.token("reviewer", "alice");
    let bob = c.db.token("reviewer", "bob");
    let (a, b) = tokio::join!(Browser::start(&c.serve.base), Browser::start(&c.serve.base));
    a.sign_in(&alice).await;
    b.sign_in(&bob).await;
    a.find("#queue tr.group-row").await;
    // Connected to the live stream, and a marker that a reload would lose.
    a.wait_for_js(
        "the live stream is open",
        "return document.body.dataset.live === 'on';",
        Duration::from_secs(10),
    )
    .await;
    a.client
        .execute("window.notReloaded = true; return true;", vec![])
        .await
        .unwrap();

    b.goto(&format!("/ui/review/{id}")).await;
    b.find("#claim-form").await;
    b.press("c").await;
    b.wait_for_path("bob's claim", |p| p.contains("done=claimed"))
        .await;

    a.wait_for_js(
        "bob's claim shows in alice's queue",
        "return !!document.querySelector('#queue tr.group-row .claimed') && \
         document.querySelector('#queue tr.group-row .claimed').textContent === 'bob';",
        Duration::from_secs(5),
    )
    .await;
    let kept = a
        .client
        .execute("return window.notReloaded === true;", vec![])
        .await
        .unwrap();
    assert_eq!(kept, Value::Bool(true), "the page was reloaded");
}

/// One server-sent event: (event, id, data).
type SseEvent = (String, String, String);

/// Reads `GET /api/v1/analyses/{run}/events` until `stop` says so or the
/// stream ends (30 s at most).
async fn read_events(
    base: &str,
    token: &str,
    run: Uuid,
    last_event_id: Option<&str>,
    stop: impl Fn(&[SseEvent]) -> bool,
) -> Vec<SseEvent> {
    use futures::StreamExt;
    let mut req = reqwest::Client::new()
        .get(format!("{base}/api/v1/analyses/{run}/events"))
        .bearer_auth(token);
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()[reqwest::header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let (mut event, mut id, mut data) = (String::new(), String::new(), String::new());
    loop {
        while let Some(end) = buf.find('\n') {
            let line = buf[..end].trim_end_matches('\r').to_string();
            buf.drain(..=end);
            if line.is_empty() {
                if !data.is_empty() || !event.is_empty() {
                    events.push((
                        std::mem::take(&mut event),
                        std::mem::take(&mut id),
                        std::mem::take(&mut data),
                    ));
                    if stop(&events) {
                        return events;
                    }
                }
            } else if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        match tokio::time::timeout_at(deadline, body.next()).await {
            Ok(Some(chunk)) => buf.push_str(&String::from_utf8_lossy(&chunk.unwrap())),
            Ok(None) => return events,
            Err(_) => panic!("no end of the stream within 30s; got {events:?}"),
        }
    }
}

#[tokio::test]
async fn a_run_s_event_stream_sends_each_iteration_once_in_order_live_and_resumes() {
    use faultline_tests::four_step_model::{FourStepModel, worker_env};
    let db = TestDb::new().await;
    let (addr, _model) = FourStepModel::start(Duration::from_millis(700), "sse")
        .await
        .unwrap();
    let env = worker_env(addr);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let token = db.token("reviewer", "watcher");
    let serve = db.serve(&[]).await;
    let _worker = db.worker("w1", &env);
    let path = db.write("oom.log", faultline_tests::oom_log());
    let run = db.enqueue(&path, &[]);

    // Two iterations, received while the run still goes on: they come from
    // the commits, not from the end of the run.
    let first = read_events(&serve.base, &token, run, None, |e| e.len() == 2).await;
    let (status, _) = faultline_tests::run_state(&db.pool, run).await;
    assert!(
        !["completed", "needs_review", "failed"].contains(&status.as_str()),
        "the first events came only after the run ended ({status})"
    );
    let ids: Vec<&str> = first.iter().map(|(_, id, _)| id.as_str()).collect();
    assert_eq!(ids, ["1", "2"]);
    for (event, id, data) in &first {
        assert_eq!(event, "iteration");
        let step: Value = serde_json::from_str(data).unwrap();
        assert_eq!(step["iteration"].to_string(), *id);
    }

    // Reconnect with Last-Event-ID: the rest, once, in order, then the verdict.
    let rest = read_events(&serve.base, &token, run, Some("2"), |e| {
        e.last().is_some_and(|(ev, _, _)| ev == "verdict")
    })
    .await;
    let (status, iterations) = faultline_tests::run_state(&db.pool, run).await;
    assert_eq!(status, "completed");
    let mut expected: Vec<String> = (3..=iterations).map(|i| i.to_string()).collect();
    expected.push("verdict".into());
    let ids: Vec<String> = rest.iter().map(|(_, id, _)| id.clone()).collect();
    assert_eq!(ids, expected);
    let verdict: Value = serde_json::from_str(&rest.last().unwrap().2).unwrap();
    assert_eq!(verdict["status"], "completed");
    assert_eq!(verdict["result"]["category"], "INFRA_ERROR");

    // After the end: the whole journal and the verdict; after the verdict: nothing.
    let all = read_events(&serve.base, &token, run, None, |_| false).await;
    assert_eq!(all.len() as i32, iterations + 1);
    // After `verdict`: 204, which tells an EventSource to stop reconnecting.
    let resp = reqwest::Client::new()
        .get(format!("{}/api/v1/analyses/{run}/events", serve.base))
        .bearer_auth(&token)
        .header("Last-Event-ID", "verdict")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204);

    // Bad input: a malformed Last-Event-ID, an unknown run, no token.
    let http = reqwest::Client::new();
    let url = format!("{}/api/v1/analyses/{run}/events", serve.base);
    let resp = http
        .get(&url)
        .bearer_auth(&token)
        .header("Last-Event-ID", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let resp = http
        .get(format!(
            "{}/api/v1/analyses/{}/events",
            serve.base,
            Uuid::new_v4()
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(http.get(&url).send().await.unwrap().status(), 401);
}

#[tokio::test]
async fn a_run_s_page_grows_its_trace_live_and_groups_show_their_runs() {
    use faultline_tests::four_step_model::{FourStepModel, worker_env};
    let db = TestDb::new().await;
    let (addr, _model) = FourStepModel::start(Duration::from_millis(700), "page")
        .await
        .unwrap();
    let env = worker_env(addr);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let token = db.token("reviewer", "alice");
    let serve = db.serve(&[]).await;
    let b = Browser::start(&serve.base).await;
    b.sign_in(&token).await;
    let _worker = db.worker("w1", &env);
    let path = db.write("oom.log", faultline_tests::oom_log());
    let run = db.enqueue(&path, &[]);

    b.goto(&format!("/ui/analyses/{run}")).await;
    b.client
        .execute("window.notReloaded = true; return true;", vec![])
        .await
        .unwrap();
    b.wait_for_js(
        "the trace grows to the final answer and the status turns completed",
        "return !!document.querySelector('#trace ol.steps > li:last-child strong') && \
         document.querySelector('#trace ol.steps > li:last-child strong').textContent === 'final_answer' && \
         document.querySelector('#run-state').textContent === 'completed';",
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(
        b.client
            .execute("return window.notReloaded === true;", vec![])
            .await
            .unwrap(),
        Value::Bool(true),
        "the page was reloaded"
    );
    let (_, iterations) = faultline_tests::run_state(&db.pool, run).await;
    let shown: Vec<String> = b
        .client
        .execute(
            "return [...document.querySelectorAll('#trace ol.steps > li')].map(li => li.dataset.iteration);",
            vec![],
        )
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let expected: Vec<String> = (1..=iterations).map(|i| i.to_string()).collect();
    assert_eq!(shown, expected, "each iteration once, in order");
    b.screenshot("analysis").await;

    // The analyses list and the failure groups show the run.
    b.goto("/ui/analyses").await;
    let row = b.find("#analyses tr.row").await;
    assert_eq!(
        row.attr("data-id").await.unwrap().as_deref(),
        Some(run.to_string().as_str())
    );
    b.goto("/ui/groups").await;
    let row = b.text("#groups tr.row").await;
    assert!(row.contains("INFRA_ERROR"), "{row}");
    let label = b
        .find("#groups svg.spark")
        .await
        .attr("aria-label")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(label, "1 run in the last 14 days");
    assert_eq!(b.find_all("#groups svg.spark rect.bar").await.len(), 1);
}

/// Signs in over plain HTTP and returns the session cookie's attributes.
async fn session_cookie(base: &str, token: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = http.get(format!("{base}/ui/login")).send().await.unwrap();
    let login_cookie = page.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let html = page.text().await.unwrap();
    let csrf = html
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string();
    let resp = http
        .post(format!("{base}/ui/login"))
        .header(reqwest::header::COOKIE, login_cookie)
        .form(&[
            ("token", token),
            ("csrf", csrf.as_str()),
            ("next", "/ui/review"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    assert_eq!(resp.headers()[reqwest::header::LOCATION], "/ui/review");
    resp.headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .find(|v| v.starts_with("faultline_session="))
        .expect("a session cookie")
}

#[tokio::test]
async fn the_session_cookie_is_http_only_strict_and_secure_behind_https() {
    let db = TestDb::new().await;
    let token = db.token("reviewer", "alice");
    let plain = db.serve(&[]).await;
    let cookie = session_cookie(&plain.base, &token).await;
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=43200"] {
        assert!(cookie.contains(attr), "{attr} missing: {cookie}");
    }
    assert!(!cookie.contains("Secure"), "{cookie}");
    let https = db
        .serve(&[
            ("FAULTLINE_PUBLIC_URL", "https://faultline.example.com"),
            ("FAULTLINE_CONSOLE_SESSION_TTL", "1h"),
        ])
        .await;
    let cookie = session_cookie(&https.base, &token).await;
    assert!(cookie.contains("; Secure"), "{cookie}");
    assert!(cookie.contains("Max-Age=3600"), "{cookie}");
    // Pages are not framed, cached, or given scripts from elsewhere.
    let resp = reqwest::get(format!("{}/ui/login", plain.base))
        .await
        .unwrap();
    let csp = resp.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(resp.headers()["x-frame-options"], "DENY");
    assert_eq!(resp.headers()["cache-control"], "no-store");
}

#[tokio::test]
async fn after_a_decision_the_next_open_item_opens() {
    let c = console(2, &[]).await;
    let (first, second) = (c.items[0], c.items[1]);
    let token = c.db.token("reviewer", "alice");
    let b = Browser::start(&c.serve.base).await;
    b.sign_in(&token).await;
    b.goto(&format!("/ui/review/{first}")).await;
    b.find("#claim-form").await;
    b.press("c").await;
    b.wait_for_path("the claim", |p| p.contains("done=claimed"))
        .await;
    b.find("#accept-form").await;
    b.press("a").await;
    let path = b
        .wait_for_path("the next item", |p| {
            p.starts_with(&format!("/ui/review/{second}"))
        })
        .await;
    assert!(path.contains("done=accepted"), "{path}");
    assert!(b.text(".notice").await.contains("accepted 1 item"));
    let (status, _, _) = item_state(&c.db, first).await;
    assert_eq!(status, "resolved");
}

#[tokio::test]
async fn sigterm_ends_open_event_streams_and_the_server_exits() {
    let db = TestDb::new().await;
    let token = db.token("reviewer", "alice");
    let mut serve = db.serve(&[]).await;
    let cookie = session_cookie(&serve.base, &token).await;
    let cookie = cookie.split(';').next().unwrap().to_string();
    let http = reqwest::Client::new();
    // A console page's live stream and an API client's run stream, open.
    let live = http
        .get(format!("{}/ui/live", serve.base))
        .header(reqwest::header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 200);
    let path = db.write("oom.log", faultline_tests::oom_log());
    let run = db.enqueue(&path, &[]);
    let events = http
        .get(format!("{}/api/v1/analyses/{run}/events", serve.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);

    let pid = nix::unistd::Pid::from_raw(serve.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), serve.child.wait())
        .await
        .expect("the server did not exit within 10 s of SIGTERM with streams open")
        .unwrap();
    assert!(status.success(), "{status}");
    // Both streams ended rather than hanging.
    let body = tokio::time::timeout(Duration::from_secs(5), live.text()).await;
    assert!(body.is_ok(), "the live stream did not end");
    let body = tokio::time::timeout(Duration::from_secs(5), events.text()).await;
    assert!(body.is_ok(), "the run stream did not end");
}

/// The item page links the failure's CI build from the event's payload
/// (here the `log_url` an API submission gave; the worker does not fetch
/// an address that is neither GitHub nor Jenkins, so the run fails into
/// review saying so), and a page of an item without one has no link.
#[tokio::test]
async fn the_item_page_links_the_ci_build_the_event_names() {
    let db = TestDb::new().await;
    let _worker = db.worker("w1", &[]);
    let serve = db.serve(&[]).await;
    let admin = db.token("admin", "ops");
    let build = "https://ci.example.org/job/ledger/7/console";
    let http = reqwest::Client::new();
    let resp = http
        .post(format!("{}/api/v1/analyses", serve.base))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"log_url": build, "job": "ledger"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    let run: Uuid = resp.json::<Value>().await.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // Failed, not analysed: the log was not fetched; a reviewer decides.
    assert_eq!(
        wait_terminal(&db.pool, run, Duration::from_secs(60)).await,
        "failed"
    );
    let plain = db.enqueue(&db.write_sample("ambiguous.log"), &[]);
    assert_eq!(
        wait_terminal(&db.pool, plain, Duration::from_secs(60)).await,
        "needs_review"
    );
    let item_of = |run: Uuid| {
        let pool = db.pool.clone();
        async move {
            sqlx::query_scalar::<_, Uuid>("SELECT id FROM review_items WHERE run_id = $1")
                .bind(run)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let cookie = session_cookie(&serve.base, &admin).await;
    let cookie = cookie.split(';').next().unwrap().to_string();
    let page = |item: Uuid| {
        let (http, cookie) = (http.clone(), cookie.clone());
        let url = format!("{}/ui/review/{item}", serve.base);
        async move {
            let resp = http
                .get(url)
                .header(reqwest::header::COOKIE, cookie)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            resp.text().await.unwrap()
        }
    };
    let html = page(item_of(run).await).await;
    assert!(
        html.contains(&format!("href=\"{build}\"")) && html.contains("CI build"),
        "no link to {build} on the item page"
    );
    let html = page(item_of(plain).await).await;
    assert!(
        !html.contains("CI build"),
        "an item without a build URL has no link"
    );
}

#[tokio::test]
async fn not_helpful_on_an_analysis_is_recorded_once_per_person_and_counted_by_category() {
    let db = TestDb::new().await;
    let token = db.token("reviewer", "alice");
    let serve = db.serve(&[]).await;
    let _worker = db.worker("w1", &[]);
    let path = db.write("oom.log", faultline_tests::oom_log());
    let run = db.enqueue(&path, &[]);
    wait_terminal(&db.pool, run, Duration::from_secs(30)).await;
    let b = Browser::start(&serve.base).await;
    b.sign_in(&token).await;
    b.goto(&format!("/ui/analyses/{run}")).await;
    assert!(
        b.text("#feedback-counts")
            .await
            .contains("0 not-helpful votes")
    );

    b.find("#feedback button[value='no']")
        .await
        .click()
        .await
        .unwrap();
    b.wait_for_js(
        "the page comes back with the vote counted",
        "const c = document.querySelector('#feedback-counts'); \
         return !!c && c.textContent.includes('1 not-helpful vote') && c.textContent.includes('yours: not helpful');",
        Duration::from_secs(10),
    )
    .await;
    b.screenshot("analysis-feedback").await;
    let recorded: Vec<(String, String, bool)> =
        sqlx::query_as("SELECT source, actor, helpful FROM analysis_feedback WHERE run_id = $1")
            .bind(run)
            .fetch_all(&db.pool)
            .await
            .unwrap();
    assert_eq!(recorded, [("console".into(), "alice".into(), false)]);

    // The analyses page counts it by category and origin.
    b.goto("/ui/analyses").await;
    let rates = b.text("#feedback-rates tbody tr").await;
    assert!(rates.contains("INFRA_ERROR"), "{rates}");
    assert!(rates.contains("100 %"), "{rates}");

    // A second click changes the vote; it does not add one.
    b.goto(&format!("/ui/analyses/{run}")).await;
    b.find("#feedback button[value='yes']")
        .await
        .click()
        .await
        .unwrap();
    b.wait_for_js(
        "the vote changed",
        "const c = document.querySelector('#feedback-counts'); \
         return !!c && c.textContent.includes('1 helpful vote') && c.textContent.includes('0 not-helpful votes');",
        Duration::from_secs(10),
    )
    .await;

    // Bad input, from the signed-in page: no CSRF token, neither yes nor
    // no, an unknown analysis.
    let status = |path: String, with_csrf: bool, helpful: &str| {
        let script = format!(
            "const body = new URLSearchParams({{helpful: {helpful:?}}}); \
             if ({with_csrf}) body.set('csrf', document.body.dataset.csrf); \
             return fetch({path:?}, {{method: 'POST', body, redirect: 'manual'}}).then(r => r.status);"
        );
        let client = b.client.clone();
        async move { client.execute(&script, vec![]).await.unwrap() }
    };
    let own = format!("/ui/analyses/{run}/feedback");
    assert_eq!(status(own.clone(), false, "no").await, 403);
    assert_eq!(status(own, true, "maybe").await, 400);
    let unknown = format!("/ui/analyses/{}/feedback", Uuid::new_v4());
    assert_eq!(status(unknown, true, "no").await, 404);
    let kept: Vec<(String, bool)> = sqlx::query_as("SELECT actor, helpful FROM analysis_feedback")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(kept, [("alice".into(), true)]);
}

#[tokio::test]
async fn the_pull_request_comment_of_an_analysis_renders_as_github_shows_it() {
    let db = TestDb::new().await;
    let token = db.token("reviewer", "alice");
    let serve = db.serve(&[]).await;
    let _worker = db.worker("w1", &[]);
    // Three failed jobs of one commit, one of them with a name that tries
    // to open HTML in the page.
    let mut runs = Vec::new();
    for (sample, job) in [
        ("compile-error.log", "build (stable)"),
        ("compile-error.log", "build (beta)"),
        ("oom-killed.log", "test <img src=x onerror=alert(1)>"),
    ] {
        let path = db.write_sample(sample);
        let run: Uuid = db
            .cli_ok(
                &[
                    "enqueue",
                    path.to_str().unwrap(),
                    "--job",
                    job,
                    "--dedup-key",
                    job,
                ],
                &[],
            )
            .parse()
            .unwrap();
        sqlx::query(
            "UPDATE failure_events SET repository = 'acme/ledger', commit_sha = $2
             WHERE id = (SELECT event_id FROM analysis_runs WHERE id = $1)",
        )
        .bind(run)
        .bind("3f2a9c1d5e7b")
        .execute(&db.pool)
        .await
        .unwrap();
        runs.push(run);
    }
    for run in &runs {
        wait_terminal(&db.pool, *run, Duration::from_secs(60)).await;
    }
    let b = Browser::start(&serve.base).await;
    b.sign_in(&token).await;
    b.goto(&format!("/ui/analyses/{}", runs[0])).await;
    b.find("#pr-comment-link").await.click().await.unwrap();
    b.wait_for_js(
        "the comment page opens",
        "return !!document.querySelector('#pr-comment h3');",
        Duration::from_secs(10),
    )
    .await;
    let title = b.text("#pr-comment h3").await;
    assert!(title.contains("3 failed jobs on 3f2a9c1"), "{title}");
    assert!(title.contains("2 distinct failures"), "{title}");
    // One collapsible section per failure, the two builds grouped.
    let sections: Value = b
        .client
        .execute(
            "return [...document.querySelectorAll('#pr-comment details > summary')].map(s => s.textContent);",
            vec![],
        )
        .await
        .unwrap();
    let sections = sections.as_array().unwrap();
    assert_eq!(sections.len(), 2, "{sections:?}");
    assert!(
        sections.iter().any(|s| {
            let s = s.as_str().unwrap();
            s.contains("CODE_ERROR") && s.contains("build (stable)") && s.contains("build (beta)")
        }),
        "{sections:?}"
    );
    // The job's name shows as text; nothing of it became an element.
    let hostile: Value = b
        .client
        .execute(
            "return [document.querySelectorAll('#pr-comment img, #pr-comment script, #pr-comment [onerror]').length, \
             document.querySelector('#pr-comment').textContent.includes('<img src=x onerror=alert(1)>')];",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(hostile, serde_json::json!([0, true]));
    // A section opens on a click, as on GitHub.
    b.find("#pr-comment details > summary")
        .await
        .click()
        .await
        .unwrap();
    b.wait_for_js(
        "the first section opens",
        "return document.querySelector('#pr-comment details').open;",
        Duration::from_secs(5),
    )
    .await;
    b.screenshot("pr-comment").await;
}
