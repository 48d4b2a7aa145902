//! Rolling out a model (issue 18): shadow runs, the A/B ratio and the
//! prompt registry, end to end with real workers against fake model
//! servers in the OpenAI and Anthropic wire formats.

use std::time::Duration;

use faultline_shared::{
    queue::Broker,
    rollout,
    storage::{self, events::NewEvent, runs::RunLimits, shadow, similar},
};
use faultline_tests::{
    TestDb,
    fake_llm::{FakeLlm, Wire, env_refs, tool_call},
    oom_log, run_state, wait_terminal, wait_until,
};
use serde_json::json;
use uuid::Uuid;
use wiremock::{Mock, MockServer, ResponseTemplate, matchers::method};

/// One request the model received, as this file reads it.
#[derive(Clone, Debug)]
struct Seen {
    /// The failure's job (from the first user message).
    job: String,
    iteration: usize,
    system: String,
    /// `log_excerpt`'s description as offered.
    excerpt_description: String,
}

/// A model that reads the excerpt, then answers (grounded, confident),
/// each reply after `delay`.
async fn start_model(wire: Wire, delay: Duration) -> (MockServer, FakeLlm) {
    FakeLlm::start(wire, move |iteration, _| {
        let reply = if iteration == 1 {
            tool_call(wire, "call_1", "log_excerpt", json!({"mode": "failure"}))
        } else {
            tool_call(
                wire,
                &format!("call_{iteration}"),
                "final_answer",
                json!({"category": "INFRA_ERROR", "root_cause": "The test JVM ran out of heap.",
                       "fix": "Raise -Xmx for the test task.",
                       "evidence": [{"iteration": 1, "quote": "java.lang.OutOfMemoryError: Java heap space"}],
                       "confidence": 0.95}),
            )
        };
        reply.set_delay(delay)
    })
    .await
}

/// Every request `model` received, read in its wire format.
fn received(model: &FakeLlm) -> Vec<Seen> {
    model
        .requests()
        .into_iter()
        .map(|(_, iteration, body, _)| {
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let first = messages.iter().find(|m| m["role"] == "user");
            let (first, system, tools) = match model.wire {
                Wire::OpenAi => (
                    first.and_then(|m| m["content"].as_str()).unwrap_or(""),
                    messages[0]["content"].as_str().unwrap_or(""),
                    body["tools"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|t| t["function"].clone())
                        .collect::<Vec<_>>(),
                ),
                Wire::Anthropic => (
                    first
                        .and_then(|m| m["content"][0]["text"].as_str())
                        .unwrap_or(""),
                    body["system"].as_str().unwrap_or(""),
                    body["tools"].as_array().cloned().unwrap_or_default(),
                ),
            };
            Seen {
                job: first
                    .split('"')
                    .find(|s| s.starts_with("rj-"))
                    .unwrap_or_default()
                    .to_string(),
                iteration,
                system: system.to_string(),
                excerpt_description: tools
                    .iter()
                    .find(|t| t["name"] == "log_excerpt")
                    .and_then(|t| t["description"].as_str())
                    .unwrap_or("")
                    .to_string(),
            }
        })
        .collect()
}

/// How many times `model` was asked for `job`'s `iteration`.
fn calls(model: &FakeLlm, job: &str, iteration: usize) -> usize {
    received(model)
        .iter()
        .filter(|s| s.job == job && s.iteration == iteration)
        .count()
}

/// Enqueues the OOM log as job `job` (build 1); returns the live run.
fn enqueue(db: &TestDb, job: &str, env: &[(&str, &str)]) -> Uuid {
    let log = db.write(&format!("{job}.log"), oom_log());
    db.cli_ok(
        &[
            "enqueue",
            log.to_str().unwrap(),
            "--job",
            job,
            "--build",
            "1",
        ],
        env,
    )
    .parse()
    .unwrap()
}

/// Ingests `n` events in-process with dedup keys `{prefix}{i}`; returns
/// (key, live run) pairs.
async fn ingest_many(db: &TestDb, prefix: &str, n: usize) -> Vec<(String, Uuid)> {
    let limits = RunLimits {
        max_iterations: 5,
        max_attempts: 5,
        priority: faultline_shared::queue::PRIORITY_LIVE,
        shadowed: false,
    };
    let mut out = Vec::new();
    for i in 0..n {
        let key = format!("{prefix}{i}");
        let event = NewEvent {
            dedup_key: key.clone(),
            source: "test".into(),
            job_name: Some(format!("rj-{prefix}{i}")),
            ..NewEvent::default()
        };
        let log = oom_log();
        let ingested = storage::ingest(&db.pool, &Broker::Postgres, &event, log.as_bytes(), limits)
            .await
            .unwrap();
        out.push((key, ingested.run_id));
    }
    out
}

