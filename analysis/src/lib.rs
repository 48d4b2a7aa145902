//! Faultline's log analysis: pure functions from the bytes of a CI log to
//! what they say about the failure. No database, queue or network here, so
//! the evaluation's inner loop and the property tests build and run in
//! seconds.
//!
//! # Layout
//! - [`logs`]: line cleaning, the streamed failure excerpt, fingerprints.
//! - [`kb`]: the built-in knowledge base of failure patterns and its
//!   signature classifier.
//! - [`diagnose`]: the diagnosis of a failure: category from what produced
//!   the failing lines, the lines, the specifics, a confidence.
//! - [`tool`]: the agent's tool names and the observations its tools
//!   journal, one serde type per tool.
//! - [`Category`]: the failure categories.

mod category;
pub mod diagnose;
pub mod kb;
pub mod logs;
pub mod text;
pub mod tool;

pub use category::Category;

/// Lowercase hex of `bytes` (digests, tokens, fingerprints).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
