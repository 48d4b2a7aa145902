//! One queue task = one ReAct iteration, executed as a checkpointed step:
//!
//! 1. **claim** the run's lease for the task's (iteration, attempt), bumping
//!    the epoch, reading the event and the journal in the same statement; a
//!    stale task is dropped;
//! 2. **rebuild** the state from the journal (`run_steps`);
//! 3. **decide** (reasoner) and **act** (tool, audited and timed out), or
//!    **verify** a final answer and route it;
//! 4. **commit** checkpoint + run update + tool audit + the way on in one
//!    statement fenced by the epoch: a live run keeps the next iteration's
//!    lease and goes on in the same slot from step 3 (no queue, no claim); a
//!    bulk run queues its next step task; a finishing run writes its result,
//!    review item and outbox row.
//!
//! While a step runs, its lease is renewed every third of its TTL, with
//! every other lease of the worker in one statement ([`crate::leases`]); if
//! it is lost the step stops. Transient errors become a durable retry (attempt
//! count and next attempt time in Postgres); permanent ones dead-letter the
//! run into the review queue.

use std::{borrow::Cow, sync::Arc, time::Instant};

use faultline_shared::{
    FinalAnswer, Settings, StepRecord, StepTask, metrics,
    queue::{self, Broker},
    storage::{
        events, log_fetches,
        runs::{
            self, Backoff, Checkpoint, CommitOutcome, FailureOutcome, Finish, Lease, Next,
            ToolAudit,
        },
        shadow, steps,
    },
    telemetry,
    text::{self, JsonBounds},
    tool::{LogExcerpt, Observed, SimilarFailures},
    types::{FINAL_ANSWER, INVALID_RESPONSE, RunStatus},
};
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::sync::watch;
use tracing::{Instrument as _, info, warn};

use crate::{
    agent::{
        AgentState, Decision, Draft, HeuristicReasoner, Reasoned, Reasoner,
        judge::{Judge, Judged},
        origin,
        rollout::{Assigned, Rollout},
        specifics,
        verify::{self, Route},
    },
    failure::Failure,
    leases::Leases,
    sources::fetch::LogFetcher,
    tools::{ToolBelt, ToolContext, ToolError, ToolName},
};

/// What happened to one step task.
#[derive(Debug, Clone, PartialEq)]
pub enum StepOutcome {
    /// The iteration was committed; `finished` when the run reached a terminal state.
    Committed {
        iteration: i32,
        finished: Option<RunStatus>,
    },
    /// The task no longer matched the run (already done, superseded, or held).
    Stale,
    /// Our lease was lost before the commit: nothing was written.
    Fenced,
    /// A transient failure; the retry is scheduled in Postgres.
    Retrying { attempt: i32 },
    /// Out of attempts or a permanent failure: the run failed into review.
    DeadLettered,
    /// Shutdown: the lease was handed back and the step re-queued.
    Released,
}

/// A run whose lease this worker holds, with what its next step starts
/// from: claimed from the queue, or kept by the previous step's commit.
struct Held {
    lease: Lease,
    run: runs::RunRow,
    /// `None` if the run's event is gone (a permanent error for the step).
    event: Option<events::EventRow>,
    journal: Vec<StepRecord>,
    attempt: i32,
}

impl Held {
    fn claimed(claim: runs::Claim, attempt: i32) -> Self {
        Held {
            lease: claim.lease,
            run: claim.run,
            event: claim.event,
            journal: claim.journal.iter().map(|s| s.record()).collect(),
            attempt,
        }
    }
}

/// A held step's run, event and journal, handed from [`Engine::execute`]
/// to [`Engine::commit`] (a [`Held`] whose event is known to exist).
struct Resume {
    lease: Lease,
    run: runs::RunRow,
    event: events::EventRow,
    journal: Vec<StepRecord>,
    attempt: i32,
    /// The run's arm and prompt, recorded by its first checkpoint.
    assigned: Assigned,
}

