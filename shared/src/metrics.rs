//! Prometheus metrics of both binaries (`GET /metrics`).
//!
//! Counters and histograms are recorded where things happen through the
//! `metrics` facade (the helpers below keep names and labels in one place);
//! `metrics-exporter-prometheus` renders them in the text format. Gauges that
//! describe shared state — queue depth, review backlog — are read from
//! Postgres at scrape time ([`render`]), so every replica reports the truth
//! rather than what it happened to see.

use std::{
    collections::BTreeSet,
    sync::{Mutex, OnceLock},
    time::Duration,
};

use metrics::{counter, gauge, histogram};
/// Renders what was recorded; cheap to clone.
pub use metrics_exporter_prometheus::PrometheusHandle;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use sqlx::PgPool;

use crate::{
    queue::{Broker, PRIORITY_BULK, PRIORITY_LIVE},
    storage::{feedback, review, shadow, tasks},
};

/// Step latency buckets, seconds: a heuristic step takes milliseconds, an LLM
/// step seconds, a stuck one up to the lease TTL and beyond.
const STEP_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the global recorder once (later calls return the same handle).
/// `service` becomes the `faultline_build_info` label.
pub fn install(service: &'static str) -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), STEP_BUCKETS)
                .expect("bucket list is not empty");
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first (a test
            // harness); the handle still renders what we record.
            let _ = metrics::set_global_recorder(recorder);
            gauge!("faultline_build_info", "service" => service, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
            handle
        })
        .clone()
}

/// Refreshes the scrape-time gauges from Postgres, then renders every metric.
/// A database error is reported as `faultline_scrape_error 1` (the rest still
/// renders) so that a scrape never hides the process' own counters.
pub async fn render(handle: &PrometheusHandle, pool: &PgPool, broker: &Broker) -> String {
    let ok = tokio::time::timeout(Duration::from_secs(2), refresh_gauges(pool, broker))
        .await
        .map_err(|_| "timed out".to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    if let Err(e) = &ok {
        tracing::warn!(error = %e, "metrics: reading queue and review gauges failed");
    }
    gauge!("faultline_scrape_error").set(if ok.is_ok() { 0.0 } else { 1.0 });
    handle.run_upkeep();
    handle.render()
}

/// Priorities ever reported, so that a drained one drops to 0 instead of
/// keeping its last value.
static SEEN_PRIORITIES: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

async fn refresh_gauges(pool: &PgPool, broker: &Broker) -> sqlx::Result<()> {
    // The queue lives where this process's broker keeps it.
    let depths = match broker {
        Broker::Postgres => tasks::queue_depth(pool).await?,
        Broker::Redis(redis) => redis
            .depth()
            .await
            .map_err(|e| sqlx::Error::Protocol(format!("redis queue depth: {e}")))?,
    };
    {
        // A block, not drop(): the guard must not live across the next await.
        let mut seen = SEEN_PRIORITIES.lock().unwrap_or_else(|p| p.into_inner());
        seen.extend([PRIORITY_LIVE, PRIORITY_BULK]);
        seen.extend(depths.iter().map(|d| d.priority));
        for &priority in seen.iter() {
            let depth = depths.iter().find(|d| d.priority == priority);
            let (ready, scheduled) = depth.map_or((0, 0), |d| (d.ready, d.scheduled));
            let priority = priority.to_string();
            gauge!("faultline_queue_depth", "priority" => priority.clone(), "state" => "ready")
                .set(ready as f64);
            gauge!("faultline_queue_depth", "priority" => priority, "state" => "scheduled")
                .set(scheduled as f64);
        }
    }
    let backlog = review::backlog(pool).await?;
    gauge!("faultline_review_open_items").set(backlog.open as f64);
    gauge!("faultline_review_oldest_open_age_seconds").set(backlog.oldest_age_secs);
    shadow_gauges(&shadow::confusion(pool, SHADOW_WINDOW_DAYS).await?);
    feedback_gauges(&feedback::rates(pool, FEEDBACK_WINDOW_DAYS).await?);
    Ok(())
}

/// The window of the feedback gauges.
pub const FEEDBACK_WINDOW_DAYS: i32 = 30;

/// Feedback cells ever reported (category, origin), so that one that left
/// the window drops to 0.
static SEEN_FEEDBACK: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());

