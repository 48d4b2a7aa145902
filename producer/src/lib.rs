//! `faultline_producer`: the parts of the `faultline` binary that are pure
//! functions, as a library so they can be fuzzed and property-tested.
//!
//! # Layout
//! - `payload` — webhook bodies (GitHub, Jenkins) to what ingest stores: no
//!   I/O, no signature check, no database. The HTTP handlers call exactly these.

pub mod payload;