/// What one iteration produced, before its commit.
struct Produced {
    record: StepRecord,
    next: Next,
    tool_ms: i32,
    tool_audit: Option<ToolAudit>,
    /// The failure's fingerprint and normalised text, when a tool computed
    /// them (the error library's entry for this run).
    fingerprint: Option<String>,
    failure_text: Option<String>,
}

impl Produced {
    /// A step that called no tool and goes on.
    fn of(record: StepRecord) -> Self {
        Produced {
            record,
            next: Next::Continue,
            tool_ms: 0,
            tool_audit: None,
            fingerprint: None,
            failure_text: None,
        }
    }
}

/// Who decided a step and what the model exchange cost: stamped on the
/// step's journal row whatever the decision was.
struct Meta {
    reasoner: &'static str,
    call_id: Option<String>,
    llm: Option<Value>,
    tokens_in: i32,
    tokens_out: i32,
    cost_usd: f64,
}

impl Meta {
    fn split(reasoned: Reasoned, reasoner: &'static str) -> (Option<Decision>, Meta) {
        let Reasoned {
            decision,
            call_id,
            llm,
            tokens_in,
            tokens_out,
            cost_usd,
        } = reasoned;
        let meta = Meta {
            reasoner,
            call_id,
            llm,
            tokens_in,
            tokens_out,
            cost_usd,
        };
        (decision, meta)
    }

    fn stamp(&self, mut record: StepRecord) -> StepRecord {
        record.reasoner = self.reasoner.to_string();
        record.call_id = self.call_id.clone();
        record.llm = self.llm.clone();
        record.tokens_in = self.tokens_in;
        record.tokens_out = self.tokens_out;
        record.cost_usd = self.cost_usd;
        record
    }
}

impl StepOutcome {
    /// The `outcome` label of the step metrics and span.
    pub fn label(&self) -> &'static str {
        match self {
            StepOutcome::Committed { .. } => "committed",
            StepOutcome::Stale => "stale",
            StepOutcome::Fenced => "fenced",
            StepOutcome::Retrying { .. } => "retrying",
            StepOutcome::DeadLettered => "dead_lettered",
            StepOutcome::Released => "released",
        }
    }
}

/// Everything a worker needs to execute steps; shared by all concurrent steps.
pub struct Engine {
    pub pool: PgPool,
    /// Where step tasks go (retries, released runs, queued next steps).
    pub broker: Broker,
    /// Renews the leases of every step in flight, in one statement.
    pub leases: Leases,
    pub settings: Settings,
    pub worker_id: String,
    pub tools: ToolBelt,
    /// The configured model's reasoner; which runs it gets is `rollout`'s.
    pub llm: Option<Arc<dyn Reasoner>>,
    /// Which reasoner and prompt each run gets (ratio, shadow runs, the
    /// prompt registry).
    pub rollout: Rollout,
    /// Continue with the heuristic reasoner when the LLM fails for good.
    pub llm_fallback: bool,
    /// The judge model scoring every drafted answer, when configured.
    pub judge: Option<Arc<Judge>>,
    /// Flips to true on SIGTERM.
    pub shutdown: watch::Receiver<bool>,
    /// Fetches a webhook event's log, and the last green log of its job,
    /// before the run's first iteration.
    pub log_fetch: LogFetcher,
}

impl Engine {
    fn backoff(&self) -> Backoff {
        Backoff {
            base: self.settings.retry_base,
            max: self.settings.retry_max,
        }
    }

    /// Executes a step task, then, while the run goes on, its next steps in
    /// the same slot: a live run's commit keeps the lease of its next
    /// iteration ([`runs::commit_step`] with `keep`), so the next step needs
    /// no queue round trip and no claim. Each step is still fenced and
    /// checkpointed on its own; a crash between steps is a crash while
    /// holding the lease, recovered when it expires. Bulk runs go back to
    /// the queue after every step so that live work overtakes them; on
    /// shutdown a kept run is released (re-queued) instead.
    pub async fn run_task(&self, task: StepTask) -> anyhow::Result<StepOutcome> {
        let started = Instant::now();
        let ttl = self.settings.lease_ttl;
        let Some(claim) = runs::claim(&self.pool, &task, &self.worker_id, ttl).await? else {
            metrics::step("stale", started.elapsed());
            return Ok(StepOutcome::Stale);
        };
        let mut held = Held::claimed(claim, task.attempt);
        let mut started = started;
        loop {
            let (outcome, next) = self.run_step(held, started).await?;
            let Some(next) = next else {
                return Ok(outcome);
            };
            if *self.shutdown.borrow() {
                runs::release(&self.pool, &self.broker, &next.lease).await?;
                return Ok(outcome);
            }
            held = next;
            started = Instant::now();
        }
    }