/// `faultline_feedback_votes{category, origin, verdict}` (verdict
/// `helpful` | `not_helpful`: 👍 / 👎 on pull-request comments and the
/// console's buttons, last 30 days) and
/// `faultline_feedback_not_helpful_ratio{category, origin}`.
fn feedback_gauges(rates: &[feedback::Rate]) {
    let mut seen = SEEN_FEEDBACK.lock().unwrap_or_else(|p| p.into_inner());
    seen.extend(rates.iter().map(|r| (r.category.clone(), r.origin.clone())));
    for (category, origin) in seen.iter() {
        let rate = rates
            .iter()
            .find(|r| &r.category == category && &r.origin == origin);
        let (helpful, not_helpful, ratio) = rate.map_or((0, 0, 0.0), |r| {
            (r.helpful, r.not_helpful, r.not_helpful_rate())
        });
        for (verdict, n) in [("helpful", helpful), ("not_helpful", not_helpful)] {
            gauge!("faultline_feedback_votes", "category" => category.clone(),
                "origin" => origin.clone(), "verdict" => verdict)
            .set(n as f64);
        }
        gauge!("faultline_feedback_not_helpful_ratio", "category" => category.clone(),
            "origin" => origin.clone())
        .set(ratio);
    }
}

/// The window of the shadow comparison gauges.
const SHADOW_WINDOW_DAYS: i32 = 7;

/// Confusion cells ever reported, so that one that left the window drops
/// to 0 instead of keeping its last value.
static SEEN_CELLS: Mutex<BTreeSet<[String; 4]>> = Mutex::new(BTreeSet::new());

/// `faultline_shadow_pairs{live_reasoner, shadow_reasoner, live_category,
/// shadow_category}`: compared pairs of the last 7 days (agreement is the
/// diagonal), and what each side cost (`faultline_shadow_cost_usd{side}`).
fn shadow_gauges(cells: &[shadow::Cell]) {
    let mut seen = SEEN_CELLS.lock().unwrap_or_else(|p| p.into_inner());
    let key = |c: &shadow::Cell| {
        [
            c.live_reasoner.clone(),
            c.shadow_reasoner.clone(),
            c.live_category.clone(),
            c.shadow_category.clone(),
        ]
    };
    seen.extend(cells.iter().map(key));
    for labels in seen.iter() {
        let pairs = cells
            .iter()
            .find(|c| &key(c) == labels)
            .map_or(0, |c| c.pairs);
        let [live, shadow, live_category, shadow_category] = labels.clone();
        gauge!("faultline_shadow_pairs", "live_reasoner" => live, "shadow_reasoner" => shadow,
            "live_category" => live_category, "shadow_category" => shadow_category)
        .set(pairs as f64);
    }
    let live: f64 = cells.iter().map(|c| c.live_cost_usd).sum();
    let shadow: f64 = cells.iter().map(|c| c.shadow_cost_usd).sum();
    gauge!("faultline_shadow_cost_usd", "side" => "live").set(live);
    gauge!("faultline_shadow_cost_usd", "side" => "shadow").set(shadow);
}

/// An event was ingested (`created` false: a duplicate of a known event).
pub fn ingested(source: &str, created: bool) {
    counter!("faultline_events_ingested_total", "source" => source.to_string(), "created" => created.to_string())
        .increment(1);
}

/// A step task ended with `outcome` after `elapsed`.
pub fn step(outcome: &'static str, elapsed: Duration) {
    counter!("faultline_steps_total", "outcome" => outcome).increment(1);
    histogram!("faultline_step_duration_seconds", "outcome" => outcome)
        .record(elapsed.as_secs_f64());
}

/// A run reached a terminal status (`completed`, `needs_review`, `failed`).
pub fn analysis_finished(status: &str, category: &str) {
    counter!("faultline_analyses_total", "outcome" => status.to_string(), "category" => category.to_string())
        .increment(1);
}

