//! The lease fence at the storage level: every write of a superseded lease
//! holder is refused, and a checkpoint is written once per iteration.

use std::time::Duration;

use faultline_shared::{
    StepRecord, StepTask,
    queue::Broker,
    storage::{
        self,
        events::NewEvent,
        runs::{
            self, Backoff, Checkpoint, CommitOutcome, FailureOutcome, Next, RunLimits, ToolAudit,
        },
        steps,
    },
};
use faultline_tests::TestDb;
use serde_json::json;

fn record(iteration: i32) -> StepRecord {
    StepRecord {
        iteration,
        thought: "read the log".into(),
        action: "log_excerpt".into(),
        action_input: json!({}),
        observation: json!({"lines": []}),
        is_final: false,
        ..Default::default()
    }
}

/// Renews `lease` alone, as a worker's batched renewal does; the runs renewed.
async fn renew(db: &TestDb, lease: &runs::Lease, ttl: Duration) -> Vec<uuid::Uuid> {
    let mut conn = db.pool.acquire().await.unwrap();
    runs::renew_leases(&mut conn, &lease.owner, &[(lease.run_id, lease.epoch)], ttl)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_superseded_lease_can_write_nothing() {
    let db = TestDb::new().await;
    let limits = RunLimits {
        max_iterations: 5,
        max_attempts: 5,
        priority: 10,
        shadowed: false,
    };
    let event = NewEvent {
        dedup_key: "fence".into(),
        source: "test".into(),
        ..NewEvent::default()
    };
    let run = storage::ingest(
        &db.pool,
        &Broker::Postgres,
        &event,
        &b"error: boom\n"[..],
        limits,
    )
    .await
    .unwrap()
    .run_id;
    let ttl = Duration::from_secs(30);
    let backoff = Backoff {
        base: Duration::from_millis(10),
        max: Duration::from_secs(1),
    };

    let first = StepTask {
        run_id: run,
        iteration: 1,
        attempt: 0,
    };
    let claimed = runs::claim(&db.pool, &first, "stale", ttl)
        .await
        .unwrap()
        .expect("claimed");
    // The claim reads what the step rebuilds from: the event and the (empty) journal.
    assert_eq!(
        claimed.event.as_ref().map(|e| e.id),
        Some(claimed.run.event_id)
    );
    assert!(claimed.journal.is_empty());
    let stale = claimed.lease;
    assert!(
        runs::claim(&db.pool, &first, "other", ttl)
            .await
            .unwrap()
            .is_none(),
        "a held run cannot be claimed twice"
    );

    // The stale holder stops renewing; the reconciler takes the run back.
    sqlx::query(
        "UPDATE analysis_runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1",
    )
    .bind(run)
    .execute(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        runs::reconcile_expired(&db.pool, &Broker::Postgres, backoff, 10)
            .await
            .unwrap(),
        1
    );
    let retry = StepTask {
        run_id: run,
        iteration: 1,
        attempt: 1,
    };
    assert!(
        runs::claim(&db.pool, &first, "other", ttl)
            .await
            .unwrap()
            .is_none(),
        "the old attempt's task is stale"
    );
    let fresh = runs::claim(&db.pool, &retry, "fresh", ttl)
        .await
        .unwrap()
        .expect("retry claimed")
        .lease;
    assert!(fresh.epoch > stale.epoch);

    // Every write of the stale holder is fenced.
    let rec = record(1);
    let cp = |worker| Checkpoint {
        record: &rec,
        attempt: 0,
        worker_id: worker,
        tool_ms: 1,
        step_ms: 1,
        fingerprint: None,
        failure_text: None,
        tool_audit: None,
        arm: "heuristic",
        prompt_version: None,
    };
    assert_eq!(
        runs::commit_step(
            &db.pool,
            &Broker::Postgres,
            &stale,
            &cp("stale"),
            &Next::Continue,
            None
        )
        .await
        .unwrap(),
        CommitOutcome::Fenced
    );
    assert_eq!(
        runs::record_failure(
            &db.pool,
            &Broker::Postgres,
            &stale,
            "boom",
            true,
            backoff,
            None
        )
        .await
        .unwrap(),
        FailureOutcome::Fenced
    );
    assert!(
        !runs::release(&db.pool, &Broker::Postgres, &stale)
            .await
            .unwrap()
    );
    assert!(renew(&db, &stale, ttl).await.is_empty());
    assert!(steps::list(&db.pool, run).await.unwrap().is_empty());

    // The current holder commits, once.
    assert_eq!(
        runs::commit_step(
            &db.pool,
            &Broker::Postgres,
            &fresh,
            &cp("fresh"),
            &Next::Continue,
            None
        )
        .await
        .unwrap(),
        CommitOutcome::Committed { kept: None }
    );
    assert_eq!(
        runs::commit_step(
            &db.pool,
            &Broker::Postgres,
            &fresh,
            &cp("fresh"),
            &Next::Continue,
            None
        )
        .await
        .unwrap(),
        CommitOutcome::Fenced
    );
    let journal = steps::list(&db.pool, run).await.unwrap();
    assert_eq!(journal.len(), 1);
    assert_eq!(journal[0].worker_id, "fresh");
    let run_row = runs::get(&db.pool, run).await.unwrap().unwrap();
    assert_eq!(
        (run_row.status.as_str(), run_row.iteration, run_row.attempts),
        ("queued", 1, 0)
    );
    // Exactly one task is queued for iteration 2.
    assert_eq!(queued_tasks(&db, run, 2).await, 1);

    // The next claim carries the journal; its checkpoint closes the tool's
    // audit row, stores the failure text, and keeps the run: the lease of
    // iteration 3 is the worker's at once, and nothing is queued for it.
    let second = StepTask {
        run_id: run,
        iteration: 2,
        attempt: 0,
    };
    let claimed = runs::claim(&db.pool, &second, "fresh", ttl)
        .await
        .unwrap()
        .expect("second iteration claimed");
    assert_eq!(claimed.journal.len(), 1);
    assert_eq!(claimed.journal[0].worker_id, "fresh");
    assert_eq!(claimed.journal[0].observation, rec.observation);
    let audit = steps::tool_started(&db.pool, run, 2, "log_excerpt", "fresh")
        .await
        .unwrap();
    let rec2 = record(2);
    let cp2 = Checkpoint {
        record: &rec2,
        tool_audit: Some(ToolAudit::Opened {
            id: audit,
            ok: true,
        }),
        failure_text: Some("java.lang.outofmemoryerror: java heap space".into()),
        ..cp("fresh")
    };
    let CommitOutcome::Committed { kept: Some(kept) } = runs::commit_step(
        &db.pool,
        &Broker::Postgres,
        &claimed.lease,
        &cp2,
        &Next::Continue,
        Some(ttl),
    )
    .await
    .unwrap() else {
        panic!("committed, keeping the run")
    };
    assert_eq!(
        (kept.owner.as_str(), kept.epoch),
        ("fresh", claimed.lease.epoch + 1)
    );
    let run_row = runs::get(&db.pool, run).await.unwrap().unwrap();
    assert_eq!((run_row.status.as_str(), run_row.iteration), ("running", 2));
    assert!(
        run_row
            .lease_expires_at
            .is_some_and(|t| t > chrono::Utc::now())
    );
    assert_eq!(queued_tasks(&db, run, 3).await, 0);
    // The kept lease is the only one that writes: the step's own is spent,
    // and a task for iteration 3 (a reconciled one, say) cannot be claimed.
    let third = StepTask {
        run_id: run,
        iteration: 3,
        attempt: 0,
    };
    assert!(
        runs::claim(&db.pool, &third, "other", ttl)
            .await
            .unwrap()
            .is_none()
    );
    let rec3 = record(3);
    // A fenced commit writes nothing of the step, but a local tool's call
    // (the journal row's action) is audited all the same: it did run.
    let searched = StepRecord {
        action: "search_knowledge".into(),
        ..record(3)
    };
    let local = Checkpoint {
        record: &searched,
        tool_ms: 40,
        tool_audit: Some(ToolAudit::Local { ok: true }),
        ..cp("fresh")
    };
    assert_eq!(
        runs::commit_step(
            &db.pool,
            &Broker::Postgres,
            &claimed.lease,
            &local,
            &Next::Continue,
            None
        )
        .await
        .unwrap(),
        CommitOutcome::Fenced
    );
    let audited: Vec<(i32, String, bool, Option<bool>)> = sqlx::query_as(
        "SELECT iteration, tool, finished_at - started_at >= interval '40 ms', ok
         FROM tool_invocations WHERE run_id = $1 AND tool = 'search_knowledge'",
    )
    .bind(run)
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        audited,
        vec![(3, "search_knowledge".to_string(), true, Some(true))]
    );
    assert_eq!(renew(&db, &kept, ttl).await, vec![kept.run_id]);
    assert_eq!(
        runs::commit_step(
            &db.pool,
            &Broker::Postgres,
            &kept,
            &Checkpoint {
                record: &rec3,
                ..cp("fresh")
            },
            &Next::Continue,
            None
        )
        .await
        .unwrap(),
        CommitOutcome::Committed { kept: None }
    );
    assert_eq!(queued_tasks(&db, run, 4).await, 1);
    let (finished, ok): (bool, Option<bool>) =
        sqlx::query_as("SELECT finished_at IS NOT NULL, ok FROM tool_invocations WHERE id = $1")
            .bind(audit)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!((finished, ok), (true, Some(true)));
    assert_eq!(
        faultline_shared::storage::similar::failure_text(&db.pool, run)
            .await
            .unwrap()
            .as_deref(),
        Some("java.lang.outofmemoryerror: java heap space")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn finished_step_tasks_are_pruned_but_pending_ones_never() {
    let db = TestDb::new().await;
    let limits = RunLimits {
        max_iterations: 5,
        max_attempts: 5,
        priority: 10,
        shadowed: false,
    };
    for i in 0..3 {
        let event = NewEvent {
            dedup_key: format!("prune:{i}"),
            source: "test".into(),
            ..NewEvent::default()
        };
        storage::ingest(&db.pool, &Broker::Postgres, &event, &b"x\n"[..], limits)
            .await
            .unwrap();
    }
    // Two tasks finished two hours ago, one finished just now; the rest stay pending.
    sqlx::query(
        "UPDATE apalis.jobs SET status = 'Done', done_at = now() - interval '2 hours'
         WHERE id IN (SELECT id FROM apalis.jobs ORDER BY id LIMIT 2)",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    sqlx::query("UPDATE apalis.jobs SET status = 'Done', done_at = now() WHERE status = 'Pending' AND id = (SELECT max(id) FROM apalis.jobs)")
        .execute(&db.pool)
        .await
        .unwrap();
    let pruned =
        faultline_shared::storage::tasks::prune_finished(&db.pool, Duration::from_secs(3600), 100)
            .await
            .unwrap();
    assert_eq!(pruned, 2);
    let left = faultline_shared::storage::tasks::count_by_status(&db.pool)
        .await
        .unwrap();
    assert_eq!(left, vec![("Done".to_string(), 1)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_request_window_admits_only_the_configured_rate() {
    use faultline_shared::storage::ratelimit;
    let db = TestDb::new().await;
    let minute = Duration::from_secs(60);
    for _ in 0..3 {
        assert_eq!(
            ratelimit::take_request(&db.pool, "llm", 3, minute)
                .await
                .unwrap(),
            None
        );
    }
    let wait = ratelimit::take_request(&db.pool, "llm", 3, minute)
        .await
        .unwrap()
        .expect("the fourth request must wait");
    assert!(
        wait > Duration::from_secs(55) && wait <= Duration::from_secs(60),
        "{wait:?}"
    );
    // Keys are separate windows: a tool's limit does not spend the LLM's.
    assert_eq!(
        ratelimit::take_request(&db.pool, "tool:github_search", 1, minute)
            .await
            .unwrap(),
        None
    );
    // Slots: two holders of two slots; a third waits until one is released or expires.
    let a = ratelimit::acquire_slot(&db.pool, 2, "a", Duration::from_secs(30))
        .await
        .unwrap()
        .expect("slot");
    let _b = ratelimit::acquire_slot(&db.pool, 2, "b", Duration::from_secs(30))
        .await
        .unwrap()
        .expect("slot");
    assert_eq!(
        ratelimit::acquire_slot(&db.pool, 2, "c", Duration::from_secs(30))
            .await
            .unwrap(),
        None
    );
    ratelimit::release_slot(&db.pool, a, "a").await.unwrap();
    assert_eq!(
        ratelimit::acquire_slot(&db.pool, 2, "c", Duration::from_secs(30))
            .await
            .unwrap(),
        Some(a)
    );
    sqlx::query("UPDATE llm_slots SET expires_at = now() - interval '1 second' WHERE holder = 'b'")
        .execute(&db.pool)
        .await
        .unwrap();
    assert!(
        ratelimit::acquire_slot(&db.pool, 2, "d", Duration::from_secs(30))
            .await
            .unwrap()
            .is_some(),
        "an expired slot is free"
    );
}

/// Pending queue rows of the run's step task for `iteration`.
async fn queued_tasks(db: &TestDb, run: uuid::Uuid, iteration: i32) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM apalis.jobs WHERE status = 'Pending' AND convert_from(job, 'UTF8')::jsonb @> $1")
        .bind(json!({"run_id": run, "iteration": iteration}))
        .fetch_one(&db.pool)
        .await
        .unwrap()
}
