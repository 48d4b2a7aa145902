//! The review queue: claims under concurrency, claim expiry, the claimant
//! rule, the audit trail, and resolutions feeding the error library.

use std::{collections::HashSet, time::Duration};

use faultline_tests::{TestDb, wait_terminal, wait_until};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

/// Seeds `n` needs_review runs with an open review item each (oldest first).
async fn seed_items(db: &TestDb, n: i32) -> Vec<Uuid> {
    sqlx::query(
        "WITH e AS (
             INSERT INTO failure_events (id, dedup_key, source, log_name, received_at)
             SELECT gen_random_uuid(), 'seed:' || g, 'cli', 'seed-' || g || '.log', now() - make_interval(mins => $1 - g)
             FROM generate_series(1, $1) g RETURNING id, received_at),
         r AS (
             INSERT INTO analysis_runs (id, event_id, status, max_iterations, max_attempts, category,
                                        confidence, result, fingerprint, finished_at)
             SELECT gen_random_uuid(), e.id, 'needs_review', 5, 5, 'INFRA_ERROR', 0.7,
                    '{\"category\": \"INFRA_ERROR\", \"root_cause\": \"runner lost\", \"fix\": \"retry\"}',
                    'seed-fp', e.received_at FROM e RETURNING id, finished_at)
         INSERT INTO review_items (id, run_id, reason, category, confidence, created_at)
         SELECT gen_random_uuid(), r.id, 'low confidence 0.70', 'INFRA_ERROR', 0.7, r.finished_at FROM r",
    )
    .bind(n)
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query_scalar("SELECT id FROM review_items ORDER BY created_at")
        .fetch_all(&db.pool)
        .await
        .unwrap()
}

async fn call(req: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let resp = req.send().await.expect("request sent");
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("non-JSON ({status}): {text}")),
    )
}

struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    fn post(&self, token: &str, path: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(token)
    }
    fn get(&self, token: &str, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
    }
}

