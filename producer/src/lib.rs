//! `faultline_producer`: the parts of the `faultline` binary that are pure
//! functions, as a library so they can be fuzzed and property-tested.
//!
//! # Layout
//! - `payload` — webhook bodies (GitHub, Jenkins) to what ingest stores: no
//!   I/O, no signature check, no database. The HTTP handlers call exactly these.
//! - `config` — `faultline serve`'s settings ([`config::ServerConfig`]),
//!   here so the configuration reference's test can list what they read.
//! - `proxies` — `FAULTLINE_TRUSTED_PROXIES` and the client behind them.

pub mod config;
pub mod payload;
pub mod proxies;
