//! `review_items`: results the agent is not sure of, and dead-lettered runs,
//! waiting for the ops team: listing and claiming. Closing an item (resolve,
//! dismiss) is in [`resolution`](super::resolution).
//!
//! ```text
//! open ──claim──> claimed ──resolve──> resolved
//!   ^               │   └────dismiss──> dismissed
//!   └─claim expired─┘   (checked in each query: no background job)
//! ```
//! Every action writes a `review_audit` row in the same transaction.

use std::{sync::LazyLock, time::Duration};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::{FromRow, PgConnection, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::columns::CategoryColumn;
use crate::types::{Category, RunStatus};

/// Where a review item is (the `review_items.status` column).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ReviewStatus {
    Open,
    Claimed,
    Resolved,
    Dismissed,
}

impl ReviewStatus {
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Resolved or dismissed: nothing more happens to the item.
    pub fn is_closed(self) -> bool {
        matches!(self, ReviewStatus::Resolved | ReviewStatus::Dismissed)
    }
}

/// The review-item insert, the one place its columns and its rule (at most
/// one item per run: a second insert does nothing) are written. `rows`
/// gives `(id, run_id, reason, category, confidence)`, as a `VALUES` list or
/// a `SELECT`. Used by [`insert_in_tx`] and by the checkpoint statement
/// ([`super::runs::commit_step`]), which opens a finished run's item itself.
pub(crate) fn insert_sql(rows: &str) -> String {
    format!(
        "INSERT INTO review_items (id, run_id, reason, category, confidence)
    {rows}
    ON CONFLICT (run_id) DO NOTHING"
    )
}

/// [`insert_in_tx`]'s statement.
pub(crate) static INSERT: LazyLock<String> =
    LazyLock::new(|| insert_sql("VALUES ($1, $2, $3, $4, $5)"));

/// Opens a review item for a run (at most one per run), in the caller's transaction.
pub(crate) async fn insert_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    run_id: Uuid,
    reason: &str,
    category: Option<Category>,
    confidence: Option<f32>,
) -> sqlx::Result<()> {
    sqlx::query(INSERT.as_str())
        .bind(Uuid::now_v7())
        .bind(run_id)
        .bind(reason)
        .bind(category.map(CategoryColumn))
        .bind(confidence)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// A review item with what a reviewer needs to triage it. `status` is the
/// effective one: a claim past its expiry reads as `open`.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct ReviewRow {
    pub id: Uuid,
    pub run_id: Uuid,
    pub reason: String,
    pub category: Option<CategoryColumn>,
    pub confidence: Option<f32>,
    pub status: ReviewStatus,
    pub claimed_by: Option<String>,
    pub claim_expires_at: Option<DateTime<Utc>>,
    pub resolution: Option<Value>,
    pub closed_by: Option<String>,
    pub run_status: RunStatus,
    pub job_name: Option<String>,
    pub build_number: Option<String>,
    pub log_name: Option<String>,
    pub repository: Option<String>,
    /// The run's failure fingerprint: items sharing one are one group.
    pub fingerprint: Option<String>,
    pub root_cause: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// The status an item really has: an expired claim counts as open.
const EFFECTIVE_STATUS: &str = "CASE WHEN i.status = 'claimed' AND i.claim_expires_at < now()
    THEN 'open' ELSE i.status END";

/// `{EFFECTIVE_STATUS} = ANY($8)`, written so the planner can estimate it
/// (a bare CASE is guessed at 1 %, which turned the queue's joins into
/// 10,000 nested index look-ups): the stored status is one of `$8` (or
/// `claimed` when `$8` has `open`), and a claim's effective status is.
const STATUS_MATCH: &str = "i.status = ANY($8::text[]
        || CASE WHEN 'open' = ANY($8) THEN '{claimed}'::text[] ELSE '{}'::text[] END)
    AND (i.status <> 'claimed'
        OR (CASE WHEN i.claim_expires_at < now() THEN 'open' ELSE 'claimed' END) = ANY($8))";

/// A review item joined with its run and event (what [`ReviewRow`] reads).
fn review_select() -> String {
    format!("SELECT {} {REVIEW_FROM}", review_columns())
}