#[tokio::test]
async fn parallel_claims_never_hand_out_the_same_item() {
    let db = TestDb::new().await;
    let items = seed_items(&db, 30).await;
    let tokens: Vec<String> = (0..3)
        .map(|i| db.token("reviewer", &format!("reviewer-{i}")))
        .collect();
    // 45 requests at once from one address: above its default in-flight share.
    let serve = db
        .serve(&[
            ("FAULTLINE_HTTP_DB_CONNECTIONS", "24"),
            ("FAULTLINE_MAX_IN_FLIGHT_PER_CLIENT", "64"),
            ("FAULTLINE_MAX_CONNECTIONS_PER_CLIENT", "64"),
        ])
        .await;
    let api = std::sync::Arc::new(Api {
        base: serve.base.clone(),
        http: reqwest::Client::new(),
    });
    // 3 reviewers × 15 concurrent claims = 45 requests for 30 items.
    let mut tasks = Vec::new();
    for i in 0..45 {
        let api = api.clone();
        let token = tokens[i % 3].clone();
        tasks.push(tokio::spawn(async move {
            call(api.post(&token, "/api/v1/review/claim")).await
        }));
    }
    let mut claimed = Vec::new();
    let mut empty = 0;
    for t in tasks {
        match t.await.unwrap() {
            (StatusCode::OK, body) => claimed.push(
                body["item"]["id"]
                    .as_str()
                    .unwrap()
                    .parse::<Uuid>()
                    .unwrap(),
            ),
            (StatusCode::NOT_FOUND, body) => {
                assert_eq!(body["detail"], "no open review item matches");
                empty += 1
            }
            other => panic!("unexpected answer {other:?}"),
        }
    }
    let distinct: HashSet<Uuid> = claimed.iter().copied().collect();
    assert_eq!(claimed.len(), 30, "every item claimed once");
    assert_eq!(distinct.len(), 30, "no item handed out twice");
    assert_eq!(distinct, items.iter().copied().collect());
    assert_eq!(empty, 15);
    let audits: i64 =
        sqlx::query_scalar("SELECT count(*) FROM review_audit WHERE action = 'claim'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(audits, 30);
}

#[tokio::test]
async fn an_expired_claim_returns_to_the_queue() {
    let db = TestDb::new().await;
    let items = seed_items(&db, 1).await;
    let (alice, bob) = (db.token("reviewer", "alice"), db.token("reviewer", "bob"));
    let serve = db.serve(&[("REVIEW_CLAIM_TTL", "1s")]).await;
    let api = Api {
        base: serve.base.clone(),
        http: reqwest::Client::new(),
    };
    let path = format!("/api/v1/review/{}/claim", items[0]);
    let (status, _) = call(api.post(&alice, &path)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = call(api.post(&bob, &path)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("claimed by alice"),
        "{body}"
    );
    // Nobody runs a sweeper: the claim lapses by its expiry time alone.
    wait_until(Duration::from_secs(10), || async {
        let (status, body) = call(api.get(&bob, "/api/v1/review?status=open")).await;
        (status == StatusCode::OK && body["items"].as_array().unwrap().len() == 1).then_some(())
    })
    .await;
    let (status, body) = call(api.post(&bob, "/api/v1/review/claim")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["claimed_by"], "bob");
    // Alice's old claim no longer lets her close the item.
    let (status, body) = call(
        api.post(&alice, &format!("/api/v1/review/{}/resolve", items[0]))
            .json(&json!({"action": "accept"})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("claimed by bob"),
        "{body}"
    );
}

#[tokio::test]
async fn only_the_claimant_resolves_and_every_action_is_audited() {
    let db = TestDb::new().await;
    let items = seed_items(&db, 2).await;
    let (alice, bob, admin) = (
        db.token("reviewer", "alice"),
        db.token("reviewer", "bob"),
        db.token("admin", "root"),
    );
    let ingest = db.token("ingest", "ci");
    let serve = db.serve(&[]).await;
    let api = Api {
        base: serve.base.clone(),
        http: reqwest::Client::new(),
    };
    let item = items[0];
    let resolve = format!("/api/v1/review/{item}/resolve");

    let (status, _) = call(api.post(&ingest, "/api/v1/review/claim")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(api.post(&alice, &resolve).json(&json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        body["detail"].as_str().unwrap().contains("claim it first"),
        "{body}"
    );
    let (status, _) = call(api.post(&alice, &format!("/api/v1/review/{item}/claim"))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(api.post(&bob, &resolve).json(&json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, body) = call(
        api.post(
            &alice,
            &format!("/api/v1/review/{}/resolve", Uuid::now_v7()),
        )
        .json(&json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = call(
        api.post(&alice, &resolve)
            .json(&json!({"action": "correct", "category": "FLAKY"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["detail"].as_str().unwrap().starts_with("category"),
        "{body}"
    );
    let (status, body) = call(
        api.post(&alice, &resolve)
            .json(&json!({"action": "accept", "fix": "x"})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // Nothing above changed the item beyond alice's claim.
    let open: i64 =
        sqlx::query_scalar("SELECT count(*) FROM review_items WHERE status = 'claimed'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(open, 1);

    let (status, body) = call(api.post(&alice, &resolve).json(&json!({
        "category": "CONFIG_ERROR", "root_cause": "the runner image lacks the JDK",
        "comment": "seen before on build-07"})))
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["status"], "resolved");
    assert_eq!(body["item"]["resolution"]["category"], "CONFIG_ERROR");
    assert_eq!(
        body["item"]["resolution"]["fix"], "retry",
        "kept from the agent"
    );
    assert!(body["library_id"].is_string(), "{body}");
    let (status, _) = call(api.post(&alice, &resolve).json(&json!({}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "already resolved");

    let (_, shown) = call(api.get(&bob, &format!("/api/v1/review/{item}"))).await;
    let audit = shown["audit"].as_array().unwrap();
    assert_eq!(audit.len(), 2, "{shown}");
    assert_eq!(audit[0]["action"], "claim");
    assert_eq!(audit[0]["actor"], "alice");
    assert_eq!(audit[0]["before"]["status"], "open");
    assert_eq!(audit[0]["after"]["status"], "claimed");
    assert_eq!(audit[1]["action"], "resolve");
    assert_eq!(audit[1]["before"]["status"], "claimed");
    assert_eq!(
        audit[1]["after"]["resolution"]["root_cause"],
        "the runner image lacks the JDK"
    );
    assert_eq!(
        audit[1]["after"]["resolution"]["agent"]["category"],
        "INFRA_ERROR"
    );
    assert_eq!(audit[1]["comment"], "seen before on build-07");

    // An admin may close an item claimed by someone else.
    let other = items[1];
    let (status, _) = call(api.post(&bob, &format!("/api/v1/review/{other}/claim"))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = call(
        api.post(&admin, &format!("/api/v1/review/{other}/dismiss"))
            .json(&json!({"comment": "duplicate"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, listed) = call(api.get(&admin, "/api/v1/review?status=resolved,dismissed")).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 2);
    let (status, body) = call(api.get(&admin, "/api/v1/review?older_than=soon")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["detail"].as_str().unwrap().starts_with("older_than"),
        "{body}"
    );
}

#[tokio::test]
async fn the_queue_filters_by_job_and_repository_and_claims_only_matching_items() {
    let db = TestDb::new().await;
    let items = seed_items(&db, 6).await;
    // Items 0-2 are job `api` of acme/shop; 3-5 job `web` of acme/site.
    sqlx::query(
        "UPDATE failure_events e SET job_name = CASE WHEN i.n < 3 THEN 'api' ELSE 'web' END,
                repository = CASE WHEN i.n < 3 THEN 'acme/shop' ELSE 'acme/site' END
         FROM (SELECT r.event_id, row_number() OVER (ORDER BY it.created_at) - 1 AS n
               FROM review_items it JOIN analysis_runs r ON r.id = it.run_id) i
         WHERE e.id = i.event_id",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let token = db.token("reviewer", "alice");
    let serve = db.serve(&[]).await;
    let api = Api {
        base: serve.base.clone(),
        http: reqwest::Client::new(),
    };
    let ids = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].as_str().unwrap().to_string())
            .collect()
    };
    let (status, body) = call(api.get(&token, "/api/v1/review?job=web")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let web: Vec<String> = items[3..].iter().map(Uuid::to_string).collect();
    assert_eq!(ids(&body), web);
    let (_, body) = call(api.get(&token, "/api/v1/review?repository=acme/shop&job=api")).await;
    let shop: Vec<String> = items[..3].iter().map(Uuid::to_string).collect();
    assert_eq!(ids(&body), shop);
    let (_, body) = call(api.get(&token, "/api/v1/review?repository=acme/shop&job=web")).await;
    assert!(ids(&body).is_empty());
    // Claim-next honours the same filters: the oldest `web` item.
    let (status, body) = call(
        api.post(&token, "/api/v1/review/claim")
            .json(&json!({"job": "web"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["item"]["id"], items[3].to_string());
    assert_eq!(body["item"]["repository"], "acme/site");
}

#[tokio::test]
async fn a_resolution_makes_the_next_same_fingerprint_failure_confident_and_cites_it() {
    let db = TestDb::new().await;
    let path = db.write_sample("ambiguous.log");
    let path = path.to_str().unwrap();
    let _worker = db.worker("w1", &[]);
    let first: Uuid = db
        .cli_ok(&["enqueue", path, "--dedup-key", "nightly#1"], &[])
        .parse()
        .unwrap();
    assert_eq!(
        wait_terminal(&db.pool, first, Duration::from_secs(60)).await,
        "needs_review"
    );

    let item = db.cli_ok(&["review", "claim", "--as", "carol", "--json"], &[]);
    let item: Value = serde_json::from_str(&item).unwrap();
    assert_eq!(item["run_id"], first.to_string());
    let id = item["id"].as_str().unwrap();
    let out = db.cli(&["review", "resolve", id, "--as", "dave", "--accept"], &[]);
    assert!(!out.status.success(), "dave has no claim");
    assert!(String::from_utf8_lossy(&out.stderr).contains("claimed by carol"));
    db.cli_ok(
        &[
            "review",
            "resolve",
            id,
            "--as",
            "carol",
            "--category",
            "INFRA_ERROR",
            "--root-cause",
            "build-07 lost its Go module cache mount during make check",
            "--fix",
            "Re-provision build-07's cache volume; pin the job to healthy agents.",
        ],
        &[],
    );

    // The same failure again, from another build.
    let second: Uuid = db
        .cli_ok(&["enqueue", path, "--dedup-key", "nightly#2"], &[])
        .parse()
        .unwrap();
    assert_eq!(
        wait_terminal(&db.pool, second, Duration::from_secs(60)).await,
        "completed"
    );
    let (result,): (Value,) = sqlx::query_as("SELECT result FROM analysis_runs WHERE id = $1")
        .bind(second)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(result["category"], "INFRA_ERROR", "{result}");
    assert!(result["confidence"].as_f64().unwrap() >= 0.85, "{result}");
    assert!(
        result["root_cause"]
            .as_str()
            .unwrap()
            .contains("Go module cache"),
        "{result}"
    );
    // One citation points at the similar_failures observation of the resolution.
    let (iteration, observation): (i32, Value) = sqlx::query_as(
        "SELECT iteration, observation FROM run_steps WHERE run_id = $1 AND action = 'similar_failures'",
    )
    .bind(second)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let top = &observation["matches"][0];
    assert_eq!(top["source"], "review_resolution", "{observation}");
    let cited = result["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["iteration"] == iteration && e["quote"] == top["resolution_id"]);
    assert!(cited, "the answer cites the resolution: {result}");
}
