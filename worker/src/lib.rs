//! The Faultline worker: executes one ReAct iteration per queue task as a
//! checkpointed, lease-fenced step.
//!
//! # Layout
//! - [`engine`]: claim → rebuild state from the journal → one iteration →
//!   fenced commit (or durable retry / dead letter).
//! - [`agent`]: reasoners (the built-in heuristic one) and verification of
//!   final answers (grounding, confidence, routing).
//! - [`tools`]: the read-only tool belt with JSON-schema arguments, timeouts,
//!   an execution audit and a per-run result cache.
//! - [`notify`]: delivery of the notification outbox (signed webhook,
//!   GitHub check runs) with retries scheduled in Postgres.
//! - [`sources`]: GitHub and Jenkins clients (shared rate-limit gate) and
//!   the fetch of a webhook event's log before its first iteration.
//! - [`failure`]: the one failure type of a step (retry or give up, with
//!   its cause chain).
//! - [`http`]: the retry policy every outbound HTTP client shares.
//! - [`leases`]: every lease this worker holds renewed in one statement, on
//!   the connection that also holds the worker's session lock.
//! - [`pool_watch`]: the database pool's wait time and use, as metrics.
//! - [`runtime`]: the apalis worker, the lease reconciler and graceful shutdown.
//! - [`health`]: `/healthz`, `/readyz` and `/metrics` on `WORKER_HTTP_ADDR`.

pub mod agent;
pub mod engine;
pub mod failure;
pub mod health;
pub mod http;
pub mod leases;
pub mod notify;
pub mod pool_watch;
pub mod runtime;
pub mod sources;
pub mod tools;

pub use engine::{Engine, StepOutcome};