/// A run of `arm` (its assigned reasoner; `shadow`: a shadow run) finished.
pub fn arm_finished(arm: &'static str, shadow: bool, status: &str) {
    counter!("faultline_arm_analyses_total", "arm" => arm, "shadow" => shadow.to_string(), "outcome" => status.to_string())
        .increment(1);
}

/// A live run and its shadow were compared.
pub fn shadow_compared(c: &shadow::Comparison) {
    counter!("faultline_shadow_comparisons_total", "agree" => c.same_category.to_string())
        .increment(1);
}

/// A transient step failure was scheduled for a retry.
pub fn retry_scheduled() {
    counter!("faultline_retries_total").increment(1);
}

/// One batched lease renewal: its statement's latency and how many leases
/// it renewed and lost.
pub fn lease_renewal(elapsed: Duration, renewed: usize, lost: usize) {
    counter!("faultline_lease_renewal_statements_total").increment(1);
    counter!("faultline_lease_renewals_total").increment(renewed as u64);
    counter!("faultline_leases_lost_total").increment(lost as u64);
    histogram!("faultline_lease_renewal_seconds").record(elapsed.as_secs_f64());
}

/// A checkpoint that failed transiently and was retried in place.
pub fn commit_retry() {
    counter!("faultline_commit_retries_total").increment(1);
}

/// The worker's database pool now: connections in use and idle.
pub fn db_pool(in_use: u32, idle: u32) {
    gauge!("faultline_db_pool_connections", "state" => "in_use").set(f64::from(in_use));
    gauge!("faultline_db_pool_connections", "state" => "idle").set(f64::from(idle));
}

/// How long a probe waited for a connection from the worker's pool.
pub fn db_pool_wait(waited: Duration) {
    histogram!("faultline_db_pool_wait_seconds").record(waited.as_secs_f64());
}

/// Runs the reconciler took over, by cause: `session_ended` (the holder's
/// process died) or `lease_expired` (its lease was not renewed in time).
pub fn lease_takeovers(cause: &'static str, n: usize) {
    counter!("faultline_lease_takeovers_total", "cause" => cause).increment(n as u64);
}

/// One model call (`result`: `ok`, `invalid_reply`, `transient_error`,
/// `permanent_error`) and the tokens it used.
pub fn llm_call(provider: &'static str, result: &'static str, tokens_in: u32, tokens_out: u32) {
    counter!("faultline_llm_calls_total", "provider" => provider, "result" => result).increment(1);
    if result.ends_with("_error") {
        counter!("faultline_llm_errors_total", "provider" => provider, "kind" => result)
            .increment(1);
    }
    counter!("faultline_llm_tokens_total", "provider" => provider, "direction" => "input")
        .increment(u64::from(tokens_in));
    counter!("faultline_llm_tokens_total", "provider" => provider, "direction" => "output")
        .increment(u64::from(tokens_out));
}

/// The heuristic reasoner took over a run after a permanent LLM failure.
pub fn llm_fallback(provider: &'static str) {
    counter!("faultline_llm_fallbacks_total", "provider" => provider).increment(1);
}

/// One executed tool call (journal reuse is not a call).
pub fn tool_call(tool: &str, success: bool, elapsed: Duration) {
    counter!("faultline_tool_calls_total", "tool" => tool.to_string(), "success" => success.to_string())
        .increment(1);
    histogram!("faultline_tool_duration_seconds", "tool" => tool.to_string())
        .record(elapsed.as_secs_f64());
}

/// One outbound webhook delivery attempt (`result`: `delivered`, `retrying`,
/// `failed`), for the notification outbox.
pub fn webhook_delivery(result: &'static str) {
    counter!("faultline_webhook_deliveries_total", "result" => result).increment(1);
}

/// Dead letters dropped from the Redis broker's capped dead-letter list.
pub fn redis_dead_letters_dropped(n: u64) {
    counter!("faultline_redis_dead_letters_dropped_total").increment(n);
}
