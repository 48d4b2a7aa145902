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
//! - [`runtime`]: the apalis worker, the lease reconciler and graceful shutdown.

pub mod agent;
pub mod engine;
pub mod runtime;
pub mod tools;

pub use engine::{Engine, StepOutcome};