    /// Executes one held step (see the module doc) in a `step` span whose
    /// parent is the run's ingest span, so every step of an analysis, on
    /// whichever worker, is in one trace. Returns the next step when the
    /// commit kept the run.
    async fn run_step(
        &self,
        held: Held,
        started: Instant,
    ) -> anyhow::Result<(StepOutcome, Option<Held>)> {
        let span = tracing::info_span!("step", run_id = %held.run.id, iteration = held.run.iteration + 1,
            attempt = held.attempt, worker = %self.worker_id,
            category = tracing::field::Empty, outcome = tracing::field::Empty);
        telemetry::set_parent(&span, held.run.traceparent.as_deref());
        let result = self.run_held(held, started).instrument(span.clone()).await;
        let label = result.as_ref().map_or("error", |(o, _)| o.label());
        span.record("outcome", label);
        metrics::step(label, started.elapsed());
        result
    }

    async fn run_held(
        &self,
        held: Held,
        started: Instant,
    ) -> anyhow::Result<(StepOutcome, Option<Held>)> {
        let lease = held.lease.clone();
        let hold = self.leases.hold(&lease);
        let mut lost = hold.lost.clone();
        let mut shutdown = self.shutdown.clone();
        let grace = self.settings.shutdown_grace;

        let outcome = tokio::select! {
            result = self.execute(held, started) => match result {
                Ok(done) => done,
                Err(failure) => (self.fail(&lease, &failure).await?, None),
            },
            _ = async { let _ = lost.wait_for(|lost| *lost).await; } => {
                warn!("lease lost mid-step; abandoning the iteration");
                (StepOutcome::Fenced, None)
            }
            _ = async { let _ = shutdown.wait_for(|s| *s).await; tokio::time::sleep(grace).await } => {
                warn!("shutdown grace period over; releasing the step");
                let released = runs::release(&self.pool, &self.broker, &lease).await?;
                (if released { StepOutcome::Released } else { StepOutcome::Fenced }, None)
            }
        };
        drop(hold);
        Ok(outcome)
    }

    async fn fail(&self, lease: &Lease, failure: &Failure) -> anyhow::Result<StepOutcome> {
        let (msg, transient) = (failure.chain(), failure.is_transient());
        warn!(error = msg, transient, "step failed");
        Ok(
            match runs::record_failure(
                &self.pool,
                &self.broker,
                lease,
                &msg,
                transient,
                self.backoff(),
                failure.wait(),
            )
            .await?
            {
                FailureOutcome::Retrying { attempt, .. } => {
                    metrics::retry_scheduled();
                    StepOutcome::Retrying { attempt }
                }
                FailureOutcome::DeadLettered { .. } => {
                    metrics::analysis_finished(RunStatus::Failed.as_str(), "UNKNOWN");
                    StepOutcome::DeadLettered
                }
                FailureOutcome::Fenced => StepOutcome::Fenced,
            },
        )
    }

