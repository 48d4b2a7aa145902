//! Faultline's shared core: domain types, configuration, the step queue and
//! **all** Postgres storage, so every state change of a run is in one place.
//!
//! # Layout
//! - [`config`]: typed settings read once from the environment.
//! - [`types`]: categories, run states, journal records, final answers.
//! - [`queue`]: the step task and how it is pushed inside a transaction.
//! - [`storage`]: one module per table family (events, runs, steps, review,
//!   knowledge base); every SQL statement of the system lives there.
//! - [`logs`]: streamed log excerpts, line cleaning and fingerprints.
//! - [`kb`]: the built-in knowledge base and the signature classifier.
//! - [`db`]: connecting and migrating.
//! - [`telemetry`]: logs (text or JSON), OTLP traces, trace context of a run.
//! - [`metrics`]: Prometheus metrics, with queue and review gauges read at scrape time.

pub mod config;
pub mod db;
pub mod kb;
pub mod logs;
pub mod metrics;
pub mod queue;
pub mod storage;
pub mod telemetry;
pub mod types;

pub use config::Settings;
pub use types::{Category, Evidence, FinalAnswer, RunStatus, StepRecord, StepTask};

/// Lowercase hex of `bytes` (digests, tokens, fingerprints).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