/// [`ReviewRow`]'s columns.
fn review_columns() -> String {
    format!(
        "i.id, i.run_id, i.reason, i.category, i.confidence, {EFFECTIVE_STATUS} AS status,
            i.claimed_by, i.claim_expires_at, i.resolution, i.closed_by,
            r.status AS run_status, e.job_name, e.build_number, e.log_name, e.repository,
            r.fingerprint, r.result ->> 'root_cause' AS root_cause, i.created_at"
    )
}

/// The tables [`ReviewRow`] reads.
const REVIEW_FROM: &str = "FROM review_items i
        JOIN analysis_runs r ON r.id = i.run_id
        JOIN failure_events e ON e.id = r.event_id";

/// Statuses a reviewer can filter on.
pub const STATUSES: [&str; 4] = ["open", "claimed", "resolved", "dismissed"];

/// Which items to list or claim. Empty `statuses` means open and claimed.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub statuses: Vec<String>,
    pub category: Option<String>,
    pub min_confidence: Option<f32>,
    pub max_confidence: Option<f32>,
    /// Only items created at least this long ago.
    pub older_than: Option<Duration>,
    /// Only items created at most this long ago.
    pub newer_than: Option<Duration>,
    /// Only items of this CI job.
    pub job: Option<String>,
    /// Only items of this repository.
    pub repository: Option<String>,
}

/// The filter predicates on `review_items i`, parameters `$1..=$7`
/// ([`bind_filter!`] binds them); a statement's own parameters follow
/// from `$8` (the statuses of [`STATUS_MATCH`] where it has them).
const FILTER_WHERE: &str = "($1::text IS NULL OR i.category = $1)
    AND ($2::real IS NULL OR i.confidence >= $2)
    AND ($3::real IS NULL OR i.confidence <= $3)
    AND ($4::float8 IS NULL OR i.created_at <= now() - make_interval(secs => $4))
    AND ($5::float8 IS NULL OR i.created_at >= now() - make_interval(secs => $5))
    AND (($6::text IS NULL AND $7::text IS NULL) OR EXISTS (
        SELECT 1 FROM analysis_runs fr JOIN failure_events fe ON fe.id = fr.event_id
        WHERE fr.id = i.run_id AND ($6::text IS NULL OR fe.job_name = $6)
          AND ($7::text IS NULL OR fe.repository = $7)))";

/// Binds a [`Filter`] to `$1..=$7` of [`FILTER_WHERE`].
macro_rules! bind_filter {
    ($query:expr, $filter:expr) => {
        $query
            .bind(&$filter.category)
            .bind($filter.min_confidence)
            .bind($filter.max_confidence)
            .bind($filter.older_than.map(|d| d.as_secs_f64()))
            .bind($filter.newer_than.map(|d| d.as_secs_f64()))
            .bind(&$filter.job)
            .bind(&$filter.repository)
    };
}

/// [`list`]'s statement.
pub(crate) static LIST: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} WHERE {FILTER_WHERE} AND {STATUS_MATCH}
         ORDER BY i.created_at, i.id LIMIT $9",
        review_select()
    )
});

/// Lists items matching `filter`, oldest first.
pub async fn list(pool: &PgPool, filter: &Filter, limit: i64) -> sqlx::Result<Vec<ReviewRow>> {
    let statuses = filter.statuses_or_pending();
    bind_filter!(sqlx::query_as(LIST.as_str()), filter)
        .bind(statuses)
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// A failure group of the queue: the items (matching a filter) whose runs
/// share a fingerprint; an item without one is a group of its own.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct QueueGroup {
    /// The fingerprint, or `item:<id>` for an item without one.
    pub key: String,
    pub count: i64,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// Distinct jobs of the members.
    #[sqlx(skip)]
    pub jobs: Vec<String>,
    /// The oldest member: the one a reviewer decides on for the group.
    #[sqlx(skip)]
    pub lead: Uuid,
}

impl QueueGroup {
    /// The group's fingerprint (none for a lone item without one).
    pub fn fingerprint(&self) -> Option<&str> {
        (!self.key.starts_with("item:")).then_some(self.key.as_str())
    }
}

