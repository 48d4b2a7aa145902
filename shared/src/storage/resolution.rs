//! Closing review items (resolve, dismiss) and the error library's human
//! tier, `review_resolutions`: what a reviewer confirmed or corrected, keyed
//! by the failure's fingerprint, so the next failure with that fingerprint is
//! answered from it.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    columns::CategoryColumn,
    review::{self, Actor, ItemState, ReviewError, ReviewRow, ReviewStatus},
};
use crate::types::Category;

/// What a reviewer decided. `accept` keeps the agent's answer; otherwise the
/// given fields replace the agent's (the others are kept).
#[derive(Debug, Clone, Default)]
pub struct Decision {
    pub accept: bool,
    pub category: Option<String>,
    pub root_cause: Option<String>,
    pub fix: Option<String>,
    pub comment: Option<String>,
}

/// A resolved item, and whether it taught the error library (only runs with
/// a fingerprint can).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Resolved {
    pub item: ReviewRow,
    pub library_id: Option<Uuid>,
}

#[derive(sqlx::FromRow)]
struct Target {
    #[sqlx(flatten)]
    state: ItemState,
    run_id: Uuid,
    fingerprint: Option<String>,
    result: Option<Value>,
}

/// Checks that `actor` may close the item in `state` (the claimant, or an admin).
fn may_close(id: Uuid, state: &ItemState, actor: &Actor) -> Result<(), ReviewError> {
    if state.status.is_closed() {
        return Err(ReviewError::Closed {
            id,
            status: state.status,
        });
    }
    if actor.admin {
        return Ok(());
    }
    let ours =
        state.status == ReviewStatus::Claimed && state.claimed_by.as_deref() == Some(&actor.name);
    match (ours, state.expired) {
        (true, false) => Ok(()),
        (true, true) => Err(ReviewError::ClaimExpired {
            id,
            at: state.claim_expires_at.unwrap_or_else(Utc::now),
        }),
        _ if state.status == ReviewStatus::Claimed && !state.expired => {
            Err(ReviewError::ClaimedByOther {
                id,
                by: state.claimed_by.clone().unwrap_or_default(),
                until: state.claim_expires_at.unwrap_or_else(Utc::now),
            })
        }
        _ => Err(ReviewError::NotClaimed(id)),
    }
}

async fn lock_target(conn: &mut PgConnection, id: Uuid) -> Result<Target, ReviewError> {
    sqlx::query_as(
        "SELECT i.status, i.claimed_by, i.claim_expires_at,
                coalesce(i.claim_expires_at < now(), false) AS expired, i.resolution,
                r.id AS run_id, r.fingerprint, r.result
         FROM review_items i JOIN analysis_runs r ON r.id = i.run_id
         WHERE i.id = $1 FOR UPDATE OF i",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?
    .ok_or(ReviewError::NotFound(id))
}

/// The final category, root cause and fix of a decision over the agent's `result`.
fn decide(
    decision: &Decision,
    result: Option<&Value>,
) -> Result<(Category, String, String), ReviewError> {
    let given =
        decision.category.is_some() || decision.root_cause.is_some() || decision.fix.is_some();
    if decision.accept && given {
        return Err(ReviewError::Invalid(
            "accept keeps the agent's answer: send category / root_cause / fix with action \"correct\"".into(),
        ));
    }
    if !decision.accept && !given {
        return Err(ReviewError::Invalid(
            "a correction needs at least one of category, root_cause, fix".into(),
        ));
    }
    let from_agent = |field: &str| {
        result
            .and_then(|r| r[field].as_str())
            .map(str::to_string)
            .filter(|s| !s.trim().is_empty())
    };
    let pick = |given: &Option<String>, field: &'static str| -> Result<String, ReviewError> {
        match given {
            Some(v) if v.trim().is_empty() => {
                Err(ReviewError::Invalid(format!("{field}: is empty")))
            }
            Some(v) => Ok(v.trim().to_string()),
            None => from_agent(field).ok_or_else(|| {
                ReviewError::Invalid(format!(
                    "{field}: the run has no answer to keep; give it explicitly"
                ))
            }),
        }
    };
    let category_text = pick(&decision.category, "category")?;
    let category: Category = category_text
        .parse()
        .map_err(|e| ReviewError::Invalid(format!("category: {e}")))?;
    if category == Category::Unknown && !decision.accept {
        return Err(ReviewError::Invalid(
            "category: a correction must name a category, not UNKNOWN".into(),
        ));
    }
    Ok((
        category,
        pick(&decision.root_cause, "root_cause")?,
        pick(&decision.fix, "fix")?,
    ))
}