async fn shadow_of(db: &TestDb, live: Uuid) -> Uuid {
    sqlx::query_scalar("SELECT id FROM analysis_runs WHERE shadow_of = $1")
        .bind(live)
        .fetch_one(&db.pool)
        .await
        .expect("the live run has a shadow run")
}

async fn comparisons(db: &TestDb, live: Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM shadow_comparisons WHERE live_run_id = $1")
        .bind(live)
        .fetch_one(&db.pool)
        .await
        .unwrap()
}

/// Review items and outbox rows of a run (a shadow run must have neither).
async fn reviewed_and_notified(db: &TestDb, run: Uuid) -> (i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM review_items WHERE run_id = $1),
                (SELECT count(*) FROM notification_outbox WHERE run_id = $1)",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap()
}

async fn wait_compared(db: &TestDb, live: Uuid) {
    wait_until(Duration::from_secs(90), || async {
        (comparisons(db, live).await > 0).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shadow_runs_analyse_with_the_model_beside_live_rule_runs_and_are_compared_once() {
    let db = TestDb::new().await;
    let (server, model) = start_model(Wire::OpenAi, Duration::ZERO).await;
    let hook = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&hook)
        .await;
    let mut env = model.env(&server);
    env.extend([
        ("FAULTLINE_SHADOW_REASONER".into(), "openai".to_string()),
        ("FAULTLINE_LLM_RATIO".into(), "0".to_string()),
        ("NOTIFY_WEBHOOK_URL".into(), format!("{}/hook", hook.uri())),
        ("NOTIFY_ON_REVIEW".into(), "true".to_string()),
        ("NOTIFY_WEBHOOK_SECRET".into(), "whsec-test".to_string()),
    ]);
    let shadow_on = [("FAULTLINE_SHADOW_REASONER", "openai")];
    let live: Vec<Uuid> = (0..3)
        .map(|i| enqueue(&db, &format!("rj-shadow-{i}"), &shadow_on))
        .collect();
    let _worker = db.worker("w1", &env_refs(&env));
    for (i, &run) in live.iter().enumerate() {
        wait_compared(&db, run).await;
        let shadow = shadow_of(&db, run).await;
        let (live_arm, shadow_arm, shadow_priority): (String, String, i32) = sqlx::query_as(
            "SELECT l.reasoner, s.reasoner, s.priority FROM analysis_runs l, analysis_runs s
             WHERE l.id = $1 AND s.id = $2",
        )
        .bind(run)
        .bind(shadow)
        .fetch_one(&db.pool)
        .await
        .unwrap();
        assert_eq!(
            (live_arm.as_str(), shadow_arm.as_str()),
            ("heuristic", "openai")
        );
        assert_eq!(shadow_priority, faultline_shared::queue::PRIORITY_BULK);
        // The model reasoned for the shadow only: two calls, once each.
        let job = format!("rj-shadow-{i}");
        assert_eq!((calls(&model, &job, 1), calls(&model, &job, 2)), (1, 1));
        // Never reviewed, never notified: no review item, no outbox row.
        assert_eq!(
            reviewed_and_notified(&db, shadow).await,
            (0, 0),
            "the shadow run was reviewed or notified"
        );
    }
    let row: (String, String, bool, i64, f64, f64) = sqlx::query_as(
        "SELECT live_category, shadow_category, same_category, shadow_tokens, shadow_cost_usd,
                live_cost_usd
         FROM shadow_comparisons WHERE live_run_id = $1",
    )
    .bind(live[0])
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(row.1, "INFRA_ERROR");
    assert_eq!(row.2, row.0 == row.1);
    assert_eq!(row.3, 240, "two calls of 120 tokens");
    assert!(row.4 > 0.0 && row.5 == 0.0, "{row:?}");
    // Live runs were notified as usual.
    let live_outbox: i64 =
        sqlx::query_scalar("SELECT count(*) FROM notification_outbox WHERE run_id = ANY($1)")
            .bind(&live)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(live_outbox, 3);
    // Written once, even when asked again (as the reconciler's sweep does).
    for &run in &live {
        assert_eq!(shadow::compare(&db.pool, run).await.unwrap(), None);
        assert_eq!(comparisons(&db, run).await, 1);
    }
    assert!(
        shadow::compare_pending(&db.pool, 100)
            .await
            .unwrap()
            .is_empty()
    );
    // A pair whose finishing step wrote nothing (its worker died first) is
    // written by the sweep, once.
    sqlx::query("DELETE FROM shadow_comparisons WHERE live_run_id = $1")
        .bind(live[1])
        .execute(&db.pool)
        .await
        .unwrap();
    let swept = shadow::compare_pending(&db.pool, 100).await.unwrap();
    assert_eq!(
        swept.iter().map(|c| c.live_run_id).collect::<Vec<_>>(),
        vec![live[1]]
    );
    assert_eq!(comparisons(&db, live[1]).await, 1);
    assert!(
        shadow::compare_pending(&db.pool, 100)
            .await
            .unwrap()
            .is_empty()
    );
    // The error library never offers a shadow run (it holds the same
    // failure's fingerprint as its live twin).
    let fingerprint: String =
        sqlx::query_scalar("SELECT fingerprint FROM analysis_runs WHERE shadow_of = $1")
            .bind(live[0])
            .fetch_one(&db.pool)
            .await
            .unwrap();
    let offered = similar::tiered(&db.pool, &[], &fingerprint, None, 20)
        .await
        .unwrap();
    assert!(!offered.is_empty());
    assert!(
        offered.iter().all(|m| live.contains(&m.run_id)),
        "{offered:?}"
    );
    // A redelivery finds the live run, not its shadow, and creates nothing.
    assert_eq!(enqueue(&db, "rj-shadow-0", &shadow_on), live[0]);
    let report = db.cli_ok(&["shadow", "report"], &[]);
    assert!(report.contains("3 pairs compared"), "{report}");
    assert!(report.contains("live heuristic, shadow openai"), "{report}");
    assert!(report.contains("agreement:"), "{report}");
    let metrics = reqwest::get(format!("{}/metrics", _worker.http_base().await))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("faultline_shadow_pairs{")
            && metrics.contains("shadow_category=\"INFRA_ERROR\""),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_run_survives_kill_9_without_repeating_journaled_model_calls() {
    let db = TestDb::new().await;
    let (server, model) = start_model(Wire::OpenAi, Duration::from_millis(300)).await;
    let mut env = model.env(&server);
    env.extend([
        ("FAULTLINE_SHADOW_REASONER".into(), "openai".to_string()),
        ("FAULTLINE_LLM_RATIO".into(), "0".to_string()),
        ("FAULTLINE_CHAOS_STEP_DELAY_MS".into(), "800".to_string()),
    ]);
    let run = enqueue(&db, "rj-kill", &[("FAULTLINE_SHADOW_REASONER", "openai")]);
    let shadow = shadow_of(&db, run).await;
    let mut first = db.worker("first", &env_refs(&env));
    wait_until(Duration::from_secs(60), || async {
        (run_state(&db.pool, shadow).await.1 >= 1).then_some(())
    })
    .await;
    first.kill9();
    let journaled = run_state(&db.pool, shadow).await.1;
    env.pop();
    let _second = db.worker("second", &env_refs(&env));
    wait_compared(&db, run).await;
    let status = wait_terminal(&db.pool, shadow, Duration::from_secs(5)).await;
    assert!(
        ["completed", "needs_review"].contains(&status.as_str()),
        "{status}"
    );
    for iteration in 1..=journaled as usize {
        assert_eq!(
            calls(&model, "rj-kill", iteration),
            1,
            "iteration {iteration} was journaled before the kill, yet the model was asked again"
        );
    }
    assert_eq!(comparisons(&db, run).await, 1);
    assert_eq!(reviewed_and_notified(&db, shadow).await.0, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_anthropic_live_run_is_shadowed_by_the_rules() {
    let db = TestDb::new().await;
    let (server, model) = start_model(Wire::Anthropic, Duration::ZERO).await;
    let mut env = model.env(&server);
    env.push(("FAULTLINE_SHADOW_REASONER".into(), "heuristic".to_string()));
    let run = enqueue(
        &db,
        "rj-anthropic",
        &[("FAULTLINE_SHADOW_REASONER", "heuristic")],
    );
    let _worker = db.worker("w1", &env_refs(&env));
    wait_compared(&db, run).await;
    let (live, shadow): (String, String) = sqlx::query_as(
        "SELECT live_reasoner, shadow_reasoner FROM shadow_comparisons WHERE live_run_id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((live.as_str(), shadow.as_str()), ("anthropic", "heuristic"));
    assert_eq!(
        calls(&model, "rj-anthropic", 1),
        1,
        "only the live run asks the model"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_without_a_model_refuses_to_shadow() {
    let db = TestDb::new().await;
    let mut worker = db.worker("w1", &[("FAULTLINE_SHADOW_REASONER", "openai")]);
    let status = worker
        .wait_exit(Duration::from_secs(20))
        .await
        .expect("the worker exits");
    assert!(!status.success());
    assert!(
        worker.stderr().contains("needs an LLM reasoner"),
        "{}",
        worker.stderr()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ratio_sends_each_event_to_the_arm_its_key_draws_and_records_it() {
    let db = TestDb::new().await;
    let (server, model) = start_model(Wire::OpenAi, Duration::ZERO).await;
    let runs = ingest_many(&db, "ratio-", 40).await;
    let mut env = model.env(&server);
    env.push(("FAULTLINE_LLM_RATIO".into(), "0.5".to_string()));
    env.push(("FAULTLINE_WORKER_CONCURRENCY".into(), "8".to_string()));
    let _worker = db.worker("w1", &env_refs(&env));
    let mut llm = 0;
    for (key, run) in &runs {
        wait_terminal(&db.pool, *run, Duration::from_secs(90)).await;
        let arm: String = sqlx::query_scalar("SELECT reasoner FROM analysis_runs WHERE id = $1")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
        let expected = if rollout::takes_llm(key, 0.5) {
            llm += 1;
            "openai"
        } else {
            "heuristic"
        };
        assert_eq!(arm, expected, "{key}");
        let asked = calls(&model, &format!("rj-{key}"), 1);
        assert_eq!(asked, usize::from(expected == "openai"), "{key}");
    }
    assert!((10..=30).contains(&llm), "{llm} of 40 on the model");
    // A redelivery keeps its run, so its arm.
    let again = ingest_many(&db, "ratio-", 1).await;
    assert_eq!(again[0].1, runs[0].1);
}

const PROMPT: &str = r#"{"system": "You are TRIAGE-V1. Be brief.",
  "tools": {"log_excerpt": "TRIAGE-V1: read the failing lines first."}}"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_version_is_used_journaled_and_kept_across_a_resume() {
    let db = TestDb::new().await;
    let file = db.write("triage.json", PROMPT);
    let version = db.cli_ok(
        &["prompt", "add", file.to_str().unwrap(), "--name", "triage"],
        &[],
    );
    assert_eq!(version, "1");
    db.cli_ok(&["prompt", "activate", "triage"], &[]);
    let (server, model) = start_model(Wire::OpenAi, Duration::ZERO).await;
    let mut env = model.env(&server);
    env.push(("FAULTLINE_CHAOS_STEP_DELAY_MS".into(), "1500".to_string()));
    let run = enqueue(&db, "rj-prompt", &[]);
    let mut first = db.worker("first", &env_refs(&env));
    db.committed_at(run, 1).await;
    // The registry moves on while the run is held; the run keeps its prompt.
    db.cli_ok(&["prompt", "activate", "0"], &[]);
    first.kill9();
    env.pop();
    let _second = db.worker("second", &env_refs(&env));
    wait_terminal(&db.pool, run, Duration::from_secs(60)).await;
    let seen: Vec<Seen> = received(&model)
        .into_iter()
        .filter(|s| s.job == "rj-prompt")
        .collect();
    assert!(seen.iter().any(|s| s.iteration == 2), "{seen:?}");
    for s in &seen {
        assert!(s.system.starts_with("You are TRIAGE-V1."), "{s:?}");
        assert_eq!(
            s.excerpt_description,
            "TRIAGE-V1: read the failing lines first."
        );
    }
    assert_eq!(
        calls(&model, "rj-prompt", 1),
        1,
        "the journaled call was made again"
    );
    let resumed_by: String =
        sqlx::query_scalar("SELECT worker_id FROM run_steps WHERE run_id = $1 AND iteration = 2")
            .bind(run)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(resumed_by, "second", "the run was not resumed");
    let (recorded, journaled): (Option<i32>, Vec<Option<i32>>) = sqlx::query_as(
        "SELECT r.prompt_version,
                array_agg((s.llm ->> 'prompt_version')::int ORDER BY s.iteration)
         FROM analysis_runs r JOIN run_steps s ON s.run_id = r.id
         WHERE r.id = $1 GROUP BY r.prompt_version",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(recorded, Some(1));
    assert!(journaled.iter().all(|v| *v == Some(1)), "{journaled:?}");
    // A new run gets the built-in prompt now.
    let later = enqueue(&db, "rj-prompt-later", &[]);
    wait_terminal(&db.pool, later, Duration::from_secs(60)).await;
    let later_seen = received(&model)
        .into_iter()
        .find(|s| s.job == "rj-prompt-later")
        .unwrap();
    assert!(
        later_seen.system.starts_with("You are Faultline"),
        "{later_seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prompt_on_trial_takes_the_runs_its_ratio_draws() {
    let db = TestDb::new().await;
    let file = db.write("triage.json", PROMPT);
    db.cli_ok(
        &["prompt", "add", file.to_str().unwrap(), "--name", "triage"],
        &[],
    );
    db.cli_ok(&["prompt", "ratio", "triage", "0.5"], &[]);
    // The ratios of all versions add up to at most 1.
    db.cli_ok(
        &["prompt", "add", file.to_str().unwrap(), "--name", "other"],
        &[],
    );
    let refused = db.cli(&["prompt", "ratio", "other", "0.6"], &[]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("would pass 1"));
    let list = db.cli_ok(&["prompt", "list"], &[]);
    assert!(
        list.contains("trial 0.5") && list.contains("(built in)"),
        "{list}"
    );
    let (server, model) = start_model(Wire::OpenAi, Duration::ZERO).await;
    let runs = ingest_many(&db, "trial-", 30).await;
    let mut env = model.env(&server);
    env.push(("FAULTLINE_WORKER_CONCURRENCY".into(), "8".to_string()));
    let _worker = db.worker("w1", &env_refs(&env));
    let mut on_trial = 0;
    for (key, run) in &runs {
        wait_terminal(&db.pool, *run, Duration::from_secs(90)).await;
        let version: Option<i32> =
            sqlx::query_scalar("SELECT prompt_version FROM analysis_runs WHERE id = $1")
                .bind(run)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        let expected = rollout::prompt_for(key, &[(1, 0.5)], 0);
        assert_eq!(version, Some(expected), "{key}");
        on_trial += usize::from(expected == 1);
        let seen = received(&model)
            .into_iter()
            .find(|s| s.job == format!("rj-{key}"))
            .unwrap();
        assert_eq!(
            seen.system.starts_with("You are TRIAGE-V1."),
            expected == 1,
            "{key}"
        );
    }
    assert!((5..=25).contains(&on_trial), "{on_trial} of 30 on trial");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_whose_model_fails_for_good_fails_without_falling_back_or_entering_review() {
    let db = TestDb::new().await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "bad key"}})),
        )
        .mount(&server)
        .await;
    let uri = server.uri();
    let env = [
        ("LLM_PROVIDER", "openai"),
        ("LLM_BASE_URL", uri.as_str()),
        ("LLM_MODEL", "fake-model"),
        ("LLM_API_KEY", "sk-wrong"),
        ("LLM_FALLBACK", "true"),
        ("FAULTLINE_LLM_RATIO", "0"),
        ("FAULTLINE_SHADOW_REASONER", "openai"),
    ];
    let run = enqueue(&db, "rj-401", &[("FAULTLINE_SHADOW_REASONER", "openai")]);
    let shadow = shadow_of(&db, run).await;
    let _worker = db.worker("w1", &env);
    wait_compared(&db, run).await;
    let (status, same): (String, bool) = sqlx::query_as(
        "SELECT shadow_status, same_category FROM shadow_comparisons WHERE live_run_id = $1",
    )
    .bind(run)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    // The rules did not answer in the model's place: the pair shows a failure.
    assert_eq!((status.as_str(), same), ("failed", false));
    let fell_back: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM run_steps WHERE run_id = $1 AND llm ? 'llm_fallback'",
    )
    .bind(shadow)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(fell_back, 0);
    assert_eq!(
        reviewed_and_notified(&db, shadow).await.0,
        0,
        "a dead-lettered shadow entered the review queue"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_setting_that_leaves_nothing_to_shadow_is_refused() {
    let db = TestDb::new().await;
    let mut worker = db.worker(
        "w1",
        &[
            ("LLM_PROVIDER", "openai"),
            ("LLM_MODEL", "m"),
            ("LLM_BASE_URL", "http://127.0.0.1:9/v1"),
            ("FAULTLINE_SHADOW_REASONER", "openai"),
        ],
    );
    let status = worker
        .wait_exit(Duration::from_secs(20))
        .await
        .expect("the worker exits");
    assert!(!status.success());
    assert!(
        worker
            .stderr()
            .contains("every live run is on the model already"),
        "{}",
        worker.stderr()
    );
}