    /// Rebuilds the state, runs one iteration and commits it; a live run
    /// that goes on comes back as the next held step. The seams are the
    /// module doc's: [`Self::prepare`], [`Self::decide`], then
    /// [`Self::acted`] or [`Self::answered`] (or an invalid reply), and
    /// [`Self::commit`].
    async fn execute(
        &self,
        held: Held,
        started: Instant,
    ) -> Result<(StepOutcome, Option<Held>), Failure> {
        let Held {
            lease,
            run,
            event,
            journal,
            attempt,
        } = held;
        let event = self.prepare(&lease, &run, event, &journal).await?;
        let assigned = self.rollout.assign(&self.pool, &run, &event).await?;
        let iteration = run.iteration + 1;
        let tool_names = self.tools.names();
        let state = AgentState {
            event: &event,
            journal: &journal,
            iteration,
            max_iterations: run.max_iterations,
            tools: &tool_names,
            prompt: assigned.prompt.as_deref(),
        };
        let (reasoned, reasoner) = self.decide(&state, &assigned).await?;
        let (decision, meta) = Meta::split(reasoned, reasoner);
        let decision =
            decision.ok_or_else(|| Failure::permanent("the reasoner returned no decision"))?;
        let produced = match decision {
            Decision::Act {
                thought,
                tool,
                input,
            } => {
                self.acted(&run, &journal, &meta, thought, tool, input)
                    .await?
            }
            Decision::Invalid {
                thought,
                raw,
                error,
            } => Produced::of(meta.stamp(StepRecord {
                iteration,
                thought,
                action: INVALID_RESPONSE.to_string(),
                action_input: raw,
                observation: json!({"error": error}),
                is_final: false,
                ..StepRecord::default()
            })),
            Decision::Answer { thought, draft } => {
                self.answered(&state, &run, &meta, thought, draft).await?
            }
        };
        let at = Resume {
            lease,
            run,
            event,
            journal,
            attempt,
            assigned,
        };
        self.commit(at, produced, started).await
    }

    /// The event and its log before the run's first iteration (the log and
    /// the last green log fetched once), and a journal that matches the run.
    async fn prepare(
        &self,
        lease: &Lease,
        run: &runs::RunRow,
        event: Option<events::EventRow>,
        journal: &[StepRecord],
    ) -> Result<events::EventRow, Failure> {
        let event = event.ok_or_else(|| {
            Failure::permanent(format!(
                "event {} of run {} is missing",
                run.event_id, run.id
            ))
        })?;
        let event = if run.iteration == 0 {
            // What is recorded already: one read for both fetches.
            let sources = log_fetches::sources(&self.pool, event.id).await?;
            let (event, fetched) = self.ensure_log(lease, event, &sources).await?;
            // Issue 13: the last green log of the job, the excerpt's baseline.
            let log = fetched.as_ref().or(sources.log.as_ref());
            let baseline = self
                .log_fetch
                .ensure_baseline(&self.pool, lease, &event, &sources, log);
            // Only the database or a lost lease fails it: worth a retry.
            baseline
                .await
                .map_err(|e| Failure::transient("storing the last green log").caused_by(e))?;
            event
        } else {
            event
        };
        if journal.len() as i32 != run.iteration {
            return Err(Failure::permanent(format!(
                "journal has {} rows but the run committed {} iterations",
                journal.len(),
                run.iteration
            )));
        }
        Ok(event)
    }

    /// A tool call's step: the observation, its audit, and, when the tool
    /// computed the failure's fingerprint, what the error library keeps.
    async fn acted(
        &self,
        run: &runs::RunRow,
        journal: &[StepRecord],
        meta: &Meta,
        thought: String,
        tool: String,
        input: Value,
    ) -> Result<Produced, Failure> {
        let iteration = run.iteration + 1;
        let tool_started = Instant::now();
        let (observation, tool_audit) = self.act(run, iteration, journal, &tool, &input).await?;
        let tool_ms = tool_started.elapsed().as_millis() as i32;
        let (fingerprint, failure_text) = fingerprint_of(&tool, &observation);
        let record = StepRecord {
            iteration,
            thought,
            action: tool,
            action_input: input,
            observation,
            is_final: false,
            ..StepRecord::default()
        };
        Ok(Produced {
            tool_ms,
            tool_audit,
            fingerprint,
            failure_text,
            ..Produced::of(meta.stamp(record))
        })
    }

