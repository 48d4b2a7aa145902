//! Faultline's shared core: domain types, configuration, the step queue and
//! **all** Postgres storage, so every state change of a run is in one place.
//!
//! # Layout
//! - [`config`]: typed settings read once from the environment.
//! - [`types`]: categories, run states, journal records, final answers.
//! - [`specifics`]: what a final answer names from the log (tests,
//!   diagnostic, packages, failed step).
//! - [`queue`]: the step task and how it is pushed inside a transaction.
//! - [`rollout`]: which reasoner and prompt a run gets (A/B ratio, shadow
//!   runs, prompt trials), decided from the event alone.
//! - [`storage`]: one module per table family (events, runs, steps, review,
//!   knowledge base); every SQL statement of the system lives there.
//! - [`logs`], [`kb`]: re-exported from `faultline-analysis` (pure log
//!   analysis: excerpts, cleaning, fingerprints, knowledge base).
//! - [`db`]: connecting and migrating.
//! - [`telemetry`]: logs (text or JSON), OTLP traces, trace context of a run.
//! - [`metrics`]: Prometheus metrics, with queue and review gauges read at scrape time.

pub mod config;
pub mod db;
pub mod metrics;
pub mod pr_comment;
pub mod queue;
pub mod rollout;
pub mod specifics;
pub mod storage;
pub mod telemetry;
pub mod types;

pub use faultline_analysis::{diagnose, hex, kb, logs, text, tool};

pub use config::Settings;
pub use specifics::Specifics;
pub use types::{Category, Evidence, FinalAnswer, Origin, RunStatus, StepRecord, StepTask};