/// A page of [`QueueGroup`]s and the members shown with them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct QueuePage {
    pub groups: Vec<QueueGroup>,
    /// Groups matching the filter, on every page.
    pub total_groups: i64,
    /// Items matching the filter.
    pub total_items: i64,
    /// The first [`MEMBERS_SHOWN`] members of each group of the page, oldest first.
    pub members: Vec<ReviewRow>,
}

/// Members listed under a group (the count says how many there are).
pub const MEMBERS_SHOWN: i64 = 20;

/// An item's group key in Rust, as [`GROUP_KEY`] computes it.
pub fn group_key(row: &ReviewRow) -> String {
    match row.fingerprint.as_deref().filter(|f| !f.is_empty()) {
        Some(fp) => fp.to_string(),
        None => format!("item:{}", row.id),
    }
}

/// The group key of an item: its run's fingerprint, or its own id.
const GROUP_KEY: &str = "coalesce(nullif(r.fingerprint, ''), 'item:' || i.id::text)";

/// [`queue_groups`]'s statement: one row per group, oldest group first.
pub(crate) static QUEUE_GROUPS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH m AS (
             SELECT i.created_at, {GROUP_KEY} AS key
             FROM review_items i JOIN analysis_runs r ON r.id = i.run_id
             WHERE {FILTER_WHERE} AND {STATUS_MATCH})
         SELECT key, count(*) AS count, min(created_at) AS first_seen, max(created_at) AS last_seen,
                count(*) OVER () AS total_groups, sum(count(*)) OVER ()::int8 AS total_items
         FROM m GROUP BY key
         ORDER BY min(created_at), key LIMIT $9 OFFSET $10"
    )
});

/// [`queue_groups`]' members statement: the first `$11` members of the
/// groups of the page (fingerprints `$9`, lone items `$10`).
pub(crate) static QUEUE_MEMBERS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT * FROM (
             SELECT {}, row_number() OVER (PARTITION BY {GROUP_KEY} ORDER BY i.created_at, i.id) AS n
             {REVIEW_FROM}
             WHERE {FILTER_WHERE} AND {STATUS_MATCH}
               AND (r.fingerprint = ANY($9) OR i.id = ANY($10))) q
         WHERE n <= $11
         ORDER BY created_at, id",
        review_columns()
    )
});

/// [`queue_groups`]' jobs statement: the distinct jobs of each group of
/// the page (fingerprints `$9`, lone items `$10`).
pub(crate) static QUEUE_JOBS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT {GROUP_KEY} AS key, array_remove(array_agg(DISTINCT e.job_name), NULL) AS jobs
         {REVIEW_FROM}
         WHERE {FILTER_WHERE} AND {STATUS_MATCH}
           AND (r.fingerprint = ANY($9) OR i.id = ANY($10))
         GROUP BY 1"
    )
});

/// A page of the queue grouped by failure fingerprint: `limit` groups
/// from `offset`, oldest first, with the first members of each.
pub async fn queue_groups(
    pool: &PgPool,
    filter: &Filter,
    limit: i64,
    offset: i64,
) -> sqlx::Result<QueuePage> {
    let statuses = filter.statuses_or_pending();
    #[derive(sqlx::FromRow)]
    struct Row {
        #[sqlx(flatten)]
        group: QueueGroup,
        total_groups: i64,
        total_items: i64,
    }
    let rows: Vec<Row> = bind_filter!(sqlx::query_as(QUEUE_GROUPS.as_str()), filter)
        .bind(&statuses)
        .bind(limit)
        .bind(offset)
        .fetch_all(pool)
        .await?;
    let (total_groups, total_items) = rows
        .first()
        .map_or((0, 0), |r| (r.total_groups, r.total_items));
    let mut groups: Vec<QueueGroup> = rows.into_iter().map(|r| r.group).collect();
    let fingerprints: Vec<&str> = groups.iter().filter_map(QueueGroup::fingerprint).collect();
    let lone: Vec<Uuid> = groups
        .iter()
        .filter_map(|g| g.key.strip_prefix("item:")?.parse().ok())
        .collect();
    // The members' and jobs' statements take the same parameters.
    macro_rules! page_binds {
        ($query:expr) => {
            bind_filter!($query, filter)
                .bind(&statuses)
                .bind(&fingerprints)
                .bind(&lone)
        };
    }
    let (members, jobs) = if groups.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        let members: Vec<ReviewRow> = page_binds!(sqlx::query(QUEUE_MEMBERS.as_str()))
            .bind(MEMBERS_SHOWN)
            .try_map(|row| ReviewRow::from_row(&row))
            .fetch_all(pool)
            .await?;
        let jobs: Vec<(String, Vec<String>)> = page_binds!(sqlx::query(QUEUE_JOBS.as_str()))
            .try_map(|row| <(String, Vec<String>)>::from_row(&row))
            .fetch_all(pool)
            .await?;
        (members, jobs)
    };
    for g in &mut groups {
        g.jobs = jobs
            .iter()
            .find(|(k, _)| *k == g.key)
            .map(|(_, j)| j.clone())
            .unwrap_or_default();
        if let Some(lead) = members.iter().find(|m| group_key(m) == g.key) {
            g.lead = lead.id;
        }
    }
    Ok(QueuePage {
        groups,
        total_groups,
        total_items,
        members,
    })
}