    /// A final answer's step: judged (when a judge is configured), verified
    /// against the journal and routed: complete, review, or one more round.
    async fn answered(
        &self,
        state: &AgentState<'_>,
        run: &runs::RunRow,
        meta: &Meta,
        thought: String,
        draft: Draft,
    ) -> Result<Produced, Failure> {
        let (iteration, journal) = (state.iteration, state.journal);
        let self_corrected = journal
            .iter()
            .any(|s| s.action == FINAL_ANSWER && !s.is_final);
        let may_self_correct = !self_corrected && iteration + 1 < run.max_iterations;
        let judged = match &self.judge {
            Some(judge) => Some(judge.assess(state, &draft).await),
            None => None,
        };
        let verdict = verify::verify(
            &draft,
            journal,
            self.settings.thresholds,
            may_self_correct,
            judged.as_ref().and_then(|j| j.score),
        );
        // From the log's diagnosis, whichever reasoner drafted.
        let specifics = specifics::of(journal);
        // The files the failure names: its report's, then its stack frames'.
        let mut files = origin::failure_files(&specifics);
        for f in origin::frame_files(journal) {
            if !files.contains(&f) {
                files.push(f);
            }
        }
        let (origin, origin_evidence) =
            origin::decide(draft.category, origin::history_of(journal).as_ref(), &files);
        let answer = FinalAnswer {
            category: draft.category,
            root_cause: draft.root_cause.clone(),
            fix: draft.fix.clone(),
            evidence: verdict.grounded.clone(),
            confidence: verdict.confidence,
            confidence_parts: verdict.parts.clone(),
            kb_refs: draft.kb_refs.clone(),
            specifics,
            origin,
            origin_evidence,
        };
        let mut answer_json =
            serde_json::to_value(&answer).map_err(|e| Failure::permanent(e.to_string()))?;
        text::bound_json(&mut answer_json, &JsonBounds::JOURNAL);
        let (next, observation) = routed(&answer, answer_json, &verdict, judged.as_ref());
        let record = StepRecord {
            iteration,
            thought,
            action: FINAL_ANSWER.to_string(),
            action_input: serde_json::to_value(&draft).unwrap_or(Value::Null),
            observation,
            is_final: !matches!(verdict.route, Route::SelfCorrect { .. }),
            ..StepRecord::default()
        };
        let mut record = meta.stamp(record);
        if let Some(j) = judged {
            // Journaled with the step: a resumed run never asks the judge again.
            let mut llm = record.llm.take().unwrap_or_else(|| json!({}));
            llm["judge"] = j.journal;
            record.llm = Some(llm);
            record.tokens_in += j.tokens_in;
            record.tokens_out += j.tokens_out;
            record.cost_usd += j.cost_usd;
        }
        Ok(Produced {
            next,
            ..Produced::of(record)
        })
    }