/// claimed (by `actor`, or any state for an admin) -> resolved, with the
/// decision recorded on the item, in the audit trail and — when the run has
/// a fingerprint — in the error library, all in one transaction.
pub async fn resolve(
    pool: &PgPool,
    id: Uuid,
    actor: &Actor,
    decision: &Decision,
) -> Result<Resolved, ReviewError> {
    let mut tx = pool.begin().await?;
    let resolved = resolve_in_tx(&mut tx, id, actor, decision, true).await?;
    tx.commit().await?;
    Ok(resolved)
}

/// [`resolve`] in the caller's transaction; `teach`: also store the answer
/// in the error library (once per decision, not once per group member).
async fn resolve_in_tx(
    tx: &mut PgConnection,
    id: Uuid,
    actor: &Actor,
    decision: &Decision,
    teach: bool,
) -> Result<Resolved, ReviewError> {
    let target = lock_target(&mut *tx, id).await?;
    may_close(id, &target.state, actor)?;
    let (category, root_cause, fix) = decide(decision, target.result.as_ref())?;
    // A "correction" that repeats the agent's answer word for word is an
    // acceptance (a group decision hands the lead's answer to members
    // whose agent said the same).
    let agent_said = |field: &str, value: &str| {
        target.result.as_ref().and_then(|r| r[field].as_str()) == Some(value)
    };
    let accepted = decision.accept
        || (agent_said("category", category.as_str())
            && agent_said("root_cause", &root_cause)
            && agent_said("fix", &fix));
    let resolution = json!({
        "action": if accepted { "accept" } else { "correct" },
        "category": category.as_str(), "root_cause": root_cause, "fix": fix,
        "comment": decision.comment, "resolved_by": actor.name,
        "agent": target.result.as_ref().map(|r| json!({
            "category": r["category"], "root_cause": r["root_cause"], "fix": r["fix"],
        })),
    });
    close(&mut *tx, id, ReviewStatus::Resolved, &resolution, actor).await?;
    review::audit_in_tx(
        &mut *tx,
        id,
        actor,
        "resolve",
        &target.state.audit_json(),
        &json!({"status": ReviewStatus::Resolved, "resolution": resolution}),
        decision.comment.as_deref(),
    )
    .await?;
    let library_id = match &target.fingerprint {
        Some(fp) if teach && !fp.is_empty() => {
            let lib = Uuid::now_v7();
            sqlx::query(
                "INSERT INTO review_resolutions
                     (id, fingerprint, item_id, run_id, accepted, category, root_cause, fix, comment, resolved_by)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(lib)
            .bind(fp)
            .bind(id)
            .bind(target.run_id)
            .bind(accepted)
            .bind(CategoryColumn(category))
            .bind(&root_cause)
            .bind(&fix)
            .bind(&decision.comment)
            .bind(&actor.name)
            .execute(&mut *tx)
            .await?;
            Some(lib)
        }
        _ => None,
    };
    let item = review::get(tx, id)
        .await?
        .ok_or(ReviewError::NotFound(id))?;
    Ok(Resolved { item, library_id })
}

/// claimed (by `actor`, or any state for an admin) -> dismissed: nothing to
/// learn from this item (noise, a duplicate, an infrastructure blip).
pub async fn dismiss(
    pool: &PgPool,
    id: Uuid,
    actor: &Actor,
    comment: Option<&str>,
) -> Result<ReviewRow, ReviewError> {
    let mut tx = pool.begin().await?;
    let item = dismiss_in_tx(&mut tx, id, actor, comment).await?;
    tx.commit().await?;
    Ok(item)
}

/// [`dismiss`] in the caller's transaction.
async fn dismiss_in_tx(
    tx: &mut PgConnection,
    id: Uuid,
    actor: &Actor,
    comment: Option<&str>,
) -> Result<ReviewRow, ReviewError> {
    let target = lock_target(&mut *tx, id).await?;
    may_close(id, &target.state, actor)?;
    let resolution = json!({"action": "dismiss", "comment": comment, "resolved_by": actor.name});
    close(&mut *tx, id, ReviewStatus::Dismissed, &resolution, actor).await?;
    review::audit_in_tx(
        &mut *tx,
        id,
        actor,
        "dismiss",
        &target.state.audit_json(),
        &json!({"status": ReviewStatus::Dismissed, "resolution": resolution}),
        comment,
    )
    .await?;
    review::get(tx, id).await?.ok_or(ReviewError::NotFound(id))
}

/// A decision for a whole failure group.
#[derive(Debug, Clone)]
pub enum GroupDecision {
    Resolve(Decision),
    Dismiss(Option<String>),
}

/// What a group decision did: the members closed, and those left alone
/// with why (held by another reviewer, closed meanwhile, …).
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct GroupOutcome {
    pub closed: Vec<Uuid>,
    pub skipped: Vec<(Uuid, String)>,
}

/// Applies one decision to every pending member of the item's fingerprint
/// group, in one transaction. The item itself (the lead) is decided as by
/// [`resolve`] / [`dismiss`] and must be closable by `actor` (claimed by
/// them, or they are an admin), else nothing changes. Every other pending
/// member is claimed for `actor` (unless it already is) and closed with
/// the lead's final answer — each with its own resolution and audit rows;
/// the error library learns the answer once, from the lead. Members held
/// by another reviewer (an unexpired claim, whatever `actor`'s role) or
/// being decided in another transaction right now are left alone and
/// reported. An item without a fingerprint is a group of one.
pub async fn decide_group(
    pool: &PgPool,
    id: Uuid,
    actor: &Actor,
    ttl: std::time::Duration,
    decision: &GroupDecision,
) -> Result<GroupOutcome, ReviewError> {
    let mut tx = pool.begin().await?;
    let lead = lock_target(&mut tx, id).await?;
    may_close(id, &lead.state, actor)?;
    let mut outcome = GroupOutcome::default();
    let pending: Vec<Uuid> = match lead.fingerprint.as_deref().filter(|f| !f.is_empty()) {
        Some(fp) => {
            sqlx::query_scalar(
                "SELECT i.id FROM review_items i JOIN analysis_runs r ON r.id = i.run_id
             WHERE r.fingerprint = $1 AND i.status IN ('open', 'claimed') AND i.id <> $2
             ORDER BY i.created_at, i.id",
            )
            .bind(fp)
            .bind(id)
            .fetch_all(&mut *tx)
            .await?
        }
        None => Vec::new(),
    };
    // Lock what nobody else is deciding now; waiting for those rows could
    // deadlock two group decisions that started from different members.
    let locked: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM review_items WHERE id = ANY($1) ORDER BY created_at, id
         FOR UPDATE SKIP LOCKED",
    )
    .bind(&pending)
    .fetch_all(&mut *tx)
    .await?;
    for busy in pending.iter().filter(|m| !locked.contains(m)) {
        outcome
            .skipped
            .push((*busy, "being decided by someone else right now".into()));
    }
    close_member(&mut tx, id, actor, decision, true).await?;
    outcome.closed.push(id);
    // The members get the lead's final answer, not their own agent's.
    let for_members = match decision {
        GroupDecision::Resolve(d) => match decide(d, lead.result.as_ref())? {
            // An accepted UNKNOWN cannot be handed on as a correction:
            // each member accepts its own answer then.
            (Category::Unknown, _, _) => GroupDecision::Resolve(d.clone()),
            (category, root_cause, fix) => GroupDecision::Resolve(Decision {
                accept: false,
                category: Some(category.as_str().to_string()),
                root_cause: Some(root_cause),
                fix: Some(fix),
                comment: d.comment.clone(),
            }),
        },
        dismiss => dismiss.clone(),
    };
    for member in locked {
        // A savepoint per member: one refused member leaves the others.
        let mut sp = sqlx::Connection::begin(&mut *tx).await?;
        let done = async {
            let state = review::lock_state(&mut sp, member)
                .await?
                .ok_or(ReviewError::NotFound(member))?;
            let ours = state.status == ReviewStatus::Claimed
                && !state.expired
                && state.claimed_by.as_deref() == Some(&actor.name);
            if !ours {
                // Refuses a live claim of someone else, admin or not.
                review::claim_in_tx(&mut sp, member, actor, ttl).await?;
            }
            close_member(&mut sp, member, actor, &for_members, false).await
        }
        .await;
        match done {
            Ok(()) => {
                sp.commit().await?;
                outcome.closed.push(member);
            }
            Err(ReviewError::Database(e)) => return Err(ReviewError::Database(e)),
            Err(why) => {
                sp.rollback().await?;
                outcome.skipped.push((member, why.to_string()));
            }
        }
    }
    tx.commit().await?;
    Ok(outcome)
}

