//! The checkpoint of one iteration ([`commit_step`]): one statement, fenced
//! by the lease, built from parts ([`checkpoint_sql`]) and bound from one
//! parameter list ([`Params`]).

use std::{fmt::Write as _, sync::LazyLock, time::Duration};

use serde_json::Value;
use sqlx::{
    PgPool, Postgres,
    postgres::{PgArguments, PgTypeInfo},
    query::QueryAs,
};
use uuid::Uuid;

use super::{FINISHED_CHANNEL, Lease, STEPS_CHANNEL};
use crate::{
    queue::{self, AfterCommit, Broker, Pending},
    storage::{columns::CategoryColumn, review},
    types::{Category, RunStatus, StepRecord, StepTask},
};

/// How a committed iteration leaves the run.
#[derive(Debug, Clone)]
pub enum Next {
    /// Another iteration follows: push its step task.
    Continue,
    /// The run ends in `status` with this result.
    Finish(Finish),
}

#[derive(Debug, Clone)]
pub struct Finish {
    pub status: RunStatus,
    pub result: Value,
    pub category: Category,
    pub confidence: f32,
    /// Set when the run goes to the review queue.
    pub review_reason: Option<String>,
}

/// The journal row of one executed iteration.
#[derive(Debug, Clone)]
pub struct Checkpoint<'a> {
    pub record: &'a StepRecord,
    pub attempt: i32,
    pub worker_id: &'a str,
    pub tool_ms: i32,
    pub step_ms: i32,
    /// Set by the iteration that computed the failure's fingerprint.
    pub fingerprint: Option<String>,
    /// The normalised failure text, set with the fingerprint (the error
    /// library's text tier, [`crate::storage::similar`]).
    pub failure_text: Option<String>,
    /// The audit of the iteration's tool call, if a tool ran.
    pub tool_audit: Option<ToolAudit>,
    /// The run's arm (the reasoner it was assigned) and its prompt
    /// version, recorded on the run by its first checkpoint.
    pub arm: &'a str,
    pub prompt_version: Option<i32>,
}

/// How the checkpoint statement audits the iteration's tool call in
/// `tool_invocations`. Either way the audit is written even when the
/// checkpoint is fenced: the tool did run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAudit {
    /// The row written before the call ([`crate::storage::steps::tool_started`])
    /// is closed (`finished_at`, `ok`).
    Opened { id: i64, ok: bool },
    /// A local tool's call (it reads only Faultline's database) is written
    /// whole: the tool is the journal row's action, started `tool_ms`
    /// before the checkpoint, finished at it.
    Local { ok: bool },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Committed. `kept`: the lease of the next iteration, when the commit
    /// kept the run for its worker ([`commit_step`] with `keep`).
    Committed { kept: Option<Lease> },
    /// The lease was lost: nothing was written.
    Fenced,
}