    /// Bounds the step's journal row and commits it with the run's way on,
    /// fenced by the lease; a kept live run comes back as the next step.
    async fn commit(
        &self,
        at: Resume,
        produced: Produced,
        started: Instant,
    ) -> Result<(StepOutcome, Option<Held>), Failure> {
        let Resume {
            lease,
            run,
            event,
            mut journal,
            attempt,
            assigned,
        } = at;
        let Produced {
            mut record,
            mut next,
            tool_ms,
            tool_audit,
            fingerprint,
            failure_text,
        } = produced;
        // Whatever a log, a tool or a model put into this step, its journal
        // row is bounded and storable (no NUL, no 100 MB string).
        bound_record(&mut record);
        if run.shadow_of.is_some()
            && let Next::Finish(f) = &mut next
        {
            // A shadow run is compared, never reviewed.
            f.review_reason = None;
        }
        if let Some(delay) = self.settings.chaos.step_delay {
            info!(?delay, "chaos: holding the step before its commit");
            tokio::time::sleep(delay).await;
        }
        let iteration = record.iteration;
        let cp = Checkpoint {
            record: &record,
            attempt,
            worker_id: &self.worker_id,
            tool_ms,
            step_ms: started.elapsed().as_millis() as i32,
            fingerprint,
            failure_text,
            tool_audit,
            arm: assigned.arm,
            prompt_version: assigned.prompt.as_ref().map(|p| p.version),
        };
        let finished = match &next {
            Next::Finish(f) => Some(f.status),
            Next::Continue => None,
        };
        // Live runs go on in this slot; bulk runs go back to the queue.
        let keep = (run.priority >= queue::PRIORITY_LIVE && !*self.shutdown.borrow())
            .then_some(self.settings.lease_ttl);
        self.leases.committing(&lease);
        let kept = match self.commit_retrying(&lease, &cp, &next, keep).await? {
            CommitOutcome::Committed { kept } => kept,
            CommitOutcome::Fenced => {
                warn!("commit fenced: another worker holds this run now");
                return Ok((StepOutcome::Fenced, None));
            }
        };
        info!(action = %record.action, ?finished, "iteration committed");
        if let Next::Finish(f) = &next {
            tracing::Span::current().record("category", f.category.as_str());
            // Shadow runs are the rollout's, not the service's outcomes.
            if run.shadow_of.is_none() {
                metrics::analysis_finished(f.status.as_str(), f.category.as_str());
            }
            metrics::arm_finished(assigned.arm, run.shadow_of.is_some(), f.status.as_str());
            if run.shadow_of.is_some() || self.settings.shadow_reasoner.is_some() {
                self.compare_shadow(run.id).await;
            }
        }
        let next = kept.map(|lease| {
            journal.push(record);
            Held {
                run: runs::RunRow {
                    iteration,
                    attempts: 0,
                    lease_epoch: lease.epoch,
                    // As the first checkpoint recorded them.
                    reasoner: assigned.arm.to_string(),
                    prompt_version: assigned.prompt.as_ref().map(|p| p.version),
                    ..run
                },
                lease,
                event: Some(event),
                journal,
                attempt: 0,
            }
        });
        let outcome = StepOutcome::Committed {
            iteration,
            finished,
        };
        Ok((outcome, next))
    }

    /// The checkpoint, retried in place while the database fails
    /// transiently (a pool that is out of connections for a moment, a
    /// dropped connection): the step's model call and tools are done and
    /// paid for, so they are not thrown away for the durable retry unless
    /// the database stays out of reach for a whole lease TTL. A retry after
    /// a commit that did land but lost its answer is fenced (the epoch moved
    /// on), which loses nothing.
    async fn commit_retrying(
        &self,
        lease: &runs::Lease,
        cp: &Checkpoint<'_>,
        next: &Next,
        keep: Option<std::time::Duration>,
    ) -> Result<CommitOutcome, Failure> {
        use backon::{ExponentialBuilder, Retryable as _};
        let backoff = ExponentialBuilder::default()
            .with_min_delay(std::time::Duration::from_millis(50))
            .with_max_delay(std::time::Duration::from_secs(2))
            .with_total_delay(Some(self.settings.lease_ttl))
            .without_max_times()
            .with_jitter();
        let outcome = (|| runs::commit_step(&self.pool, &self.broker, lease, cp, next, keep))
            .retry(backoff)
            .when(faultline_shared::storage::is_transient)
            .notify(|e, wait| {
                warn!(error = %e, ?wait, "checkpoint failed; retrying it with the step's work kept");
                metrics::commit_retry();
            })
            .await?;
        Ok(outcome)
    }

    /// Issue 5: a webhook event arrives without its log; the first step
    /// fetches and stores it once (see [`crate::sources::fetch`]). A log that
    /// cannot be had fails the run into review with the reason.
    async fn ensure_log(
        &self,
        lease: &Lease,
        event: events::EventRow,
        sources: &log_fetches::Sources,
    ) -> Result<(events::EventRow, Option<log_fetches::Fetched>), Failure> {
        match self
            .log_fetch
            .ensure(&self.pool, lease, &event, sources)
            .await?
        {
            None => Ok((event, None)),
            Some(fetched) => {
                let event = events::get(&self.pool, event.id)
                    .await?
                    .ok_or_else(|| Failure::permanent(format!("event {} vanished", event.id)))?;
                Ok((event, Some(fetched)))
            }
        }
    }