async fn close_member(
    conn: &mut PgConnection,
    id: Uuid,
    actor: &Actor,
    decision: &GroupDecision,
    teach: bool,
) -> Result<(), ReviewError> {
    match decision {
        GroupDecision::Resolve(d) => resolve_in_tx(conn, id, actor, d, teach).await.map(drop),
        GroupDecision::Dismiss(comment) => dismiss_in_tx(conn, id, actor, comment.as_deref())
            .await
            .map(drop),
    }
}

/// claimed -> resolved | dismissed: the item's own columns.
async fn close(
    conn: &mut PgConnection,
    id: Uuid,
    status: ReviewStatus,
    resolution: &Value,
    actor: &Actor,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE review_items SET status = $2, resolution = $3, closed_by = $4, closed_at = now(),
             claim_expires_at = NULL, updated_at = now()
         WHERE id = $1",
    )
    .bind(id)
    .bind(status)
    .bind(resolution)
    .bind(&actor.name)
    .execute(conn)
    .await?;
    Ok(())
}

/// A human-confirmed answer of the error library.
#[derive(Debug, Clone, sqlx::FromRow, serde::Serialize)]
pub struct LibraryEntry {
    pub id: Uuid,
    pub fingerprint: String,
    pub item_id: Uuid,
    pub run_id: Uuid,
    pub accepted: bool,
    pub category: CategoryColumn,
    pub root_cause: String,
    pub fix: String,
    pub comment: Option<String>,
    pub resolved_by: String,
    pub resolved_at: DateTime<Utc>,
}

/// Human-confirmed answers for a fingerprint, newest first (the error
/// library's strongest tier).
pub async fn by_fingerprint(
    pool: &PgPool,
    fingerprint: &str,
    limit: i64,
) -> sqlx::Result<Vec<LibraryEntry>> {
    sqlx::query_as(
        "SELECT id, fingerprint, item_id, run_id, accepted, category, root_cause, fix, comment,
                resolved_by, resolved_at
         FROM review_resolutions WHERE fingerprint = $1
         ORDER BY resolved_at DESC, id DESC LIMIT $2",
    )
    .bind(fingerprint)
    .bind(limit)
    .fetch_all(pool)
    .await
}