/// Declares the checkpoint statement's parameters once: the [`Params`]
/// struct, their names in `$n` order ([`PARAM_NAMES`], which numbers the
/// `{name}`s of the SQL), their types ([`Params::types`]), and [`Params::bind`], which binds
/// the fields in that same order. The order cannot drift between the SQL
/// and the binds: both come from this list.
macro_rules! checkpoint_params {
    ($($(#[$doc:meta])* $name:ident: $ty:ty,)*) => {
        /// The values of one checkpoint statement.
        struct Params<'a> {
            $($(#[$doc])* $name: $ty,)*
        }

        /// The parameter names: `{name}` in the SQL is `$n`, n = position + 1.
        const PARAM_NAMES: &[&str] = &[$(stringify!($name)),*];

        impl<'a> Params<'a> {
            /// The parameter types, as [`Params::bind`] sends them.
            fn types() -> Vec<PgTypeInfo> {
                vec![$(<$ty as sqlx::Type<Postgres>>::type_info()),*]
            }

            fn bind<O>(
                self,
                query: QueryAs<'a, Postgres, O, PgArguments>,
            ) -> QueryAs<'a, Postgres, O, PgArguments> {
                query$(.bind(self.$name))*
            }
        }
    };
}

checkpoint_params! {
    run_id: Uuid,
    owner: &'a str,
    epoch: i64,
    iteration: i32,
    status: RunStatus,
    fingerprint: Option<&'a str>,
    result: Option<&'a Value>,
    category: Option<CategoryColumn>,
    confidence: Option<f32>,
    /// The run reaches a terminal state.
    finished: bool,
    tokens_in: i64,
    tokens_out: i64,
    cost_usd: f64,
    failure_text: Option<&'a str>,
    thought: &'a str,
    action: &'a str,
    action_input: &'a Value,
    observation: &'a Value,
    is_final: bool,
    attempt: i32,
    worker_id: &'a str,
    tool_ms: i32,
    step_ms: i32,
    reasoner: &'a str,
    call_id: Option<&'a str>,
    llm: Option<&'a Value>,
    /// The `tool_invocations` row to close ([`ToolAudit::Opened`]).
    audit_id: Option<i64>,
    audit_ok: bool,
    /// The next step's queue row is inserted by the statement.
    push: bool,
    job_id: Option<&'a str>,
    job_type: &'static str,
    job: Option<&'a [u8]>,
    job_max_attempts: i32,
    review_id: Uuid,
    review_reason: Option<&'a str>,
    outbox_id: Uuid,
    channel: &'static str,
    /// Where a watched run's commits are announced ([`STEPS_CHANNEL`]).
    steps_channel: &'static str,
    /// The committing worker keeps the run ([`commit_step`]'s `keep`).
    keep: bool,
    keep_secs: f64,
    /// A local tool's call is audited whole ([`ToolAudit::Local`]).
    audit_local: bool,
    arm: &'a str,
    prompt_version: Option<i32>,
}

/// The parts of the checkpoint statement ([`checkpoint_sql`]), with
/// `{name}` for the parameters of [`Params`]: the run update `r` and the
/// journal row `s` are always there.
const CHECKPOINT_RUN: &str = "
WITH r AS (
    UPDATE analysis_runs
    SET iteration = iteration + 1, attempts = 0, last_error = NULL, status = {status},
        lease_owner = CASE WHEN {keep} THEN lease_owner END,
        lease_expires_at = CASE WHEN {keep} THEN now() + make_interval(secs => {keep_secs}) END,
        lease_epoch = lease_epoch + CASE WHEN {keep} THEN 1 ELSE 0 END, next_attempt_at = now(),
        fingerprint = coalesce({fingerprint}, fingerprint),
        result = coalesce({result}, result), category = coalesce({category}, category),
        confidence = coalesce({confidence}, confidence),
        tokens_in = tokens_in + {tokens_in}, tokens_out = tokens_out + {tokens_out},
        cost_usd = cost_usd + {cost_usd},
        finished_at = CASE WHEN {finished} THEN now() END, updated_at = now(),
        reasoner = CASE WHEN iteration = 0 THEN {arm} ELSE reasoner END,
        prompt_version = CASE WHEN iteration = 0 THEN {prompt_version} ELSE prompt_version END
    WHERE id = {run_id} AND lease_owner = {owner} AND lease_epoch = {epoch}
      AND iteration = {iteration} - 1 AND (status = 'running') IS TRUE
    RETURNING id, priority, status, reprocess_batch, lease_epoch, watched_until, shadow_of
), s AS (
    INSERT INTO run_steps (run_id, iteration, thought, action, action_input, observation, is_final,
                           attempt, lease_epoch, worker_id, tool_ms, step_ms,
                           reasoner, call_id, llm, tokens_in, tokens_out, cost_usd)
    SELECT r.id, {iteration}, {thought}, {action}, {action_input}, {observation}, {is_final},
           {attempt}, {epoch}, {worker_id}, {tool_ms}, {step_ms}, {reasoner}, {call_id}, {llm},
           {tokens_in}::int, {tokens_out}::int, {cost_usd}
    FROM r
)";
const CHECKPOINT_FAILURE_TEXT: &str = ",
t AS (
    INSERT INTO run_failure_texts (run_id, failure_text)
    SELECT r.id, {failure_text} FROM r WHERE {failure_text}::text IS NOT NULL
    ON CONFLICT (run_id) DO UPDATE SET failure_text = excluded.failure_text
)";
const CHECKPOINT_AUDIT_OPENED: &str = ",
a AS (
    UPDATE tool_invocations SET finished_at = now(), ok = {audit_ok} WHERE id = {audit_id}
)";
const CHECKPOINT_AUDIT_LOCAL: &str = ",
al AS (
    INSERT INTO tool_invocations (run_id, iteration, tool, worker_id, started_at, finished_at, ok)
    SELECT {run_id}, {iteration}, {action}, {worker_id},
           now() - make_interval(secs => {tool_ms} / 1000.0), now(), {audit_ok}
    WHERE {audit_local}
)";
const CHECKPOINT_PUSH: &str = ",
j AS (
    INSERT INTO apalis.jobs (id, job_type, job, max_attempts, priority, run_at)
    SELECT {job_id}, {job_type}, {job}, {job_max_attempts}, greatest(r.priority, 0),
           clock_timestamp()
    FROM r WHERE {push}
)";
/// The review item's rows for [`review::insert_sql`], the one owner of
/// that insert.
const CHECKPOINT_REVIEW_ROWS: &str =
    "SELECT {review_id}, r.id, {review_reason}, {category}, {confidence}
    FROM r WHERE {review_reason}::text IS NOT NULL AND r.shadow_of IS NULL";
const CHECKPOINT_OUTBOX: &str = ",
ob AS (
    INSERT INTO notification_outbox (id, run_id, kind)
    SELECT {outbox_id}, r.id, r.status FROM r
    WHERE {finished} AND r.status IN ('completed', 'needs_review') AND r.reprocess_batch IS NULL
      AND r.shadow_of IS NULL
    ON CONFLICT (run_id) DO NOTHING
)";
const CHECKPOINT_SELECT: &str = "
SELECT priority, lease_epoch,
       CASE WHEN r.watched_until > now()
            THEN pg_notify({steps_channel}, r.id::text || ' ' || {iteration}::text)::text END
FROM r";
const CHECKPOINT_SELECT_FINISHED: &str = "
SELECT priority, lease_epoch,
       pg_notify({channel}, r.id::text)::text
       || coalesce(CASE WHEN r.watched_until > now()
            THEN pg_notify({steps_channel}, r.id::text || ' ' || {iteration}::text)::text END, '')
FROM r";

/// Which optional parts a checkpoint statement has (bits of [`checkpoint_sql`]).
const PART_FAILURE_TEXT: usize = 1;
const PART_AUDIT_OPENED: usize = 2;
const PART_AUDIT_LOCAL: usize = 4;
const PART_PUSH: usize = 8;
const PART_FINISH: usize = 16;
const PART_REVIEW: usize = 32;
/// How many variants there are (every combination of the parts).
const VARIANTS: usize = 64;

/// The checkpoint of one iteration as one statement, fenced by the lease:
/// the run update, the journal row, the failure text (once per run), the
/// tool's audit ([`ToolAudit`]), and the way on:
///
/// - **kept** (`keep`): the committing worker continues the run at once, so
///   the same update takes the lease of the next iteration (epoch + 1, new
///   expiry) and nothing is queued: no queue row to write, fetch, ack and
///   delete, no claim statement. If the worker dies before its next commit,
///   the lease expires and the reconciler queues the step, as for a crash
///   mid-step.
/// - **queued**: with the Postgres broker the next step task (its
///   `apalis.jobs` row, see [`queue::step_job`]); with Redis it is pushed
///   after the commit.
/// - **finished**: its review item (when it goes to review), its outbox row
///   (live runs; not a shadow run, nor a bulk re-analysis) and the
///   notification on [`FINISHED_CHANNEL`].
///
/// A run someone watches (`watched_until` in the future: a client of its
/// event stream, see `runs::watch`) also announces each commit on
/// [`STEPS_CHANNEL`] (`"<run id> <iteration>"`). Only those: a NOTIFY
/// serialises commits (below), so unwatched runs never send one.
///
/// A fenced run updates nothing, so the inserts that select from `r` insert
/// nothing; a second journal row for the iteration fails the whole
/// statement (I2). The audit is written even when fenced: the tool did run.
///
/// A queued task is due from `clock_timestamp()`, a moment after this
/// transaction's `now()`, so apalis's insert trigger sends no NOTIFY for it.
/// That is on purpose: Postgres serialises the commits of all transactions
/// that notified (a global lock held through the WAL flush), which capped a
/// worker fleet at ~300 steps/s. The committing worker wakes its own
/// consumer, which has a free slot (see the worker's runtime); other
/// workers find the task by polling. First steps (ingest) still notify.
///
/// The statement is built from parts ([`PART_PUSH`], …): the others only
/// when the iteration has something for them, so a statement never opens
/// and locks a table (and its indexes) it writes nothing to. Every variant
/// takes the same parameters ([`Params`]) and each part keeps its own guard,
/// so a variant differs from the full statement only by what it leaves out.
/// Each variant is one prepared statement per connection.
fn checkpoint_sql(parts: usize) -> &'static str {
    static SQL: LazyLock<Vec<String>> = LazyLock::new(|| (0..VARIANTS).map(build).collect());
    &SQL[parts % VARIANTS]
}

/// The variant `parts` of the checkpoint statement, its parameters numbered.
fn build(parts: usize) -> String {
    let review = format!(
        ",\nrv AS (\n{}\n)",
        review::insert_sql(CHECKPOINT_REVIEW_ROWS)
    );
    let mut sql = String::from(CHECKPOINT_RUN);
    for (bit, part) in [
        (PART_FAILURE_TEXT, CHECKPOINT_FAILURE_TEXT),
        (PART_AUDIT_OPENED, CHECKPOINT_AUDIT_OPENED),
        (PART_AUDIT_LOCAL, CHECKPOINT_AUDIT_LOCAL),
        (PART_PUSH, CHECKPOINT_PUSH),
        (PART_REVIEW, review.as_str()),
        (PART_FINISH, CHECKPOINT_OUTBOX),
    ] {
        if parts & bit != 0 {
            sql.push_str(part);
        }
    }
    sql.push_str(if parts & PART_FINISH != 0 {
        CHECKPOINT_SELECT_FINISHED
    } else {
        CHECKPOINT_SELECT
    });
    number_params(&sql)
}

/// Replaces each `{name}` of `sql` by `$n`, n its position in [`PARAM_NAMES`].
fn number_params(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(open) = rest.find('{') {
        let close = open
            + rest[open..]
                .find('}')
                .expect("an unclosed { in the checkpoint SQL");
        let name = &rest[open + 1..close];
        let n = PARAM_NAMES
            .iter()
            .position(|p| *p == name)
            .unwrap_or_else(|| panic!("the checkpoint SQL names {name:?}, not a parameter"));
        out.push_str(&rest[..open]);
        write!(out, "${}", n + 1).expect("writing to a String");
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Every variant of the checkpoint statement with the parameter types it is
/// bound with, for the test that prepares all statements.
pub(crate) fn statements() -> Vec<(String, &'static str, Vec<PgTypeInfo>)> {
    (0..VARIANTS)
        .map(|parts| {
            (
                format!("checkpoint::checkpoint_sql({parts})"),
                checkpoint_sql(parts),
                Params::types(),
            )
        })
        .collect()
}

/// What a committed iteration does next, decided before anything is written.
struct WayOn<'a> {
    /// The step task of the next iteration.
    next_step: StepTask,
    /// The next iteration's lease TTL, when the worker keeps the run.
    keep: Option<Duration>,
    /// The next step is queued (not kept, not finished).
    push: bool,
    /// Its `apalis.jobs` row (id, bytes), when the statement inserts it
    /// (Postgres broker); with Redis it is pushed after the commit.
    job: Option<(String, Vec<u8>)>,
    status: RunStatus,
    finish: Option<&'a Finish>,
}

impl<'a> WayOn<'a> {
    /// `in_sql`: the broker takes its tasks inside the statement (Postgres).
    fn of(
        lease: &Lease,
        cp: &Checkpoint<'_>,
        next: &'a Next,
        keep: Option<Duration>,
        in_sql: bool,
    ) -> Self {
        let next_step = StepTask {
            run_id: lease.run_id,
            iteration: cp.record.iteration + 1,
            attempt: 0,
        };
        let keep = keep.filter(|_| matches!(next, Next::Continue));
        let push = matches!(next, Next::Continue) && keep.is_none();
        let push_in_sql = push && in_sql;
        // Only a queued next step needs its queue row (a fresh id and its bytes).
        let job = push_in_sql.then(|| queue::step_job(&next_step));
        let (status, finish) = match next {
            Next::Continue if keep.is_some() => (RunStatus::Running, None),
            Next::Continue => (RunStatus::Queued, None),
            Next::Finish(f) => (f.status, Some(f)),
        };
        WayOn {
            next_step,
            keep,
            push,
            job,
            status,
            finish,
        }
    }

    /// The parts of the checkpoint statement this commit needs.
    fn parts(&self, cp: &Checkpoint<'_>) -> usize {
        [
            (cp.failure_text.is_some(), PART_FAILURE_TEXT),
            (
                matches!(cp.tool_audit, Some(ToolAudit::Opened { .. })),
                PART_AUDIT_OPENED,
            ),
            (
                matches!(cp.tool_audit, Some(ToolAudit::Local { .. })),
                PART_AUDIT_LOCAL,
            ),
            (self.job.is_some(), PART_PUSH),
            (self.status.is_terminal(), PART_FINISH),
            (
                self.finish.is_some_and(|f| f.review_reason.is_some()),
                PART_REVIEW,
            ),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |parts, (_, bit)| parts | bit)
    }
}

impl<'a> Params<'a> {
    /// The statement's values for `cp` committed under `lease`, going `way`.
    fn of(lease: &'a Lease, cp: &'a Checkpoint<'a>, way: &'a WayOn<'a>) -> Self {
        let r = cp.record;
        let finish = way.finish;
        Params {
            run_id: lease.run_id,
            owner: &lease.owner,
            epoch: lease.epoch,
            iteration: r.iteration,
            status: way.status,
            fingerprint: cp.fingerprint.as_deref(),
            result: finish.map(|f| &f.result),
            category: finish.map(|f| CategoryColumn(f.category)),
            confidence: finish.map(|f| f.confidence),
            finished: way.status.is_terminal(),
            tokens_in: i64::from(r.tokens_in),
            tokens_out: i64::from(r.tokens_out),
            cost_usd: r.cost_usd,
            failure_text: cp.failure_text.as_deref(),
            thought: &r.thought,
            action: &r.action,
            action_input: &r.action_input,
            observation: &r.observation,
            is_final: r.is_final,
            attempt: cp.attempt,
            worker_id: cp.worker_id,
            tool_ms: cp.tool_ms,
            step_ms: cp.step_ms,
            reasoner: if r.reasoner.is_empty() {
                "heuristic"
            } else {
                &r.reasoner
            },
            call_id: r.call_id.as_deref(),
            llm: r.llm.as_ref(),
            audit_id: match cp.tool_audit {
                Some(ToolAudit::Opened { id, .. }) => Some(id),
                _ => None,
            },
            audit_ok: match cp.tool_audit {
                Some(ToolAudit::Opened { ok, .. } | ToolAudit::Local { ok, .. }) => ok,
                None => false,
            },
            push: way.job.is_some(),
            job_id: way.job.as_ref().map(|(id, _)| id.as_str()),
            job_type: queue::STEP_QUEUE,
            job: way.job.as_ref().map(|(_, bytes)| bytes.as_slice()),
            job_max_attempts: queue::STEP_TASK_MAX_ATTEMPTS,
            review_id: Uuid::now_v7(),
            review_reason: finish.and_then(|f| f.review_reason.as_deref()),
            outbox_id: Uuid::now_v7(),
            channel: FINISHED_CHANNEL,
            steps_channel: STEPS_CHANNEL,
            keep: way.keep.is_some(),
            keep_secs: way.keep.unwrap_or_default().as_secs_f64(),
            audit_local: matches!(cp.tool_audit, Some(ToolAudit::Local { .. })),
            arm: cp.arm,
            prompt_version: cp.prompt_version,
        }
    }
}

/// running -> running (next iteration's lease kept, when `keep` gives its
/// TTL), queued (next step pushed) or a terminal state, together with the
/// iteration's checkpoint, any review item and the run's notification
/// (outbox), atomically and fenced by the lease epoch: one statement,
/// [`checkpoint_sql`]. `keep` only applies to [`Next::Continue`].
pub async fn commit_step(
    pool: &PgPool,
    broker: &Broker,
    lease: &Lease,
    cp: &Checkpoint<'_>,
    next: &Next,
    keep: Option<Duration>,
) -> sqlx::Result<CommitOutcome> {
    let mut after = AfterCommit::new(broker);
    let way = WayOn::of(lease, cp, next, keep, after.in_transaction());
    let committed: Option<(i32, i64, Option<String>)> = Params::of(lease, cp, &way)
        .bind(sqlx::query_as(checkpoint_sql(way.parts(cp))))
        .fetch_optional(pool)
        .await?;
    let Some((priority, epoch, _)) = committed else {
        return Ok(CommitOutcome::Fenced);
    };
    if way.push {
        after.push(Pending {
            step: way.next_step,
            priority,
            run_at: None,
        });
        after.flush().await;
    }
    Ok(CommitOutcome::Committed {
        kept: way.keep.map(|_| Lease {
            run_id: lease.run_id,
            owner: lease.owner.clone(),
            epoch,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_numbers_only_declared_parameters() {
        for parts in 0..VARIANTS {
            let sql = checkpoint_sql(parts);
            assert!(!sql.contains('{'), "variant {parts}: {sql}");
            for n in 1..=PARAM_NAMES.len() + 1 {
                if sql.contains(&format!("${n}")) && n > PARAM_NAMES.len() {
                    panic!("variant {parts} uses ${n}, past the parameter list");
                }
            }
        }
        assert_eq!(Params::types().len(), PARAM_NAMES.len());
        // The full statement uses every parameter.
        let full = checkpoint_sql(VARIANTS - 1);
        for n in 1..=PARAM_NAMES.len() {
            assert!(full.contains(&format!("${n}")), "${n} unused");
        }
    }

    #[test]
    fn the_review_part_is_the_review_modules_insert() {
        let with_review = checkpoint_sql(PART_FINISH | PART_REVIEW);
        assert!(
            with_review
                .contains("INSERT INTO review_items (id, run_id, reason, category, confidence)")
        );
        assert!(!checkpoint_sql(PART_FINISH).contains("review_items"));
    }
}
