//! CI log analysis.
//!
//! - [`excerpt`]: streams a build log of any size (plain or gzip) in bounded
//!   memory and picks the lines that explain why the build failed.
//! - [`clean`]: per-line cleaning for scoring (ANSI escapes, `\r` progress
//!   redraws, timestamp prefixes, GitHub Actions workflow commands).
//! - [`score`]: the general failure-signal rules that score cleaned lines,
//!   plus the repetition sketch.
//! - `window` (private): the streaming window state machine behind `excerpt`.
//! - [`mod@fingerprint`]: Sentry-style normalisation of failure text and a stable
//!   fingerprint for grouping similar failures.

pub mod clean;
pub mod excerpt;
pub mod fingerprint;
pub mod score;
mod window;

pub use clean::clean_line;
pub use excerpt::{Excerpt, ExcerptLine, ExcerptOptions, excerpt_file, excerpt_reader};
pub use fingerprint::{fingerprint, normalize};