    /// Asks the configured reasoner; on a permanent LLM failure, and for the
    /// rest of a run that already fell back, the heuristic reasoner decides
    /// instead (when `LLM_FALLBACK` is on), with the reason in the journal.
    async fn decide(
        &self,
        state: &AgentState<'_>,
        assigned: &Assigned,
    ) -> Result<(Reasoned, &'static str), Failure> {
        let fell_back = state.journal.iter().any(|s| {
            s.llm
                .as_ref()
                .is_some_and(|l| l.get("llm_fallback").is_some())
        });
        let heuristic = || {
            (
                Reasoned::offline(HeuristicReasoner.plan(state)),
                HeuristicReasoner.name(),
            )
        };
        let llm = match &self.llm {
            Some(llm) if assigned.llm && !fell_back => llm,
            _ => return Ok(heuristic()),
        };
        let error = match llm.decide(state).await {
            Ok(r) => match &r.decision {
                Some(Decision::Answer { .. }) => return Ok((r, llm.name())),
                Some(_) if state.must_answer() => {
                    format!("no final answer within {} iterations", state.max_iterations)
                }
                _ => return Ok((r, llm.name())),
            },
            Err(e) if e.is_transient() => return Err(e),
            Err(e) => e.chain(),
        };
        if !self.llm_fallback || assigned.shadow {
            return Err(Failure::permanent(error));
        }
        warn!(
            error,
            "LLM failed for good; the heuristic reasoner takes over this run"
        );
        metrics::llm_fallback(llm.name());
        let (mut reasoned, name) = heuristic();
        reasoned.llm = Some(json!({"llm_fallback": error, "from": llm.name()}));
        Ok((reasoned, name))
    }

    /// Writes the comparison of a finished run and its shadow (or live
    /// twin) when both are terminal. Best effort: the reconciler writes any
    /// this misses ([`shadow::compare_pending`]).
    async fn compare_shadow(&self, run_id: uuid::Uuid) {
        match shadow::compare(&self.pool, run_id).await {
            Ok(Some(c)) => metrics::shadow_compared(&c),
            Ok(None) => {}
            Err(e) => {
                warn!(error = %e, "writing the shadow comparison failed; the reconciler will")
            }
        }
    }

    /// Runs a tool call, or reuses the journaled result of an identical call
    /// in this run. Invalid calls become error observations for the reasoner.
    /// Returns the observation and how the checkpoint audits the call (a
    /// local tool's row is written by the checkpoint, any other's was written
    /// before the call). A transient failure is audited here.
    async fn act(
        &self,
        run: &runs::RunRow,
        iteration: i32,
        journal: &[StepRecord],
        tool: &str,
        input: &Value,
    ) -> Result<(Value, Option<ToolAudit>), Failure> {
        if let Some(previous) = journal
            .iter()
            .find(|s| s.action == tool && &s.action_input == input)
        {
            return Ok((
                json!({"cached_from_iteration": previous.iteration, "result": previous.observation}),
                None,
            ));
        }
        let ctx = ToolContext {
            pool: self.pool.clone(),
            run_id: run.id,
            event_id: run.event_id,
            twin: run.shadow_of,
        };
        let audit = if self.tools.is_local(tool) {
            None
        } else {
            Some(steps::tool_started(&self.pool, run.id, iteration, tool, &self.worker_id).await?)
        };
        let audited = |ok| match audit {
            Some(id) => ToolAudit::Opened { id, ok },
            None => ToolAudit::Local { ok },
        };
        let started = Instant::now();
        match self.tools.call(&ctx, tool, input).await {
            Ok(observation) => Ok((observation, Some(audited(true)))),
            Err(ToolError::Invalid(msg) | ToolError::Failed(msg)) => {
                Ok((json!({"error": msg}), Some(audited(false))))
            }
            Err(ToolError::Transient(msg)) => {
                match audit {
                    Some(id) => steps::tool_finished(&self.pool, id, false).await?,
                    None => {
                        steps::tool_failed_locally(
                            &self.pool,
                            run.id,
                            iteration,
                            tool,
                            &self.worker_id,
                            started.elapsed(),
                        )
                        .await?
                    }
                }
                Err(Failure::transient(msg))
            }
        }
    }
}

