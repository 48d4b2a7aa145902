//! CI log analysis.
//!
//! - [`baseline`]: the normalised lines of a job's last green log; the
//!   excerpt ignores failure-looking lines that also print there.
//! - [`excerpt`]: streams a build log of any size (plain or gzip) in bounded
//!   memory and picks the lines that explain why the build failed.
//! - [`clean`]: per-line cleaning for scoring (ANSI escapes, `\r` progress
//!   redraws, timestamp prefixes, GitHub Actions workflow commands).
//! - [`score`]: the general failure-signal rules that score cleaned lines,
//!   plus the repetition sketch.
//! - [`ranker`]: the learned ranking of candidate blocks (weights shipped as data).
//! - [`passed`]: the lines tests that passed printed, as their runners bracket
//!   them (the diagnosis does not read them).
//! - `window` (private): the streaming window state machine behind `excerpt`.
//! - [`mod@fingerprint`]: Sentry-style normalisation of failure text and a stable
//!   fingerprint for grouping similar failures.

pub mod baseline;
pub mod clean;
pub mod excerpt;
pub mod fingerprint;
pub mod passed;
pub mod ranker;
pub mod score;
mod window;

pub use baseline::Baseline;
pub use clean::clean_line;
pub use excerpt::{
    Excerpt, ExcerptLine, ExcerptOptions, excerpt_file, excerpt_reader, open_log, tail_reader,
};
pub use fingerprint::{fingerprint, normalize};