/// [`group_members`]' statement: the pending items of a fingerprint.
pub(crate) static GROUP_PENDING: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} WHERE r.fingerprint = $1 AND {EFFECTIVE_STATUS} IN ('open', 'claimed')
         ORDER BY i.created_at, i.id",
        review_select()
    )
});

/// The open and claimed items whose runs have `fingerprint`, oldest first.
pub async fn group_members(pool: &PgPool, fingerprint: &str) -> sqlx::Result<Vec<ReviewRow>> {
    sqlx::query_as(GROUP_PENDING.as_str())
        .bind(fingerprint)
        .fetch_all(pool)
        .await
}

/// The pending items just before and after `item` in queue order (oldest
/// first): where a reviewer's previous / next keys go.
pub async fn neighbours(
    pool: &PgPool,
    item: &ReviewRow,
) -> sqlx::Result<(Option<Uuid>, Option<Uuid>)> {
    sqlx::query_as(
        "SELECT
            (SELECT id FROM review_items WHERE status IN ('open', 'claimed')
               AND (created_at, id) < ($1, $2) ORDER BY created_at DESC, id DESC LIMIT 1),
            (SELECT id FROM review_items WHERE status IN ('open', 'claimed')
               AND (created_at, id) > ($1, $2) ORDER BY created_at, id LIMIT 1)",
    )
    .bind(item.created_at)
    .bind(item.id)
    .fetch_one(pool)
    .await
}

/// The oldest pending item `reviewer` may take: open, theirs, or a claim
/// that expired (what opens after a decision).
pub async fn next_for(pool: &PgPool, reviewer: &str) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar(
        "SELECT id FROM review_items
         WHERE status = 'open'
            OR (status = 'claimed' AND (claimed_by = $1 OR claim_expires_at < now()))
         ORDER BY created_at, id LIMIT 1",
    )
    .bind(reviewer)
    .fetch_optional(pool)
    .await
}