/// Where a verified answer sends the run, and the step's observation: the
/// verdict, its confidence and grounding, the judge's summary, the feedback
/// (a self-correction's or the review's reason) and the answer itself.
fn routed(
    answer: &FinalAnswer,
    answer_json: Value,
    verdict: &verify::Verdict,
    judged: Option<&Judged>,
) -> (Next, Value) {
    let (name, next, feedback) = match &verdict.route {
        Route::Complete => (
            "complete",
            finish(RunStatus::Completed, answer, &answer_json, None),
            Value::Null,
        ),
        Route::Review { reason } => (
            "review",
            finish(
                RunStatus::NeedsReview,
                answer,
                &answer_json,
                Some(reason.clone()),
            ),
            Value::String(reason.clone()),
        ),
        Route::SelfCorrect { feedback } => (
            "self_correct",
            Next::Continue,
            Value::String(feedback.clone()),
        ),
    };
    let observation = json!({
        "verdict": name,
        "confidence": verdict.confidence,
        "grounding": verdict.grounding,
        "rejected_citations": verdict.rejected,
        "judge": judged.map(|j| j.summary()),
        "feedback": feedback,
        "answer": answer_json,
    });
    (next, observation)
}

/// The failure's fingerprint as a step observed it, and the normalised
/// text of the lines it was computed from: a `log_excerpt` computes both, a
/// `similar_failures` names the fingerprint it looked up. Nothing from any
/// other step, a failed call, or an observation of another shape.
fn fingerprint_of(tool: &str, observation: &Value) -> (Option<String>, Option<String>) {
    let observed = Observed(observation);
    let (fingerprint, error_lines) = match tool.parse::<ToolName>() {
        Ok(ToolName::LogExcerpt) => match observed.parse::<LogExcerpt>() {
            Some(e) => (e.fingerprint, e.error_lines),
            None => return (None, None),
        },
        Ok(ToolName::SimilarFailures) => match observed.parse::<SimilarFailures>() {
            Some(s) => (s.fingerprint, Vec::new()),
            None => return (None, None),
        },
        _ => return (None, None),
    };
    let fingerprint = Some(fingerprint).filter(|f| !f.is_empty());
    let failure_text = fingerprint
        .as_ref()
        .and_then(|_| similar_text(&error_lines));
    (fingerprint, failure_text)
}

/// The normalised text of the lines a fingerprint was computed from (the
/// error library's text tier), one line each.
fn similar_text(error_lines: &[String]) -> Option<String> {
    let lines: Vec<String> = error_lines
        .iter()
        .map(|l| faultline_shared::logs::normalize(l))
        .filter(|l| !l.is_empty())
        .collect();
    (!lines.is_empty())
        .then(|| text::bound_string(&lines.join("\n"), MAX_FAILURE_TEXT_BYTES).into_owned())
}

/// Most bytes of a run's failure text in the error library: every later
/// `similar_failures` query compares against it, so one huge log line must
/// not slow them all.
const MAX_FAILURE_TEXT_BYTES: usize = 4096;

/// Caps every free-form field of a journal row ([`JsonBounds::JOURNAL`]).
fn bound_record(record: &mut StepRecord) {
    let bounds = &JsonBounds::JOURNAL;
    if let Cow::Owned(thought) = text::bound_string(&record.thought, bounds.max_string_bytes) {
        record.thought = thought;
    }
    text::bound_json(&mut record.observation, bounds);
    text::bound_json(&mut record.action_input, bounds);
    if let Some(llm) = &mut record.llm {
        text::bound_json(llm, bounds);
    }
}

fn finish(
    status: RunStatus,
    answer: &FinalAnswer,
    json: &Value,
    review_reason: Option<String>,
) -> Next {
    Next::Finish(Finish {
        status,
        result: json.clone(),
        category: answer.category,
        confidence: answer.confidence,
        review_reason,
    })
}