/// Lists open and claimed items, oldest first.
pub async fn list_open(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<ReviewRow>> {
    list(pool, &Filter::default(), limit).await
}

/// [`for_run`]'s statement.
pub(crate) static FOR_RUN: LazyLock<String> =
    LazyLock::new(|| format!("{} WHERE i.run_id = $1", review_select()));

/// The review item of one run, if any.
pub async fn for_run(pool: &PgPool, run_id: Uuid) -> sqlx::Result<Option<ReviewRow>> {
    sqlx::query_as(FOR_RUN.as_str())
        .bind(run_id)
        .fetch_optional(pool)
        .await
}

/// [`get`]'s statement.
pub(crate) static GET: LazyLock<String> =
    LazyLock::new(|| format!("{} WHERE i.id = $1", review_select()));

/// One review item.
pub async fn get(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<Option<ReviewRow>> {
    sqlx::query_as(GET.as_str())
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Who acts on the queue: a token name (API) or a CLI user.
#[derive(Debug, Clone)]
pub struct Actor {
    pub name: String,
    pub via: Via,
    /// Admins may close items claimed by others, or not claimed at all.
    pub admin: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Api,
    Cli,
    /// The review console in a browser.
    Console,
}

impl Via {
    fn as_str(self) -> &'static str {
        match self {
            Via::Api => "api",
            Via::Cli => "cli",
            Via::Console => "console",
        }
    }
}

/// Why a review action was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    #[error("review item {0} not found")]
    NotFound(Uuid),
    #[error("review item {id} is claimed by {by} until {until}")]
    ClaimedByOther {
        id: Uuid,
        by: String,
        until: DateTime<Utc>,
    },
    #[error("your claim on review item {id} expired at {at}; claim it again")]
    ClaimExpired { id: Uuid, at: DateTime<Utc> },
    #[error("review item {0} is not claimed by you; claim it first")]
    NotClaimed(Uuid),
    #[error("review item {id} is already {status}")]
    Closed { id: Uuid, status: ReviewStatus },
    /// The request itself is wrong (names the field).
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// An item's state as the audit trail records it (locked for update).
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct ItemState {
    pub status: ReviewStatus,
    pub claimed_by: Option<String>,
    pub claim_expires_at: Option<DateTime<Utc>>,
    pub expired: bool,
    pub resolution: Option<Value>,
}

impl ItemState {
    pub fn audit_json(&self) -> Value {
        json!({
            "status": if self.expired && self.status == ReviewStatus::Claimed { ReviewStatus::Open } else { self.status },
            "claimed_by": self.claimed_by,
            "claim_expires_at": self.claim_expires_at,
            "resolution": self.resolution,
        })
    }
}

/// Reads and locks an item's state.
pub(crate) async fn lock_state(
    conn: &mut PgConnection,
    id: Uuid,
) -> sqlx::Result<Option<ItemState>> {
    sqlx::query_as(
        "SELECT status, claimed_by, claim_expires_at,
                coalesce(claim_expires_at < now(), false) AS expired, resolution
         FROM review_items WHERE id = $1 FOR UPDATE",
    )
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Records one action in `review_audit`.
pub(crate) async fn audit_in_tx(
    conn: &mut PgConnection,
    id: Uuid,
    actor: &Actor,
    action: &str,
    before: &Value,
    after: &Value,
    comment: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO review_audit (item_id, actor, via, action, before, after, comment)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(id)
    .bind(&actor.name)
    .bind(actor.via.as_str())
    .bind(action)
    .bind(before)
    .bind(after)
    .bind(comment)
    .execute(conn)
    .await?;
    Ok(())
}

/// The state after a claim by `actor` until `until`.
fn claimed_json(actor: &Actor, until: DateTime<Utc>) -> Value {
    json!({"status": ReviewStatus::Claimed, "claimed_by": actor.name, "claim_expires_at": until, "resolution": null})
}

/// An item just claimed by [`claim_next`]: its id, its state before the
/// claim (status, claimant, expiry) and the new claim's expiry.
type ClaimedNext = (
    Uuid,
    ReviewStatus,
    Option<String>,
    Option<DateTime<Utc>>,
    DateTime<Utc>,
);

/// [`claim_next`]'s statement.
pub(crate) static CLAIM_NEXT: LazyLock<String> = LazyLock::new(|| {
    format!("WITH next AS (
                 SELECT i.id, i.status, i.claimed_by, i.claim_expires_at FROM review_items i
                 WHERE (i.status = 'open' OR (i.status = 'claimed' AND i.claim_expires_at < now()))
                   AND {FILTER_WHERE}
                 ORDER BY i.created_at, i.id LIMIT 1
                 FOR UPDATE SKIP LOCKED)
             UPDATE review_items i
             SET status = 'claimed', claimed_by = $8, claimed_at = now(),
                 claim_expires_at = now() + make_interval(secs => $9), updated_at = now()
             FROM next WHERE i.id = next.id
             RETURNING i.id, next.status, next.claimed_by, next.claim_expires_at, i.claim_expires_at")
});

/// open (or expired claim) -> claimed: takes the oldest claimable item
/// matching `filter`, skipping rows another reviewer is claiming right now
/// (`FOR UPDATE SKIP LOCKED`), so concurrent reviewers never get the same item.
pub async fn claim_next(
    pool: &PgPool,
    actor: &Actor,
    ttl: Duration,
    filter: &Filter,
) -> sqlx::Result<Option<ReviewRow>> {
    let mut tx = pool.begin().await?;
    let claimed: Option<ClaimedNext> = bind_filter!(sqlx::query_as(CLAIM_NEXT.as_str()), filter)
        .bind(&actor.name)
        .bind(ttl.as_secs_f64())
        .fetch_optional(&mut *tx)
        .await?;
    let Some((id, before_status, before_by, before_until, until)) = claimed else {
        tx.rollback().await?;
        return Ok(None);
    };
    let before = json!({
        "status": if before_status == ReviewStatus::Claimed { ReviewStatus::Open } else { before_status },
        "claimed_by": before_by, "claim_expires_at": before_until,
        "expired_claim": before_status == ReviewStatus::Claimed,
    });
    audit_in_tx(
        &mut tx,
        id,
        actor,
        "claim",
        &before,
        &claimed_json(actor, until),
        None,
    )
    .await?;
    let row = get(&mut tx, id).await?;
    tx.commit().await?;
    Ok(row)
}

/// open (or expired claim, or our own claim) -> claimed for one item.
/// Refuses an item someone else holds, or one already closed.
pub async fn claim(
    pool: &PgPool,
    id: Uuid,
    actor: &Actor,
    ttl: Duration,
) -> Result<ReviewRow, ReviewError> {
    let mut tx = pool.begin().await?;
    let row = claim_in_tx(&mut tx, id, actor, ttl).await?;
    tx.commit().await?;
    Ok(row)
}

/// [`claim`] in the caller's transaction.
pub(crate) async fn claim_in_tx(
    tx: &mut PgConnection,
    id: Uuid,
    actor: &Actor,
    ttl: Duration,
) -> Result<ReviewRow, ReviewError> {
    let state = lock_state(&mut *tx, id)
        .await?
        .ok_or(ReviewError::NotFound(id))?;
    match state.status {
        status if status.is_closed() => {
            return Err(ReviewError::Closed { id, status });
        }
        ReviewStatus::Claimed
            if !state.expired && state.claimed_by.as_deref() != Some(&actor.name) =>
        {
            return Err(ReviewError::ClaimedByOther {
                id,
                by: state.claimed_by.unwrap_or_default(),
                until: state.claim_expires_at.unwrap_or_else(Utc::now),
            });
        }
        _ => {}
    }
    let until: DateTime<Utc> = sqlx::query_scalar(
        "UPDATE review_items
         SET status = 'claimed', claimed_by = $2, claimed_at = now(),
             claim_expires_at = now() + make_interval(secs => $3), updated_at = now()
         WHERE id = $1 RETURNING claim_expires_at",
    )
    .bind(id)
    .bind(&actor.name)
    .bind(ttl.as_secs_f64())
    .fetch_one(&mut *tx)
    .await?;
    audit_in_tx(
        &mut *tx,
        id,
        actor,
        "claim",
        &state.audit_json(),
        &claimed_json(actor, until),
        None,
    )
    .await?;
    get(tx, id).await?.ok_or(ReviewError::NotFound(id))
}

/// One audit entry.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize, utoipa::ToSchema)]
pub struct AuditRow {
    pub id: i64,
    pub actor: String,
    pub via: String,
    pub action: String,
    pub before: Value,
    pub after: Value,
    pub comment: Option<String>,
    pub at: DateTime<Utc>,
}

/// The audit trail of one item, oldest first.
pub async fn audit(pool: &PgPool, id: Uuid) -> sqlx::Result<Vec<AuditRow>> {
    sqlx::query_as(
        "SELECT id, actor, via, action, before, after, comment, at
         FROM review_audit WHERE item_id = $1 ORDER BY id",
    )
    .bind(id)
    .fetch_all(pool)
    .await
}

impl Filter {
    /// The statuses to match: the given ones, or open and claimed.
    fn statuses_or_pending(&self) -> Vec<String> {
        if self.statuses.is_empty() {
            vec!["open".to_string(), "claimed".to_string()]
        } else {
            self.statuses.clone()
        }
    }

    /// Sets the exact job and repository to match (blank: any). Postgres
    /// text cannot hold a NUL character: one is refused, naming the field,
    /// rather than failing the query.
    pub fn matching(
        mut self,
        job: Option<&str>,
        repository: Option<&str>,
    ) -> Result<Filter, String> {
        let given = |name: &str, v: Option<&str>| match v.map(str::trim) {
            Some(v) if v.contains('\0') => Err(format!("{name}: contains a NUL character")),
            Some(v) if !v.is_empty() => Ok(Some(v.to_string())),
            _ => Ok(None),
        };
        self.job = given("job", job)?;
        self.repository = given("repository", repository)?;
        Ok(self)
    }

    /// Builds a filter from user input (CLI flags or query parameters),
    /// naming the offending field on error. `statuses` is comma-separated.
    pub fn parse(
        statuses: Option<&str>,
        category: Option<&str>,
        min_confidence: Option<f32>,
        max_confidence: Option<f32>,
        older_than: Option<&str>,
        newer_than: Option<&str>,
    ) -> Result<Filter, String> {
        let mut filter = Filter::default();
        for s in statuses.into_iter().flat_map(|s| s.split(',')) {
            let s = s.trim().to_ascii_lowercase();
            if s.is_empty() {
                continue;
            }
            if !STATUSES.contains(&s.as_str()) {
                return Err(format!(
                    "status: {s:?} is not one of {}",
                    STATUSES.join(", ")
                ));
            }
            filter.statuses.push(s);
        }
        if let Some(c) = category {
            let c: crate::types::Category = c.parse().map_err(|e| format!("category: {e}"))?;
            filter.category = Some(c.as_str().to_string());
        }
        for (name, v) in [
            ("min_confidence", min_confidence),
            ("max_confidence", max_confidence),
        ] {
            if let Some(v) = v
                && !(0.0..=1.0).contains(&v)
            {
                return Err(format!("{name}: {v} is outside 0..=1"));
            }
        }
        filter.min_confidence = min_confidence;
        filter.max_confidence = max_confidence;
        let age = |name: &str, v: Option<&str>| {
            v.map(|t| crate::config::parse_duration(t).map_err(|e| format!("{name}: {e}")))
                .transpose()
        };
        filter.older_than = age("older_than", older_than)?;
        filter.newer_than = age("newer_than", newer_than)?;
        Ok(filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_name_the_bad_field() {
        let f = Filter::parse(
            Some("open,claimed"),
            Some("infra_error"),
            Some(0.2),
            None,
            Some("1h"),
            None,
        )
        .unwrap();
        assert_eq!(f.statuses, ["open", "claimed"]);
        assert_eq!(f.category.as_deref(), Some("INFRA_ERROR"));
        assert_eq!(f.older_than, Some(Duration::from_secs(3600)));
        assert!(
            Filter::parse(Some("closed"), None, None, None, None, None)
                .unwrap_err()
                .starts_with("status")
        );
        assert!(
            Filter::parse(None, Some("boom"), None, None, None, None)
                .unwrap_err()
                .starts_with("category")
        );
        assert!(
            Filter::parse(None, None, Some(1.5), None, None, None)
                .unwrap_err()
                .starts_with("min_confidence")
        );
        assert!(
            Filter::parse(None, None, None, None, None, Some("x"))
                .unwrap_err()
                .starts_with("newer_than")
        );
    }
}

/// How much is waiting for a reviewer.
#[derive(Debug, Clone, Copy, PartialEq, sqlx::FromRow)]
pub struct Backlog {
    /// Open or claimed items.
    pub open: i64,
    /// Age of the oldest of them, 0 when there is none.
    pub oldest_age_secs: f64,
}

/// Reads the size and age of the open review backlog (read-only; served by
/// the partial index on open items).
pub async fn backlog(pool: &PgPool) -> sqlx::Result<Backlog> {
    sqlx::query_as(
        "SELECT count(*) AS open,
                coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_age_secs
         FROM review_items WHERE status IN ('open', 'claimed')",
    )
    .fetch_one(pool)
    .await
}
